// A call of a kforge operator (op_call_torch.h): the kernel where it covers the call, the eager graph otherwise.
#include "op_call_torch.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#if KFORGE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "call_binding.h"
#include "exec/impl_torch.h"
#include "spec/ops_torch.h"
#include "spec/reference_torch.h"
#include "verify/check.h"

namespace kf::ops {
namespace {

// The verifier hands a kernel fresh allocations (at least 64-byte aligned): a kernel may load 16 bytes at a time
// from any address it was verified on, so an input that starts elsewhere (a view at an odd offset) runs eager.
constexpr uintptr_t k_input_alignment = 16;

// The inputs as the spec's inference sees them; false when one has a dtype kforge has no code for.
bool describe(const std::vector<at::Tensor>& inputs, std::vector<tensor_desc>* out, std::string* why) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    TORCH_CHECK(t.defined(), "kforge: input ", i, " is an undefined tensor");
    try {
      out->push_back({t.sizes().vec(), from_scalar_type(t.scalar_type())});
    } catch (const std::exception&) {
      *why = fmt::format("input {} is {}, which no spec takes", i, c10::toString(t.scalar_type()));
      return false;
    }
  }
  return true;
}

std::string layout_problem(const input_spec& in, const at::Tensor& t) {
  bool channels_last = in.memory_format == "channels_last";
  bool dense = channels_last ? t.is_contiguous(at::MemoryFormat::ChannelsLast) : t.is_contiguous();
  if (!dense) return fmt::format("{} is not {}", in.name, channels_last ? "channels_last" : "contiguous");
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % k_input_alignment != 0)
    return fmt::format("{} does not start {}-byte aligned", in.name, k_input_alignment);
  return "";
}

#if KFORGE_WITH_CUDA
// The architecture a kernel must be compiled for to run on this GPU (verify/check.h compile_arch: sm_90a).
const std::string& device_arch(c10::DeviceIndex index) {
  static std::mutex mutex;
  static std::map<int, std::string> arch;
  std::lock_guard lock(mutex);
  auto it = arch.find(index);
  if (it == arch.end()) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
    it = arch.emplace(index, compile_arch({{"arch", fmt::format("sm_{}{}", p->major, p->minor)}})).first;
  }
  return it->second;
}
#endif

std::string device_problem(const device_kernel& k, device_kind device, const std::vector<at::Tensor>& inputs) {
  c10::DeviceType want = device == device_kind::cuda ? c10::kCUDA : c10::kCPU;
  for (auto& t : inputs)
    if (t.device() != inputs.front().device() || t.device().type() != want)
      return fmt::format("the inputs are on {} and {}", inputs.front().device().str(), t.device().str());
#if KFORGE_WITH_CUDA
  if (device == device_kind::cuda && device_arch(inputs.front().device().index()) != k.arch)
    return fmt::format("the kernel was compiled for {}, {} is {}", k.arch, inputs.front().device().str(),
                       device_arch(inputs.front().device().index()));
#else
  (void)k;
#endif
  return "";
}

// One warning per operator, reason and shape: a model calls an operator with the same shapes many times.
void warn_once(const op_entry& entry, const std::string& why, const std::vector<at::Tensor>& inputs) {
  std::vector<std::string> parts;
  for (auto& t : inputs) parts.push_back(fmt::format("{}[{}]", c10::toString(t.scalar_type()), fmt::join(t.sizes(), ", ")));
  std::string shapes = fmt::format("{}", fmt::join(parts, ", "));
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard lock(mutex);
    if (!seen.insert(entry.name + "\n" + why + "\n" + shapes).second) return;
  }
  TORCH_WARN("kforge.", entry.name, ": ", why, "; running the eager graph for ", shapes,
             " (this warning is shown once per shape)");
}

// The eager graph's results as the operator returns them: contiguous, and never an input or an earlier output
// (a cast to the same dtype or a flatten returns its input, which an operator without aliasing annotations must
// not).
std::vector<at::Tensor> run_eager(const op_entry& entry, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> out = run_graph(entry.spec, inputs);
  for (size_t i = 0; i < out.size(); ++i) {
    bool aliased = !out[i].is_contiguous();
    for (auto& t : inputs) aliased = aliased || out[i].is_alias_of(t);
    for (size_t j = 0; j < i; ++j) aliased = aliased || out[i].is_alias_of(out[j]);
    if (aliased) out[i] = out[i].clone(at::MemoryFormat::Contiguous);
  }
  return out;
}

