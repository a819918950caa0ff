// The verify harness's memory and stream: tensors inside guarded allocations (guard bytes before and after, so
// out-of-bounds writes show and reads beyond the inputs can be provoked), poisoning, bitwise comparison, and the
// stream a candidate is launched on (a created non-blocking CUDA stream; none on cpu). Include only from
// *_torch.cpp.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "exec/device.h"

namespace kf {

// The CUDA context is unusable (a sticky error): the worker must answer cuda_poisoned and exit.
class cuda_poisoned_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int64_t k_guard_bytes = 64 * 1024;
constexpr uint8_t k_input_guard = 0xFF;      // NaN in every float type
constexpr uint8_t k_input_guard_alt = 0x3F;  // ordinary finite values
constexpr uint8_t k_output_guard = 0x5A;

struct guarded_tensor {
  at::Tensor region;  // uint8: guard | body | guard
  at::Tensor tensor;  // the view handed to the implementation
  int64_t body_bytes = 0;
};

// A fresh allocation with `shape`/`strides` (elements) and guards filled with `guard`.
guarded_tensor allocate_guarded(at::IntArrayRef shape, at::IntArrayRef strides, at::ScalarType type,
                                const c10::Device& device, uint8_t guard);
void fill_guards(guarded_tensor& g, uint8_t guard);
// How many guard bytes no longer hold `guard`.
int64_t damaged_guard_bytes(const guarded_tensor& g, uint8_t guard);

// The body filled with the dtype's poison: a NaN with the payload A5 for floats, 0xA5 bytes for integers.
void poison(guarded_tensor& g);
// Elements of `t` that still hold the poison pattern, bit for bit.
at::Tensor poison_mask(const at::Tensor& t);
// Same-size integer reinterpretation (contiguous): NaN-safe bitwise comparison.
at::Tensor bits(const at::Tensor& t);
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b);
int64_t bitwise_differences(const at::Tensor& a, const at::Tensor& b);

// The stream a trial runs on. On cuda, torch's current stream is set to it for the object's lifetime, so every
// harness operation (inputs, poison, reference) is ordered with the candidate's launch.
class run_stream {
 public:
  explicit run_stream(const device_id& device);
  ~run_stream();
  run_stream(const run_stream&) = delete;
  run_stream& operator=(const run_stream&) = delete;
  void* handle() const { return m_stream; }
  // Synchronizes this stream only. Returns "" or the CUDA error's text (a non-sticky error, now cleared);
  // throws cuda_poisoned_error for a sticky one.
  std::string sync();
  // The error a launch left (cudaGetLastError), as sync() reports it.
  std::string launch_error();
  // Lets anything not on this stream finish: device-wide sync on cuda, a short wait on cpu (a thread the
  // candidate left behind). Same error reporting as sync().
  std::string settle(int cpu_wait_ms);

 private:
  device_id m_device;
  void* m_stream = nullptr;
  void* m_guard = nullptr;  // c10::cuda::CUDAStreamGuard
};

// Clones of `outs` taken on the run stream, after syncing it (the stream discipline: read only what that
// stream's sync guarantees).
std::vector<at::Tensor> snapshot(const std::vector<at::Tensor>& outs, run_stream& stream, std::string* cuda_error);

}  // namespace kf
