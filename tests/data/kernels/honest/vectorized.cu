// Honest CUDA softmax: one block per row, a block-wide max and sum (warp shuffles), float4 loads when the row is
// contiguous and 16-byte aligned, scalar otherwise.
#include "kf_abi.h"
#include <cuda_runtime.h>
#include <stdint.h>

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? part[lane] : (is_max ? -INFINITY : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;
}

__global__ void softmax_rows(const float* x, long xs0, long xs1, float* y, long ys0, long ys1, long cols) {
  const float* xr = x + blockIdx.x * xs0;
  float* yr = y + blockIdx.x * ys0;
  bool vec = xs1 == 1 && ys1 == 1 && cols % 4 == 0 && ((uintptr_t)xr % 16 == 0) && ((uintptr_t)yr % 16 == 0);
  float m = -INFINITY;
  if (vec) {
    for (long c = threadIdx.x; c < cols / 4; c += blockDim.x) {
      float4 v = reinterpret_cast<const float4*>(xr)[c];
      m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
  } else {
    for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c * xs1]);
  }
  m = block_reduce(m, true);
  float s = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c * xs1] - m);
  s = block_reduce(s, false);
  float inv = 1.f / s;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) yr[c * ys1] = expf(xr[c * xs1] - m) * inv;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  long rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows == 0) return 0;
  softmax_rows<<<(unsigned)rows, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data, in[0].stride[0],
                                                                 in[0].stride[1], (float*)out[0].data,
                                                                 out[0].stride[0], out[0].stride[1], cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
