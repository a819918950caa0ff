// L2 flush: see l2_flush.h.
#include "measure/l2_flush.h"

#include "measure/cuda_check.h"

namespace kf::cuda {

l2_flush::l2_flush(int device) {
  int l2 = 0;
  KF_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  m_l2_bytes = l2;
  // Twice the L2: on H100/H200 the L2 is two partitions that may both hold a line, and writing more than
  // fits leaves nothing of the previous sample behind.
  m_bytes = 2 * static_cast<int64_t>(l2);
  if (m_bytes > 0) KF_CUDA_CHECK(cudaMalloc(&m_buffer, static_cast<size_t>(m_bytes)));
}

l2_flush::~l2_flush() {
  if (m_buffer) cudaFree(m_buffer);  // no throwing from a destructor; a failure here changes nothing
}

void l2_flush::flush(void* stream) {
  if (!m_buffer) return;
  m_value = (m_value + 1) & 0xff;  // a new value each time, so no write can be elided
  KF_CUDA_CHECK(cudaMemsetAsync(m_buffer, m_value, static_cast<size_t>(m_bytes), static_cast<cudaStream_t>(stream)));
}

}  // namespace kf::cuda
