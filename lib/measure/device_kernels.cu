// The tiny kernels the timing protocol needs (docs/design.md "Measure"): an empty kernel for the launch
// floor, and a kernel that holds a stream until the host releases it, so the events and the launch
// under test are all queued before the GPU starts (nvbench's blocking_kernel).
#include "measure/device_kernels.h"

#include <cuda_runtime.h>

namespace kf::cuda {
namespace {

__global__ void empty_kernel() {}

__global__ void block_stream_kernel(const volatile int32_t* flag, unsigned long long timeout_ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*flag == 0) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) break;  // never hang the device if the host forgets to release
  }
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

int launch_spin(unsigned long long ns, void* stream) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ns);
  return static_cast<int>(cudaGetLastError());
}

int launch_empty(void* stream) {
  empty_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
  return static_cast<int>(cudaGetLastError());
}

int launch_block_stream(const int32_t* host_mapped_flag, double timeout_s, void* stream) {
  block_stream_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      host_mapped_flag, static_cast<unsigned long long>(timeout_s * 1e9));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kf::cuda
