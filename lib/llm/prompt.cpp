#include "llm/prompt.h"

#include <fmt/format.h>

namespace kf::llm {

std::vector<message> build_messages(const rewrite_request& r) {
  std::string system = fmt::format(
      "You are an expert GPU performance engineer. You rewrite one kernel translation unit to make it faster "
      "on {} while computing exactly the same function.\n"
      "Rules (the verifier enforces them; a violation wastes the attempt):\n"
      "- Export `extern \"C\" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int "
      "n_outputs, void* stream)` as declared in kf_abi.h; include only \"kf_abi.h\", CUDA/CCCL headers and the "
      "standard library.\n"
      "- Handle every shape the spec allows (read shapes and strides from kf_tensor); return non-zero for a "
      "layout you do not handle. Never specialize on one shape only.\n"
      "- Enqueue all work on `stream`; no stream or thread creation, no device-wide synchronization, no host "
      "I/O, no memory allocation, no library calls, no caching of results between calls.\n"
      "- Write every output element; never modify inputs.\n"
      "Answer with a short plan (two or three sentences) and then the complete new source in one fenced code "
      "block.",
      r.device);
  std::string user = fmt::format("## Workload spec\n```yaml\n{}\n```\n\n## Eager reference (PyTorch)\n{}\n\n"
                                 "## kf_abi.h\n```c\n{}\n```\n\n## Current kernel\n```cuda\n{}\n```\n\n"
                                 "## Its measurements\n{}\n",
                                 r.spec_yaml, r.reference, r.abi_header, r.parent_source, r.parent_timing);
  if (!r.resource_report.empty()) user += fmt::format("\n## Compiler resource report\n{}\n", r.resource_report);
  if (!r.failed_siblings.empty()) {
    user += "\n## Attempts that failed (do not repeat them)\n";
    for (auto& f : r.failed_siblings) {
      user += fmt::format("- {}\n", f.summary);
      if (!f.source_excerpt.empty()) user += fmt::format("```\n{}\n```\n", f.source_excerpt);
    }
  }
  if (!r.hint.empty()) user += fmt::format("\n## Direction for this attempt\n{}\n", r.hint);
  user += "\nWrite the faster kernel.";
  return {{"system", system}, {"user", user}};
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
