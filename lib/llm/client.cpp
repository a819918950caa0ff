#include "llm/client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kf::llm {
namespace {

std::string env_or(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string endpoint::describe() const {
  return fmt::format("{} at {}, model {}", kind == api::openai ? "openai-compatible" : "anthropic", base_url,
                     model.empty() ? "(default)" : model);
}

std::optional<endpoint> endpoint_from_env(std::string* why) {
  endpoint ep;
  std::string which = env_or("KFORGE_LLM_API");
  std::string url = env_or("KFORGE_LLM_URL");
  if (which.empty()) {
    if (!env_or("ANTHROPIC_API_KEY").empty() && env_or("OPENAI_API_KEY").empty()) which = "anthropic";
    else which = "openai";
  }
  if (which != "openai" && which != "anthropic") {
    if (why) *why = fmt::format("KFORGE_LLM_API is '{}'; expected openai or anthropic", which);
    return std::nullopt;
  }
  ep.kind = which == "anthropic" ? api::anthropic : api::openai;
  ep.api_key = env_or(ep.kind == api::anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  if (url.empty()) {
    if (why) *why = "no LLM endpoint: set KFORGE_LLM_URL (and KFORGE_LLM_MODEL; the key in OPENAI_API_KEY or ANTHROPIC_API_KEY)";
    return std::nullopt;
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  ep.base_url = url;
  ep.model = env_or("KFORGE_LLM_MODEL");
  if (ep.model.empty()) {
    if (why) *why = "KFORGE_LLM_MODEL is not set (the model name the endpoint serves)";
    return std::nullopt;
  }
  if (auto t = env_or("KFORGE_LLM_TIMEOUT"); !t.empty()) ep.timeout = std::chrono::seconds(std::atoi(t.c_str()));
  return ep;
}

std::string request_body(const endpoint& ep, const std::vector<message>& messages) {
  using nlohmann::json;
  json body = {{"model", ep.model}, {"max_tokens", ep.max_tokens}, {"temperature", ep.temperature}};
  json msgs = json::array();
  std::string system;
  for (auto& m : messages) {
    if (ep.kind == api::anthropic && m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
      continue;
    }
    msgs.push_back({{"role", m.role}, {"content", m.content}});
  }
  body["messages"] = msgs;
  if (!system.empty()) body["system"] = system;
  return body.dump();
}

std::optional<std::string> parse_response(api kind, const std::string& body, std::string* why, long* in_tok,
                                          long* out_tok) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (why) *why = "response is not a JSON object";
    return std::nullopt;
  }
  std::string text;
  if (kind == api::openai) {
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
      if (why) *why = "response has no choices";
      return std::nullopt;
    }
    auto& msg = j["choices"][0]["message"];
    if (!msg.is_object() || !msg.contains("content") || !msg["content"].is_string()) {
      if (why) *why = "response choice has no text content";
      return std::nullopt;
    }
    text = msg["content"].get<std::string>();
    if (j.contains("usage") && j["usage"].is_object()) {
      if (in_tok) *in_tok = j["usage"].value("prompt_tokens", 0L);
      if (out_tok) *out_tok = j["usage"].value("completion_tokens", 0L);
    }
  } else {
    if (!j.contains("content") || !j["content"].is_array()) {
      if (why) *why = "response has no content blocks";
      return std::nullopt;
    }
    for (auto& block : j["content"])
      if (block.value("type", "") == "text") text += block.value("text", "");
    if (j.contains("usage") && j["usage"].is_object()) {
      if (in_tok) *in_tok = j["usage"].value("input_tokens", 0L);
      if (out_tok) *out_tok = j["usage"].value("output_tokens", 0L);
    }
  }
  if (text.empty()) {
    if (why) *why = "response text is empty";
    return std::nullopt;
  }
  return text;
}

reply chat(const endpoint& ep, const std::vector<message>& messages, int retries) {
  global_init();
  reply r;
  std::string url = ep.base_url + (ep.kind == api::anthropic ? "/v1/messages" : "/v1/chat/completions");
  std::string body = request_body(ep, messages);
  auto t0 = std::chrono::steady_clock::now();
  for (int attempt = 0; attempt <= retries; ++attempt) {
    CURL* curl = curl_easy_init();
    if (!curl) {
      r.error = "curl_easy_init failed";
      return r;
    }
    std::string response;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (!ep.api_key.empty()) {
      std::string auth = ep.kind == api::anthropic ? "x-api-key: " + ep.api_key : "Authorization: Bearer " + ep.api_key;
      headers = curl_slist_append(headers, auth.c_str());
    }
    if (ep.kind == api::anthropic) headers = curl_slist_append(headers, "anthropic-version: 2023-06-01");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(ep.timeout.count()));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    r.http_status = static_cast<int>(status);
    bool retryable = false;
    if (rc != CURLE_OK) {
      r.error = fmt::format("request to {} failed: {}", ep.base_url, curl_easy_strerror(rc));
      retryable = rc != CURLE_OPERATION_TIMEDOUT;
    } else if (status != 200) {
      r.error = fmt::format("HTTP {} from {}: {}", status, ep.base_url, response.substr(0, 300));
      retryable = status == 429 || status >= 500;  // a client error will not go away by retrying
    } else {
      std::string why;
      if (auto text = parse_response(ep.kind, response, &why, &r.input_tokens, &r.output_tokens)) {
        r.ok = true;
        r.text = std::move(*text);
        r.error.clear();
      } else {
        r.error = fmt::format("unexpected response from {}: {}", ep.base_url, why);
      }
    }
    if (r.ok || !retryable) break;
    if (attempt < retries) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kf::llm
