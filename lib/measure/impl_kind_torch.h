// The worker's implementation kinds (docs/worker-protocol.md `impl`), its one table: keyed by kind ("kernel",
// "eager", "compile", "vendor"), each entry says how `measure` times the kind (launches bound to a case's inputs)
// and, when it can be verified, how `verify` runs it (exec's impl, writing the harness's outputs). "Not available
// for this op" is a result, carried in the prepared entry.
// measure owns "kernel"; the baselines register theirs (register_baseline_kinds() in baselines/register.h, called
// by the worker's main). Include only from *_torch.cpp files.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "exec/device.h"
#include "exec/impl_torch.h"
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
// Verify's view of a kind. Throws user_error for a malformed impl object, impl_load_error for a candidate that
// does not load.
using impl_factory =
    std::function<std::unique_ptr<impl>(const nlohmann::json& impl, const workload_spec& spec, const device_id& device)>;

struct impl_kind {
  std::string name;         // the protocol impl object's "kind"
  std::string summary{};    // what runs, in one line
  impl_preparer prepare{};  // measure: how it is timed
  impl_factory make{};      // verify: how it is verified; empty: it is only timed
  // prepare() returns one entry per mode (details["mode"]; compile's export modes): `measure` reports only the
  // fastest, with every mode's median in details["modes_median_us"].
  bool modes = false;
};

// "kernel" first, then the registered kinds in the order they were registered.
const std::vector<impl_kind>& impl_kinds();
const impl_kind* find_impl_kind(const std::string& kind);
// Adds a kind (a baseline's). Call before the worker serves requests; a kind registered twice asserts.
void register_impl_kind(impl_kind kind);
// The kinds' names, for messages ("kernel, eager, compile, vendor").
std::string impl_kind_names();

// Verify's implementation for a protocol impl object. Throws user_error for an unknown kind or one that cannot be
// verified, impl_load_error for a candidate that does not load.
std::unique_ptr<impl> make_impl(const nlohmann::json& desc, const workload_spec& spec, const device_id& device);

// The "kernel" entry's timing side (kernel_impl_torch.cpp); its verify side is exec's make_kernel_impl.
std::vector<prepared_impl> prepare_kernel(const nlohmann::json& impl, const impl_context& ctx);

// Runs `body` with `stream` (a cudaStream_t, null on cpu) as LibTorch's current stream, turning a LibTorch
// error into measure::launch_failure (a result about the implementation).
int run_on_stream(void* stream, const c10::Device& device, const std::function<void()>& body);

}  // namespace kf
