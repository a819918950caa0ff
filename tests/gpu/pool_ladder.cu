// The rungs of tests/gpu/pool_ladder.py: kernels for batch-1 average pooling ([1, 2048, 7, 7] fp16 -> [2048]),
// from an empty launch to a whole reduction, each a case of run().
#include <cuda_fp16.h>

#include <cstdint>

__global__ void empty_k() {}
__global__ void store_k(__half* y, int n) {
  int i = blockIdx.x * 32 + threadIdx.x;
  if (threadIdx.x < 32 && i < n) y[i] = __float2half(0.f);
}
// one 16-byte load per thread, warp shuffle sum, lane 0..: store (no smem)
__global__ void load1_k(const __half* x, __half* y, int ne, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  float s = 0.f;
  if (i + 8 <= ne) {
    uint4 v = *reinterpret_cast<const uint4*>(x + i);
    const __half* h = reinterpret_cast<const __half*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) s += __half2float(h[k]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if ((threadIdx.x & 31) == 0 && w < n) y[w] = __float2half(s);
}
// one 16-byte load per thread into smem, barrier, one smem read, store
__global__ void load1_smem_k(const __half* x, __half* y, int ne, int n) {
  __shared__ __align__(16) __half t[256 * 8];
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (i + 8 <= ne) *reinterpret_cast<uint4*>(t + threadIdx.x * 8) = *reinterpret_cast<const uint4*>(x + i);
  __syncthreads();
  int o = blockIdx.x * 32 + threadIdx.x;
  if (threadIdx.x < 32 && o < n) y[o] = t[threadIdx.x * 49 % 2048];
}
// our staged kernel (256 threads, 8 per plane, 32 planes a block), HW a template constant or run time
template <int HWC>
__global__ void __launch_bounds__(256) staged_k(const __half* x, __half* y, int planes, int hw_rt) {
  __shared__ __align__(16) __half tile[32 * 64];
  const int hw = HWC > 0 ? HWC : hw_rt;
  const int p0 = blockIdx.x * 32;
  const int np = planes - p0 < 32 ? planes - p0 : 32;
  const int ne = np * hw;
  const __half* src = x + (int64_t)p0 * hw;
  for (int i = threadIdx.x * 8; i < ne; i += 256 * 8) {
    if (i + 8 <= ne) *reinterpret_cast<uint4*>(tile + i) = *reinterpret_cast<const uint4*>(src + i);
    else for (int t = i; t < ne; ++t) tile[t] = src[t];
  }
  __syncthreads();
  const int j = threadIdx.x / 8, sub = threadIdx.x % 8;
  float acc = 0.f;
  if (j < np) {
#pragma unroll 4
    for (int k = sub; k < hw; k += 8) acc += __half2float(tile[j * hw + k]);
  }
#pragma unroll
  for (int o = 4; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (sub == 0 && j < np) y[p0 + j] = __float2half(acc / hw);
}
// inductor's shape: 64 blocks x 1 warp, lane l reads positions l and l+32 of each of 32 planes (64 loads in
// flight), then the sums meet in shared memory (lane j adds plane j's 32 partials... as a 32x33 transpose)
template <int HWC>
__global__ void __launch_bounds__(32) warp_k(const __half* x, __half* y, int planes, int hw_rt) {
  __shared__ float part[32][33];
  const int hw = HWC > 0 ? HWC : hw_rt;
  const int lane = threadIdx.x, p0 = blockIdx.x * 32;
  const __half* src = x + (int64_t)p0 * hw;
  float s[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    float a = lane < hw ? __half2float(src[j * hw + lane]) : 0.f;
    float b = lane + 32 < hw ? __half2float(src[j * hw + lane + 32]) : 0.f;
    s[j] = a + b;
  }
#pragma unroll
  for (int j = 0; j < 32; ++j) part[j][lane] = s[j];
  __syncwarp();
  float t = 0.f;
#pragma unroll
  for (int k = 0; k < 32; ++k) t += part[lane][k];
  if (p0 + lane < planes) y[p0 + lane] = __float2half(t / hw);
}

extern "C" int run(int which, const void* xv, void* yv, void* sv) {
  auto s = static_cast<cudaStream_t>(sv);
  auto x = static_cast<const __half*>(xv);
  auto y = static_cast<__half*>(yv);
  const int planes = 2048, hw = 49, ne = planes * hw;
  switch (which) {
    case 0: empty_k<<<64, 32, 0, s>>>(); break;
    case 1: empty_k<<<64, 256, 0, s>>>(); break;
    case 2: empty_k<<<1, 32, 0, s>>>(); break;
    case 3: store_k<<<64, 32, 0, s>>>(y, planes); break;
    case 4: store_k<<<64, 256, 0, s>>>(y, planes); break;
    case 5: load1_k<<<(ne / 8 + 255) / 256, 256, 0, s>>>(x, y, ne, planes); break;
    case 6: load1_smem_k<<<(ne / 8 + 255) / 256, 256, 0, s>>>(x, y, ne, planes); break;
    case 7: staged_k<0><<<64, 256, 0, s>>>(x, y, planes, hw); break;
    case 8: staged_k<49><<<64, 256, 0, s>>>(x, y, planes, hw); break;
    case 9: warp_k<0><<<64, 32, 0, s>>>(x, y, planes, hw); break;
    case 10: warp_k<49><<<64, 32, 0, s>>>(x, y, planes, hw); break;
    case 11: empty_k<<<128, 256, 0, s>>>(); break;
    default: return 1;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
