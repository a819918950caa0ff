#include "verify/harness_torch.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>
#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

#include "util/error.h"

namespace kf {
namespace {

at::ScalarType int_type_of_size(int64_t size) {
  switch (size) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
  }
  KF_ASSERT(false, "no integer type of {} bytes", size);
}

int64_t poison_bits(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0x7FA5A5A5;
    case at::kDouble: return 0x7FF4A5A5A5A5A5A5;
    case at::kHalf: return 0x7CA5;
    case at::kBFloat16: return 0x7FA5;
    case at::kInt: return static_cast<int32_t>(0xA5A5A5A5u);
    case at::kLong: return static_cast<int64_t>(0xA5A5A5A5A5A5A5A5ull);
    case at::kByte:
    case at::kBool: return 0xA5;
    default: KF_ASSERT(false, "no poison for {}", c10::toString(t));
  }
}

}  // namespace

guarded_tensor allocate_guarded(at::IntArrayRef shape, at::IntArrayRef strides, at::ScalarType type,
                                const c10::Device& device, uint8_t guard) {
  int64_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) extent = 0;
    if (extent) extent += (shape[i] - 1) * strides[i];
  }
  if (shape.empty()) extent = 1;
  int64_t elem = static_cast<int64_t>(c10::elementSize(type));
  guarded_tensor g;
  g.body_bytes = extent * elem;
  g.region = at::empty({2 * k_guard_bytes + g.body_bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  fill_guards(g, guard);
  g.tensor = g.region.narrow(0, k_guard_bytes, g.body_bytes).view(type).as_strided(shape, strides);
  return g;
}

void fill_guards(guarded_tensor& g, uint8_t guard) {
  g.region.narrow(0, 0, k_guard_bytes).fill_(guard);
  g.region.narrow(0, k_guard_bytes + g.body_bytes, k_guard_bytes).fill_(guard);
}

int64_t damaged_guard_bytes(const guarded_tensor& g, uint8_t guard) {
  auto head = g.region.narrow(0, 0, k_guard_bytes);
  auto tail = g.region.narrow(0, k_guard_bytes + g.body_bytes, k_guard_bytes);
  return head.ne(guard).sum().item<int64_t>() + tail.ne(guard).sum().item<int64_t>();
}

void poison(guarded_tensor& g) {
  at::ScalarType t = g.tensor.scalar_type();
  auto body = g.region.narrow(0, k_guard_bytes, g.body_bytes).view(int_type_of_size(c10::elementSize(t)));
  body.fill_(poison_bits(t));
}

at::Tensor bits(const at::Tensor& t) {
  return t.contiguous().view(int_type_of_size(static_cast<int64_t>(c10::elementSize(t.scalar_type()))));
}

at::Tensor poison_mask(const at::Tensor& t) { return bits(t).eq(poison_bits(t.scalar_type())); }

bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(bits(a), bits(b));
}

int64_t bitwise_differences(const at::Tensor& a, const at::Tensor& b) {
  return bits(a).ne(bits(b)).sum().item<int64_t>();
}

run_stream::run_stream(const device_id& device) : m_device(device) {
#if KFORGE_WITH_CUDA
  if (device.kind == device_kind::cuda) {
    cudaStream_t s = nullptr;
    // Non-blocking: no implicit ordering with the legacy default stream, so work a candidate puts elsewhere is
    // not silently waited for.
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
      throw infra_error("cudaStreamCreateWithFlags failed");
    m_stream = s;
    m_guard = new c10::cuda::CUDAStreamGuard(
        c10::cuda::getStreamFromExternal(s, static_cast<c10::DeviceIndex>(device.index)));
  }
#endif
}

run_stream::~run_stream() {
#if KFORGE_WITH_CUDA
  delete static_cast<c10::cuda::CUDAStreamGuard*>(m_guard);
  if (m_stream) cudaStreamDestroy(static_cast<cudaStream_t>(m_stream));
#endif
}

namespace {
#if KFORGE_WITH_CUDA
std::string classify(cudaError_t e) {
  if (e == cudaSuccess) return {};
  std::string text = fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e));
  cudaGetLastError();  // clears a non-sticky error
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess)
    throw cuda_poisoned_error(text);
  return text;
}
#endif
}  // namespace

std::string run_stream::sync() {
#if KFORGE_WITH_CUDA
  if (m_device.kind == device_kind::cuda) return classify(cudaStreamSynchronize(static_cast<cudaStream_t>(m_stream)));
#endif
  return {};
}

std::string run_stream::launch_error() {
#if KFORGE_WITH_CUDA
  if (m_device.kind == device_kind::cuda) return classify(cudaGetLastError());
#endif
  return {};
}

std::string run_stream::settle(int cpu_wait_ms) {
#if KFORGE_WITH_CUDA
  if (m_device.kind == device_kind::cuda) return classify(cudaDeviceSynchronize());
#endif
  std::this_thread::sleep_for(std::chrono::milliseconds(cpu_wait_ms));
  return {};
}

std::vector<at::Tensor> snapshot(const std::vector<at::Tensor>& outs, run_stream& stream, std::string* cuda_error) {
  *cuda_error = stream.sync();
  std::vector<at::Tensor> copies;
  for (auto& o : outs) copies.push_back(o.clone());
  std::string after = stream.sync();
  if (cuda_error->empty()) *cuda_error = after;
  return copies;
}

}  // namespace kf
