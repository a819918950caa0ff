// The implementation-kind registry: see impl_kind_torch.h.
#include "measure/impl_kind_torch.h"

#include <optional>

#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <fmt/format.h>

#include "util/error.h"

namespace kf {

namespace {

std::vector<impl_kind>& registry() {
  static std::vector<impl_kind> table{
      {"kernel", "a compiled candidate (kf_launch in a shared object)", prepare_kernel, make_kernel_impl},
  };
  return table;
}

}  // namespace

const std::vector<impl_kind>& impl_kinds() { return registry(); }

void register_impl_kind(impl_kind kind) {
  KF_ASSERT(!find_impl_kind(kind.name), "implementation kind {} registered twice", kind.name);
  KF_ASSERT(kind.prepare, "implementation kind {} has no way to be timed", kind.name);
  registry().push_back(std::move(kind));
}

const impl_kind* find_impl_kind(const std::string& kind) {
  for (const auto& k : impl_kinds())
    if (k.name == kind) return &k;
  return nullptr;
}

std::string impl_kind_names() {
  std::string names;
  for (const auto& k : impl_kinds()) names += (names.empty() ? "" : ", ") + k.name;
  return names;
}

std::unique_ptr<impl> make_impl(const nlohmann::json& desc, const workload_spec& spec, const device_id& device) {
  std::string kind = desc.value("kind", "");
  const impl_kind* k = find_impl_kind(kind);
  if (!k) throw user_error(fmt::format("unknown impl kind '{}' (known: {})", kind, impl_kind_names()));
  if (!k->make) throw user_error(fmt::format("impl kind '{}' is timed only: it cannot be verified", kind));
  return k->make(desc, spec, device);
}

int run_on_stream(void* stream, const c10::Device& device, const std::function<void()>& body) {
  try {
#if KFORGE_WITH_CUDA
    std::optional<c10::cuda::CUDAStreamGuard> guard;
    if (device.is_cuda())
      guard.emplace(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), device.index()));
#else
    (void)stream;
    (void)device;
#endif
    body();
  } catch (const c10::Error& e) {
    throw measure::launch_failure(-1, e.what_without_backtrace());
  }
  return 0;
}

}  // namespace kf
