#include "llm/chat_service.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/hash.h"

namespace kf::llm {
namespace {

nlohmann::json messages_json(const std::vector<message>& messages) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::string opening(const std::string& text, size_t n = 80) {
  std::string s = text.substr(0, n);
  for (char& c : s)
    if (c == '\n') c = ' ';
  return text.size() > n ? s + "..." : s;
}

}  // namespace

std::string request_key(const std::string& previous_key, const std::vector<message>& masked_new_messages,
                        double temperature) {
  const nlohmann::json j = {{"previous", previous_key},
                            {"messages", messages_json(masked_new_messages)},
                            {"temperature", fmt::format("{:.3f}", temperature)}};
  return sha256_hex(j.dump());
}

chat_service::chat_service(chat_options options) : m_options(std::move(options)) {
  if (!m_options.replay.empty()) {
    std::ifstream in(m_options.replay);
    if (!in) throw user_error(fmt::format("--replay-llm {}: cannot read the file", m_options.replay.string()));
    std::string line;
    int n = 0, answers = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("answer") ||
          !j["answer"].is_string())
        throw user_error(fmt::format("--replay-llm {}:{}: not a record line (a JSON object with \"key\" and \"answer\", "
                                     "as --record-llm writes)", m_options.replay.string(), n));
      m_answers[j["key"].get<std::string>()].push_back(j["answer"].get<std::string>());
      if (m_model.empty()) m_model = j.value("model", "");
      m_lines.push_back(j);
      ++answers;
    }
    if (answers == 0)
      throw user_error(fmt::format("--replay-llm {}: the file holds no recorded answer", m_options.replay.string()));
    if (m_model.empty()) m_model = "replay";
  } else if (m_options.live) {
    m_model = m_options.live->model;
  } else {
    throw user_error("the LLM proposer needs an endpoint (KFORGE_LLM_URL, KFORGE_LLM_MODEL) or --replay-llm FILE");
  }
  if (!m_options.record.empty()) {
    std::error_code ec;
    if (m_options.record.has_parent_path()) std::filesystem::create_directories(m_options.record.parent_path(), ec);
    m_record.open(m_options.record, m_options.record_append ? std::ios::app : std::ios::trunc);
    if (!m_record)
      throw user_error(fmt::format("--record-llm {}: cannot write the file", m_options.record.string()));
  }
}

std::string chat_service::describe() const {
  if (!m_options.replay.empty()) return fmt::format("answers recorded in {} (model {})", m_options.replay.string(), m_model);
  return m_options.live->describe();
}

reply chat_service::ask(const chat_request& r) {
  ++m_requests;
  reply out;
  if (!m_options.replay.empty()) {
    auto it = m_answers.find(r.key);
    if (it == m_answers.end() || it->second.empty())
      throw user_error(fmt::format(
          "--replay-llm {}: no recorded answer for request {} of this search (key {}; {} user message begins \"{}\"): "
          "the search asked what the recorded one did not (another --seed, spec, --budget or --batch, a root kernel that "
          "another kforge build emits differently, another prompt version)",
          m_options.replay.string(), m_requests, r.key.substr(0, 16), r.messages.size() > 2 ? "its repair" : "its",
          r.messages.empty() ? "" : opening(r.messages.back().content)));
    out.ok = true;
    out.text = it->second.front();
    it->second.pop_front();
  } else {
    endpoint ep = *m_options.live;
    ep.temperature = r.temperature;
    out = chat(ep, r.messages);
  }
  if (out.ok && m_record.is_open()) {
    nlohmann::json line = {{"seq", ++m_recorded},
                           {"key", r.key},
                           {"model", m_model},
                           {"temperature", r.temperature},
                           {"prompt_version", r.prompt_version},
                           {"about", r.about},
                           {"messages", messages_json(r.messages)},
                           {"answer", out.text},
                           {"seconds", out.seconds},
                           {"input_tokens", out.input_tokens},
                           {"output_tokens", out.output_tokens}};
    m_record << line.dump() << '\n';
    m_record.flush();
  }
  return out;
}

}  // namespace kf::llm