// kf_launch on the current stream; its return code (0: done).
int launch(const device_kernel& k, device_kind device, const std::vector<at::Tensor>& inputs,
           std::vector<at::Tensor>& outputs) {
  std::vector<kf_tensor> a(inputs.size()), b(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) to_kf_tensor(inputs[i], &a[i]);
  for (size_t i = 0; i < outputs.size(); ++i) to_kf_tensor(outputs[i], &b[i]);
  void* stream = nullptr;
#if KFORGE_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (device == device_kind::cuda) {
    guard.emplace(inputs.front().device());
    stream = c10::cuda::getCurrentCUDAStream(inputs.front().device().index()).stream();
  }
#else
  (void)device;
#endif
  int rc = k.launch(a.data(), static_cast<int>(a.size()), b.data(), static_cast<int>(b.size()), stream);
#if KFORGE_WITH_CUDA
  if (device == device_kind::cuda) C10_CUDA_KERNEL_LAUNCH_CHECK();
#endif
  return rc;
}

// The outputs the kernel writes for this call, or why it does not cover the call.
struct coverage {
  std::string why;
  std::vector<tensor_desc> outputs;
};

coverage covers(const op_entry& entry, device_kind device, const std::vector<at::Tensor>& inputs) {
  const device_kernel& k = entry.kernel(device);
  if (!k.launch) return {k.why.empty() ? fmt::format("no {} kernel loaded", device_kind_name(device)) : k.why, {}};
  std::vector<tensor_desc> descs;
  std::string why;
  if (!describe(inputs, &descs, &why)) return {why, {}};
  if (std::string d = device_problem(k, device, inputs); !d.empty()) return {d, {}};
  call_binding b = bind_call(entry.spec, descs);
  if (!b.ok) return {b.why, {}};
  for (size_t i = 0; i < inputs.size(); ++i)
    if (std::string l = layout_problem(entry.spec.inputs[i], inputs[i]); !l.empty()) return {l, {}};
  return {"", b.outputs};
}

}  // namespace

std::string not_covered(const op_entry& entry, device_kind device, const std::vector<at::Tensor>& inputs) {
  return covers(entry, device, inputs).why;
}

std::vector<at::Tensor> call_op(const op_entry& entry, device_kind device, const std::vector<at::Tensor>& inputs) {
  coverage c = covers(entry, device, inputs);
  std::string why = c.why;
  if (why.empty()) {
    std::vector<at::Tensor> out;
    for (const tensor_desc& d : c.outputs)
      out.push_back(at::empty(d.shape, inputs.front().options().dtype(to_scalar_type(d.type))));
    int rc = launch(entry.kernel(device), device, inputs, out);
    if (rc == 0) return out;
    why = fmt::format("kf_launch declined the call (returned {})", rc);
  }
  warn_once(entry, why, inputs);
  return run_eager(entry, inputs);
}

std::vector<at::Tensor> call_meta(const op_entry& entry, const std::vector<at::Tensor>& inputs) {
  bool concrete = true;
  for (auto& t : inputs) {
    TORCH_CHECK(t.defined(), "kforge.", entry.name, ": an input is an undefined tensor");
    concrete = concrete && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides();
  }
  std::vector<tensor_desc> descs;
  std::string why;
  if (concrete && describe(inputs, &descs, &why)) {
    call_binding b = bind_call(entry.spec, descs);
    if (b.ok) {
      std::vector<at::Tensor> out;
      for (const tensor_desc& d : b.outputs)
        out.push_back(at::empty(d.shape, inputs.front().options().dtype(to_scalar_type(d.type))));
      return out;
    }
  }
  std::vector<at::Tensor> out;
  for (const at::Tensor& r : run_graph(entry.spec, inputs)) out.push_back(at::empty_symint(r.sym_sizes(), r.options()));
  return out;
}

}  // namespace kf::ops
