// CHEAT (expect: match): a plausible constant, 1/C everywhere.
#include "kf_abi.h"
#include <cuda_runtime.h>

__global__ void fill(float* y, long n, float v) { long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) y[i] = v; }
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void* stream) {
  long n = out[0].shape[0] * out[0].shape[1];
  fill<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>((float*)out[0].data, n, 1.f / in[0].shape[1]);
  return 0;
}
