// What the LLM proposer tells the model (docs/design.md "Search": the spec, the eager reference, the kernel ABI,
// the node's kernel and time, its children so far and the ones that failed; in a repair, what the compiler or the
// verifier said) and how it reads the answer. The texts are files (prompts/*.md, llm/prompt_files.h); this fills
// them in.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "llm/client.h"

namespace kf::llm {

struct failed_attempt {
  std::string summary;  // e.g. "verify_failed: match on case S=64 seed 0: max error ..."
  std::string source_excerpt;
};

// A rewrite already tried from the same kernel: what it was and how it did. `result` holds measured numbers,
// which differ from run to run: a replay key masks it (built_request::masked).
struct tried_rewrite {
  std::string what;
  std::string result;
};

struct rewrite_request {
  std::string device;            // "an NVIDIA GPU (...)" or "the CPU (...)"
  bool cuda = false;             // the device's own rules (headers, streams)
  std::string spec_yaml;         // the workload spec as the user wrote it
  std::string reference;         // the eager semantics in PyTorch terms, one op a line
  std::string abi_header;        // kf_abi.h
  std::string parent_source;
  std::string parent_timing;     // measured (masked in the replay key)
  std::string resource_report;   // registers, shared memory, spills from the compiler
  std::vector<tried_rewrite> tried;
  std::vector<failed_attempt> failed_siblings;
  std::string hint;              // optional direction for this expansion ("try a split-row cluster")
};

struct built_request {
  std::vector<message> messages;  // what is sent
  std::vector<message> masked;    // the same with the measured numbers replaced: what a replay key hashes
  std::string prompt_version;     // "system:1 rewrite:1"
};

// The system message and the rewrite request (prompts/system.md, prompts/rewrite.md).
built_request build_messages(const rewrite_request& r);

struct repair_request {
  std::string what;     // "did not compile", "failed verification", ...
  std::string message;  // the compiler's output, or the verifier's rule, case and first wrong element
  int attempt = 1, of = 3;
};
// The follow-up user message after a failed kernel (prompts/repair.md); nothing in it is masked.
message build_repair(const repair_request& r);

// The candidate source in the answer: the longest fenced code block (```cuda / ```cpp / ```c++ / ```),
// or nullopt with `why` when there is none or it lacks kf_launch.
std::optional<std::string> extract_source(const std::string& answer, std::string* why);

}  // namespace kf::llm
