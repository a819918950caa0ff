// kforge_ops's C++ API, for LibTorch programs that link libkforge_ops.so (Python uses the kforge package, which
// calls the same code through torch.ops.kforge._load). Loading installs each workload's stored winner as the
// operator kforge::<workload> (dashes become underscores), called like any other:
//
//   kforge::load("workloads", "cpu");
//   auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kforge::gpt2_gelu_tanh", "")
//                 .typed<at::Tensor(const at::Tensor&)>();
//   at::Tensor y = op.call(x);
//
// docs/design.md "The stored kernels as PyTorch operators" has what the operators do on each device.
#pragma once
#include <string>
#include <vector>

#define KFORGE_OPS_API __attribute__((visibility("default")))

namespace kforge {

// Compiles (into kforge's compile cache) and installs the stored winners of the workloads in `workloads_dir` (all
// of them, or `names`) for `device`: "auto" (the current GPU where there is one, else cpu), "cpu", "cuda", "cuda:N",
// or several joined by commas. An empty `workloads_dir` means $KFORGE_WORKLOADS. `cache_dir` empty:
// $KFORGE_CACHE_DIR, else <workloads_dir>/../.kforge/cache where writable, else ~/.cache/kforge. Returns the
// report as JSON text: what each operator got (a kernel per device kind, or why not) and the specs skipped. A
// workload without a kernel, or whose kernel does not compile, still becomes an operator that runs its eager graph
// (warning once per shape). Throws c10::Error for a folder that is not one, an unknown name or device.
KFORGE_OPS_API std::string load(const std::string& workloads_dir, const std::string& device = "auto",
                                const std::string& cache_dir = "", const std::vector<std::string>& names = {});

// load() of $KFORGE_WORKLOADS (with $KFORGE_DEVICE, default auto) when it is set; "" when it is not. The library
// does not do this when it is loaded: its static initializers would run the loader before those of the kforge
// code linked into it.
KFORGE_OPS_API std::string load_from_env();

}  // namespace kforge
