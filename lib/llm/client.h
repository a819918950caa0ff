// A chat client for the LLM proposer: OpenAI-compatible (/v1/chat/completions) or Anthropic (/v1/messages)
// endpoints over libcurl. Configured from the environment or flags; keys are never printed.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kf::llm {

enum class api { openai, anthropic };

struct endpoint {
  api kind = api::openai;
  std::string base_url;  // e.g. http://127.0.0.1:8080 (the path /v1/... is appended)
  std::string model;
  std::string api_key;   // may be empty for local servers
  std::chrono::seconds timeout{120};
  int max_tokens = 8192;
  double temperature = 0.7;
  std::string describe() const;  // "openai-compatible at URL, model M" (no key)
};

// From KFORGE_LLM_URL / KFORGE_LLM_MODEL / KFORGE_LLM_API (openai|anthropic) / OPENAI_API_KEY /
// ANTHROPIC_API_KEY. nullopt (with `why`) when nothing is configured.
std::optional<endpoint> endpoint_from_env(std::string* why);

struct message {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct reply {
  bool ok = false;
  std::string text;   // the assistant's text
  std::string error;  // when !ok: HTTP status and body excerpt, or the transport error
  int http_status = 0;
  double seconds = 0;
  long input_tokens = 0, output_tokens = 0;
};

// One request; never throws for transport or HTTP errors (they are in reply.error), retries 429/5xx
// up to `retries` times with backoff.
reply chat(const endpoint& ep, const std::vector<message>& messages, int retries = 2);

// The request body for an endpoint (exposed for tests).
std::string request_body(const endpoint& ep, const std::vector<message>& messages);
// Extracts the assistant text from a response body; nullopt + `why` when the body is not understood.
std::optional<std::string> parse_response(api kind, const std::string& body, std::string* why,
                                          long* input_tokens = nullptr, long* output_tokens = nullptr);

}  // namespace kf::llm
