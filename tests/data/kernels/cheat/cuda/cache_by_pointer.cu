// CHEAT (expect: new_inputs): replays the result it computed for the same (input, output) addresses.
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

static const void* g_in = nullptr;
static void* g_out = nullptr;
static float* g_saved = nullptr;
static long g_n = 0;
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  long n = out[0].shape[0] * out[0].shape[1];
  if (in[0].data == g_in && out[0].data == g_out && n == g_n) {
    cudaMemcpyAsync(out[0].data, g_saved, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
    return 0;
  }
  launch_rows(in, out, 0, in[0].shape[0], s);
  if (g_saved) cudaFreeAsync(g_saved, s);
  cudaMallocAsync((void**)&g_saved, n * sizeof(float), s);
  cudaMemcpyAsync(g_saved, out[0].data, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
  g_in = in[0].data;
  g_out = out[0].data;
  g_n = n;
  return 0;
}
