// CRASH (expect: hang): a kernel that never finishes.
#include "kf_abi.h"
#include <cuda_runtime.h>
__global__ void forever(volatile int* flag) { while (*flag == 0) {} }
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor* out, int, void* stream) {
  cudaMemsetAsync(out[0].data, 0, 4, (cudaStream_t)stream);
  forever<<<1, 1, 0, (cudaStream_t)stream>>>((volatile int*)out[0].data);
  return 0;
}
