// What the LLM proposer tells the model (docs/design.md "Search": the spec, the eager reference, the parent's
// timing against the floor, the compiler's resource report, the failed siblings) and how it reads the answer.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "llm/client.h"

namespace kf::llm {

struct failed_attempt {
  std::string summary;  // e.g. "verify failed: reference[S=1000] max rel err 0.31"
  std::string source_excerpt;
};

struct rewrite_request {
  std::string device;            // "cuda (NVIDIA H200, sm_90a, 132 SMs)" or "cpu (x86-64, OpenMP)"
  std::string spec_yaml;         // the workload spec as the user wrote it
  std::string reference;         // the eager semantics in PyTorch terms, one op a line
  std::string abi_header;        // kf_abi.h
  std::string parent_source;
  std::string parent_timing;     // "412.0 us median on B=1,H=8,S=4096; floor 126.3 us (33% of floor); eager 1366 us"
  std::string resource_report;   // registers, shared memory, spills from the compiler
  std::vector<failed_attempt> failed_siblings;
  std::string hint;              // optional direction for this expansion ("try a split-row cluster")
};

std::vector<message> build_messages(const rewrite_request& r);

// The candidate source in the answer: the longest fenced code block (```cuda / ```cpp / ```c++ / ```),
// or nullopt with `why` when there is none or it lacks kf_launch.
std::optional<std::string> extract_source(const std::string& answer, std::string* why);

}  // namespace kf::llm
