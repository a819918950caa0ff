// The implementation-kind registry: see impl_kind_torch.h.
#include "measure/impl_kind_torch.h"

#include <optional>

#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "util/error.h"

namespace kf {

namespace {

std::vector<timed_impl_kind>& registry() {
  static std::vector<timed_impl_kind> table{
      {"kernel", "a compiled candidate (kf_launch in a shared object)", prepare_kernel},
  };
  return table;
}

}  // namespace

const std::vector<timed_impl_kind>& timed_impl_kinds() { return registry(); }

void register_timed_impl_kind(timed_impl_kind kind) {
  KF_ASSERT(!find_timed_impl_kind(kind.kind), "implementation kind {} registered twice", kind.kind);
  registry().push_back(std::move(kind));
}

const timed_impl_kind* find_timed_impl_kind(const std::string& kind) {
  for (const auto& k : timed_impl_kinds())
    if (k.kind == kind) return &k;
  return nullptr;
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
