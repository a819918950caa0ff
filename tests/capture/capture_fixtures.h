// The capture tests' traces (tests/data/capture/*.json, written by tests/data/capture/generate.py from the tiny
// models defined there) and small helpers over them.
#pragma once
#include <string>
#include <vector>

#include "capture/lift.h"
#include "capture/trace.h"

namespace kf::capture::test {

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {"norm_two_sizes", "llama_block", "resnet_tail", "router_softcap",
                                                         "pool_branches"};
  return names;
}

inline trace fixture(const std::string& name) {
  return read_trace(std::string(KFORGE_SOURCE_DIR) + "/tests/data/capture/" + name + ".json");
}

// The lifted ops that are `op`.
inline std::vector<lifted_op> lifted_named(const std::vector<lifted_op>& all, const std::string& op) {
  std::vector<lifted_op> out;
  for (const auto& l : all)
    if (l.op == op) out.push_back(l);
  return out;
}

}  // namespace kf::capture::test
