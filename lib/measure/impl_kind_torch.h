// The worker's implementation kinds (docs/worker-protocol.md `impl`): a registry keyed by kind ("kernel",
// "eager", "compile", "vendor") whose entries turn a protocol impl object and a case's inputs into launches
// the timing loop can call. "Not available for this op" is a result, carried in the prepared entry.
// measure owns "kernel"; the baselines register theirs (baselines/register.h, called by the worker's main).
// Include only from *_torch.cpp files.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "measure/sampler.h"
#include "spec/spec.h"

namespace kf {

struct impl_context {
  const workload_spec& spec;
  const case_spec& c;
  const std::vector<at::Tensor>& inputs;  // on the measuring device, in the spec's order
  c10::Device device;
};

struct prepared_impl {
  std::string name;            // as reported: "eager", "compile", "vendor", or the kernel's name
  measure::launch_fn launch;   // empty when not available; throws measure::launch_failure for a failed run
  std::string not_available;   // why there is no launch ("not available for this op: ...")
  std::string description;     // what runs, in words ("cudnnSoftmaxForward, then eager cast")
  nlohmann::json details = nlohmann::json::object();  // extra facts for the results (compile: mode)
  bool available() const { return static_cast<bool>(launch); }
};

// May return several entries (compile: one per exported mode, all named "compile"). Throws user_error for a
// malformed impl object (the parent's bug).
using impl_preparer = std::function<std::vector<prepared_impl>(const nlohmann::json& impl, const impl_context& ctx)>;

struct timed_impl_kind {
  std::string kind;
  std::string summary;
  impl_preparer prepare;
};

// "kernel" first, then the registered kinds in the order they were registered.
const std::vector<timed_impl_kind>& timed_impl_kinds();
const timed_impl_kind* find_timed_impl_kind(const std::string& kind);
// Adds a kind (a baseline's). Call before the worker serves requests; a kind registered twice asserts.
void register_timed_impl_kind(timed_impl_kind kind);

// The "kernel" entry (kernel_impl_torch.cpp).
std::vector<prepared_impl> prepare_kernel(const nlohmann::json& impl, const impl_context& ctx);

// Runs `body` with `stream` (a cudaStream_t, null on cpu) as LibTorch's current stream, turning a LibTorch
// error into measure::launch_failure (a result about the implementation).
int run_on_stream(void* stream, const c10::Device& device, const std::function<void()>& body);

}  // namespace kf
