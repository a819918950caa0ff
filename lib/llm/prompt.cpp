#include "llm/prompt.h"

#include <fmt/format.h>

#include "llm/prompt_files.h"

namespace kf::llm {
namespace {

constexpr const char* k_masked = "(measured: left out of the replay key)";

std::string without_final_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::map<std::string, std::string> rewrite_vars(const rewrite_request& r, bool masked) {
  std::string tried, failed;
  for (auto& t : r.tried) tried += fmt::format("- {}: {}\n", t.what, masked ? k_masked : t.result);
  for (auto& f : r.failed_siblings) {
    failed += fmt::format("- {}\n", f.summary);
    if (!f.source_excerpt.empty()) failed += fmt::format("```\n{}\n```\n", without_final_newline(f.source_excerpt));
  }
  return {
      {"spec_yaml", without_final_newline(r.spec_yaml)},
      {"reference", without_final_newline(r.reference)},
      {"abi_header", without_final_newline(r.abi_header)},
      {"fence", r.cuda ? "cuda" : "cpp"},
      {"parent_source", without_final_newline(r.parent_source)},
      {"parent_timing", masked ? k_masked : r.parent_timing},
      {"resource_report", without_final_newline(r.resource_report)},
      {"tried", without_final_newline(tried)},
      {"failed", without_final_newline(failed)},
      {"hint", r.hint},
  };
}

}  // namespace

built_request build_messages(const rewrite_request& r) {
  const std::map<std::string, std::string> system_vars = {{"device", r.device}, {"cuda", r.cuda ? "yes" : ""}};
  const std::string system = render(prompt("system").text, system_vars);
  built_request b;
  b.messages = {{"system", system}, {"user", render(prompt("rewrite").text, rewrite_vars(r, false))}};
  b.masked = {{"system", system}, {"user", render(prompt("rewrite").text, rewrite_vars(r, true))}};
  b.prompt_version = prompt_versions({"system", "rewrite"});
  return b;
}

message build_repair(const repair_request& r) {
  return {"user", render(prompt("repair").text, {{"what", r.what},
                                                 {"message", without_final_newline(r.message)},
                                                 {"attempt", std::to_string(r.attempt)},
                                                 {"of", std::to_string(r.of)}})};
}

std::optional<std::string> extract_source(const std::string& answer, std::string* why) {
  std::string best;
  size_t pos = 0;
  while ((pos = answer.find("```", pos)) != std::string::npos) {
    size_t line_end = answer.find('\n', pos);
    if (line_end == std::string::npos) break;
    size_t close = answer.find("\n```", line_end);
    if (close == std::string::npos) close = answer.size();  // an unterminated block: take the rest
    std::string body = answer.substr(line_end + 1, close - line_end - 1);
    if (body.size() > best.size()) best = body;
    pos = close + 4;
    if (close >= answer.size()) break;
  }
  if (best.empty()) {
    if (why) *why = "the answer has no fenced code block";
    return std::nullopt;
  }
  if (best.find("kf_launch") == std::string::npos) {
    if (why) *why = "the code in the answer does not define kf_launch";
    return std::nullopt;
  }
  if (best.back() != '\n') best += '\n';
  return best;
}

}  // namespace kf::llm
