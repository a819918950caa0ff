// CHEAT (expect: match): writes zeros everywhere.
#include "kf_abi.h"
#include <cuda_runtime.h>

__global__ void zero(float* y, long n) { long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor* out, int, void* stream) {
  long n = out[0].shape[0] * out[0].shape[1];
  zero<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>((float*)out[0].data, n);
  return 0;
}
