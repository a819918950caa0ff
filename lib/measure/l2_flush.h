// Evicts the GPU's L2 cache before a cold sample (nvbench's l2flush): a memset of a buffer larger than L2 on
// the measuring stream. Plain C++ interface; the CUDA side is l2_flush.cu.
#pragma once
#include <cstdint>

namespace kf::cuda {

class l2_flush {
 public:
  explicit l2_flush(int device);  // throws kf::cuda_error
  ~l2_flush();
  l2_flush(const l2_flush&) = delete;
  l2_flush& operator=(const l2_flush&) = delete;

  // Enqueues the flush on `stream` (a cudaStream_t).
  void flush(void* stream);
  int64_t l2_bytes() const { return m_l2_bytes; }
  int64_t buffer_bytes() const { return m_bytes; }

 private:
  int64_t m_l2_bytes = 0;
  int64_t m_bytes = 0;
  void* m_buffer = nullptr;
  int m_value = 0;
};

}  // namespace kf::cuda
