// An implementation the worker can verify on a case, writing the harness's outputs: a compiled candidate
// (kernel, here) or a baseline's (eager, registered by baselines/). The kind is picked from the request's `impl`
// object through the worker's one implementation-kind table (measure/impl_kind_torch.h), which also says how
// each kind is timed. Include only from *_torch.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "exec/device.h"
#include "exec/kf_abi.h"
#include "spec/spec.h"

namespace kf {

class impl {
 public:
  virtual ~impl() = default;
  virtual std::string name() const = 0;
  // Called before the launches of a case (a compile baseline loads that case's package here).
  virtual void prepare(const case_spec& c) { (void)c; }
  // Enqueues the work on `stream` (a cudaStream_t; null on cpu) writing into the harness's `out` tensors.
  // Returns 0 on success; non-zero when the implementation declines the input (the candidate ABI's contract).
  virtual int launch(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out, void* stream) = 0;
  // Code kforge did not write (a candidate): verify watches what it maps while it runs (`sandbox.library`).
  virtual bool untrusted() const { return false; }
};

// A candidate that cannot be loaded (dlopen failed, no kf_launch): a result for the `load` rule.
class impl_load_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The "kernel" kind's verify side: {"kind": "kernel", "name": ..., "so": "/abs/path.so"}. Throws user_error
// without "so", impl_load_error for a candidate that does not load.
std::unique_ptr<impl> make_kernel_impl(const nlohmann::json& desc, const workload_spec& spec, const device_id& device);

// The torch device for a kforge device.
c10::Device torch_device(const device_id& d);

// The ABI's view of a tensor: data pointer, dtype code, shape and strides in elements (kf_abi.h).
void to_kf_tensor(const at::Tensor& t, ::kf_tensor* out);

// A compiled candidate's kf_launch, loaded once for verify and measure alike (RTLD_LOCAL) and never unloaded:
// work in flight or the candidate's own statics may still refer to its code. Throws impl_load_error when the
// library does not load or does not export kf_launch.
kf_launch_fn load_candidate(const std::string& so);
// Whether a candidate's kf_launch has run in this process (from then on, what the process shares with it may be
// corrupted).
bool candidate_code_ran();

}  // namespace kf
