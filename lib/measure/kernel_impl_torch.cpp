// The "kernel" implementation kind for measure: a compiled candidate's kf_launch, called with the case's
// inputs and outputs allocated by the harness (contiguous, in the spec's output order).
#include <dlfcn.h>

#include <memory>

#include <fmt/format.h>

#include "exec/kf_abi.h"
#include "impl_kind_torch.h"
#include "spec/ops.h"
#include "spec/ops_torch.h"

namespace kf {
namespace {

kf_tensor to_kf_tensor(const at::Tensor& t) {
  KF_ASSERT(t.dim() <= KF_MAX_DIMS, "tensor of rank {} exceeds the ABI's {}", t.dim(), KF_MAX_DIMS);
  kf_tensor k{};
  k.data = t.data_ptr();
  k.dtype = static_cast<int32_t>(from_scalar_type(t.scalar_type()));
  k.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    k.shape[d] = t.size(d);
    k.stride[d] = t.stride(d);
  }
  return k;
}

}  // namespace

std::vector<prepared_impl> prepare_kernel(const nlohmann::json& impl, const impl_context& ctx) {
  prepared_impl p;
  p.name = impl.value("name", "kernel");
  std::string so = impl.value("so", "");
  if (so.empty()) throw user_error(fmt::format("impl `{}`: a kernel needs \"so\" (the shared object's path)", p.name));
  p.description = "candidate " + so;
  void* raw = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!raw) {
    const char* e = dlerror();
    throw measure::launch_failure(-1, fmt::format("cannot load {}: {}", so, e ? e : "unknown error"));
  }
  std::shared_ptr<void> lib(raw, [](void* h) { dlclose(h); });
  auto fn = reinterpret_cast<kf_launch_fn>(dlsym(raw, "kf_launch"));
  if (!fn) throw measure::launch_failure(-1, fmt::format("{} does not export kf_launch", so));

  auto ins = std::make_shared<std::vector<kf_tensor>>();
  for (const auto& t : ctx.inputs) ins->push_back(to_kf_tensor(t));
  auto outs = std::make_shared<std::vector<kf_tensor>>();
  std::vector<at::Tensor> out_tensors;
  for (const tensor_desc& d : infer_outputs(ctx.spec, ctx.c)) {
    out_tensors.push_back(at::empty(d.shape, at::TensorOptions().dtype(to_scalar_type(d.type)).device(ctx.device)));
    outs->push_back(to_kf_tensor(out_tensors.back()));
  }
  std::vector<at::Tensor> keep = ctx.inputs;
  p.launch = [lib, fn, ins, outs, keep, out_tensors](void* stream) {
    return fn(ins->data(), static_cast<int>(ins->size()), outs->data(), static_cast<int>(outs->size()), stream);
  };
  return {p};
}

}  // namespace kf
