// Where the LLM proposer's requests go: an endpoint, which may write every request and its answer to a record file
// (`kforge search --record-llm FILE`), or a record file that answers instead of an endpoint (`--replay-llm FILE`),
// so that a search is reproduced without one (docs/design.md "Search": replay).
//
// The record file holds JSON lines, one per answered request, in the order they were asked:
//   {"seq": 1, "key": "<sha256>", "model": "...", "temperature": 0.7, "prompt_version": "system:1 rewrite:1",
//    "about": {...}, "messages": [{"role", "content"}, ...], "answer": "...", "seconds": 1.2, "input_tokens": 0,
//    "output_tokens": 0}
// A replay answers a request by its key (request_key: its content with measured numbers masked, and the key of the
// request it continues), taking the recorded answers to one key in their order.
#pragma once
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/client.h"

namespace kf::llm {

struct chat_request {
  std::vector<message> messages;  // the whole conversation so far, the new user message last
  double temperature = 0.7;
  std::string key;                // request_key(...)
  std::string prompt_version;     // recorded with it
  nlohmann::json about = nlohmann::json::object();  // what it is for, recorded with it (the proposer's words:
                                                    // {"kind": "rewrite", "node": 7, "expansion": 3})
};

// The identity of a request for a replay: sha256 over the key of the request it continues (empty for a first
// one), the messages added since that request (its answer and the new user message; for a first request all of
// them), with measured numbers masked (built_request::masked), and the temperature.
std::string request_key(const std::string& previous_key, const std::vector<message>& masked_new_messages,
                        double temperature);

struct chat_options {
  std::optional<endpoint> live;       // the endpoint to ask; none when replaying
  std::filesystem::path record;       // non-empty: write each answered request here
  bool record_append = false;         // keep what the file holds (a resumed search) instead of starting it anew
  std::filesystem::path replay;       // non-empty: answer from this record file; no endpoint is asked
};

class chat_service {
 public:
  // Reads a replay file (user_error naming the line when it cannot be read or parsed, or holds no answer) and
  // opens the record file (user_error when it cannot be written). Throws user_error when neither an endpoint
  // nor a replay file is given.
  explicit chat_service(chat_options options);

  // The model's answer. Live: the endpoint's reply (ok false with the error when it failed; only answered
  // requests are recorded). Replay: the next recorded answer to r.key; user_error when there is none, naming the
  // request (its number in this run, its key and how its last message begins).
  reply ask(const chat_request& r);

  // The model that answers: the endpoint's, or the one the record file names.
  const std::string& model() const { return m_model; }
  // Replay: the record file's lines, in its order (empty when live).
  const std::vector<nlohmann::json>& recorded() const { return m_lines; }
  std::string describe() const;
  int requests() const { return m_requests; }

 private:
  chat_options m_options;
  std::string m_model;
  std::map<std::string, std::deque<std::string>> m_answers;  // replay: key -> answers in recorded order
  std::vector<nlohmann::json> m_lines;
  std::ofstream m_record;
  int m_requests = 0, m_recorded = 0;
};

}  // namespace kf::llm
