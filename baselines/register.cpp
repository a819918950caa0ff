// The baselines' parent side, one entry each (see register.h); the worker side is register_torch.cpp.
#include "register.h"

#include <mutex>

#include "spec/baseline_registry.h"

namespace kf {

baseline compile_baseline();  // compile/compile_baseline.cpp: exports the packages, reports each mode

void register_baselines() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_baseline({.name = "eager", .summary = "LibTorch eager, op by op", .color = "#4c78a8"});
    register_baseline(compile_baseline());
    register_baseline({.name = "vendor",
                       .summary = "the vendor library (cuDNN / cuBLASLt) for the graph's core op, the rest eager",
                       .devices = {"cuda"},
                       .color = "#54a24b"});
  });
}

}  // namespace kf
