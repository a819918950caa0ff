// The "kernel" implementation kind for measure: a compiled candidate's kf_launch (loaded by exec's
// load_candidate, as verify loads it), called with the case's inputs and outputs allocated by the harness
// (contiguous, in the spec's output order). The ABI's tensors are built once, not per launch.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "exec/impl_torch.h"
#include "exec/kf_abi.h"
#include "measure/impl_kind_torch.h"
#include "measure/device_kernels.h"
#include "spec/ops.h"
#include "spec/ops_torch.h"

namespace kf {

std::vector<prepared_impl> prepare_kernel(const nlohmann::json& impl, const impl_context& ctx) {
  prepared_impl p;
  p.name = impl.value("name", "kernel");
  std::string so = impl.value("so", "");
  if (so.empty()) throw user_error(fmt::format("impl `{}`: a kernel needs \"so\" (the shared object's path)", p.name));
  p.description = "candidate " + so;
  kf_launch_fn fn = nullptr;
  try {
    fn = load_candidate(so);
  } catch (const impl_load_error& e) {
    throw measure::launch_failure(-1, e.what());
  }
  auto ins = std::make_shared<std::vector<kf_tensor>>(ctx.inputs.size());
  for (size_t i = 0; i < ctx.inputs.size(); ++i) to_kf_tensor(ctx.inputs[i], &(*ins)[i]);
  auto outs = std::make_shared<std::vector<kf_tensor>>();
  std::vector<at::Tensor> out_tensors;
  for (const tensor_desc& d : infer_outputs(ctx.spec, ctx.c)) {
    out_tensors.push_back(at::empty(d.shape, at::TensorOptions().dtype(to_scalar_type(d.type)).device(ctx.device)));
    outs->emplace_back();
    to_kf_tensor(out_tensors.back(), &outs->back());
  }
  std::vector<at::Tensor> keep = ctx.inputs;
  // A known delay after each launch (kforge calibrate's injected slowdown): a spinning kernel on the same stream
  // on a GPU, a busy wait on the cpu device.
  double delay_us = impl.value("delay_us", 0.0);
  if (delay_us < 0) throw user_error(fmt::format("impl `{}`: delay_us must be >= 0, got {}", p.name, delay_us));
  if (delay_us > 0) p.details["delay_us"] = delay_us;
  bool cuda = ctx.device.is_cuda();
  p.launch = [fn, ins, outs, keep, out_tensors, delay_us, cuda](void* stream) {
    int rc = fn(ins->data(), static_cast<int>(ins->size()), outs->data(), static_cast<int>(outs->size()), stream);
    if (rc != 0 || delay_us <= 0) return rc;
    if (cuda) return cuda::launch_spin(static_cast<unsigned long long>(delay_us * 1e3), stream);
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(delay_us * 1e3));
    while (std::chrono::steady_clock::now() < until) {
    }
    return 0;
  };
  return {p};
}

}  // namespace kf
