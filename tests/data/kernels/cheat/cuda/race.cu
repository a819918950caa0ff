// CHEAT (expect: deterministic): row sums from several blocks combined with atomicAdd, in whatever order they land.
#include "kf_abi.h"
#include <cuda_runtime.h>

// A correct softmax of one row per block (this kernel cheats elsewhere).
__device__ float block_sum_or_max(float v, bool is_max) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (blockDim.x >> 5) ? part[threadIdx.x & 31] : (is_max ? -INFINITY : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;
}
__global__ void softmax_rows(const float* x, long xs0, long xs1, float* y, long ys0, long ys1, long cols, long row0) {
  long r = row0 + blockIdx.x;
  const float* xr = x + r * xs0;
  float* yr = y + r * ys0;
  float m = -INFINITY;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c * xs1]);
  m = block_sum_or_max(m, true);
  float s = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c * xs1] - m);
  s = block_sum_or_max(s, false);
  for (long c = threadIdx.x; c < cols; c += blockDim.x) yr[c * ys1] = expf(xr[c * xs1] - m) / s;
}
static void launch_rows(const kf_tensor* in, kf_tensor* out, long row0, long rows, cudaStream_t s) {
  if (rows > 0)
    softmax_rows<<<(unsigned)rows, 256, 0, s>>>((const float*)in[0].data, in[0].stride[0], in[0].stride[1],
                                                (float*)out[0].data, out[0].stride[0], out[0].stride[1],
                                                in[0].shape[1], row0);
}

__global__ void partial(const float* x, long xs0, long xs1, long cols, float* sums, float* maxes) {
  long r = blockIdx.y;
  const float* xr = x + r * xs0;
  float m = -INFINITY;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c * xs1]);
  m = block_sum_or_max(m, true);
  long per = (cols + gridDim.x - 1) / gridDim.x, begin = blockIdx.x * per, end = min(cols, begin + per);
  // the start of each block's range rotates with the clock: the float additions land in a different order
  long rot = (long)(clock64() >> 4);
  float s = 0;
  for (long k = threadIdx.x; k < end - begin; k += blockDim.x) {
    long c = begin + (k + rot) % (end - begin);
    s += expf(xr[c * xs1] - m);
  }
  s = block_sum_or_max(s, false);
  if (threadIdx.x == 0) {
    atomicAdd(&sums[r], s);
    maxes[r] = m;
  }
}
__global__ void normalize(const float* x, long xs0, long xs1, float* y, long ys0, long ys1, long cols,
                          const float* sums, const float* maxes) {
  long r = blockIdx.x;
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    y[r * ys0 + c * ys1] = expf(x[r * xs0 + c * xs1] - maxes[r]) / sums[r];
}
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  long rows = in[0].shape[0], cols = in[0].shape[1];
  float* scratch = nullptr;
  cudaMallocAsync((void**)&scratch, 2 * rows * sizeof(float), s);
  cudaMemsetAsync(scratch, 0, 2 * rows * sizeof(float), s);
  partial<<<dim3(4, (unsigned)rows), 256, 0, s>>>((const float*)in[0].data, in[0].stride[0], in[0].stride[1], cols,
                                                  scratch, scratch + rows);
  normalize<<<(unsigned)rows, 256, 0, s>>>((const float*)in[0].data, in[0].stride[0], in[0].stride[1],
                                           (float*)out[0].data, out[0].stride[0], out[0].stride[1], cols, scratch,
                                           scratch + rows);
  cudaFreeAsync(scratch, s);
  return 0;
}
