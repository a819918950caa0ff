// The fixed part of pool_cuda's emitted source: the NCHW and channels_last kernels and kf_launch's checks.
#include "search/families/pool_cuda_body.h"

namespace kf {

const char* pool_cuda_body() {
  return R"CUDA(
constexpr int k_tpp_small = k_small_tpp > 0 ? k_small_tpp : k_tpp;
constexpr int k_clt_small = k_small_clt > 0 ? k_small_clt : k_clt;

struct pool_args {
  const in_t* x;
  out_t* y;
  int64_t n, c, hw;  // images, channels, positions per plane
  float inv_hw;
  int direct;        // NCHW: planes too big to stage, read from global memory
};

// Copies V elements without converting them, in accesses of at most 16 bytes.
template <typename T, int V>
__device__ __forceinline__ void copy_vec(T* dst, const T* src) {
  constexpr int B = V * (int)sizeof(T);
  if constexpr (B > 16) {
    copy_vec<T, V / 2>(dst, src);
    copy_vec<T, V / 2>(dst + V / 2, src + V / 2);
  } else if constexpr (V == 1) {
    *dst = *src;
  } else {
    using R = typename raw_bits<B>::type;
    *reinterpret_cast<R*>(dst) = *reinterpret_cast<const R*>(src);
  }
}

// NCHW: planes are contiguous; a block takes NT / TPP planes at a time.
template <int V, int TPP>
__global__ void __launch_bounds__(NT) nchw_kernel(pool_args a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  in_t* tile = reinterpret_cast<in_t*>(smem_raw);
  constexpr int P = NT / TPP;
  const int64_t planes = a.n * a.c;
  const int j = threadIdx.x / TPP, sub = threadIdx.x % TPP;
  for (int64_t p0 = (int64_t)blockIdx.x * P; p0 < planes; p0 += (int64_t)gridDim.x * P) {
    const int64_t np = planes - p0 < P ? planes - p0 : P;
    const int64_t ne = np * a.hw;
    const in_t* src = a.x + p0 * a.hw;
    if (!a.direct) {
      for (int64_t i = (int64_t)threadIdx.x * V; i < ne; i += (int64_t)NT * V) {
        if (i + V <= ne) copy_vec<in_t, V>(tile + i, src + i);
        else
          for (int64_t t = i; t < ne; ++t) tile[t] = src[t];
      }
      __syncthreads();
    }
    const in_t* from = (a.direct ? src : tile) + (int64_t)j * a.hw;
    float acc = 0.f;
    if (j < np) {
      if (a.hw <= 0x7fffffff) {
        const int hw = (int)a.hw;
#pragma unroll 4
        for (int k = sub; k < hw; k += TPP) acc += to_f(from[k]);
      } else {
        for (int64_t k = sub; k < a.hw; k += TPP) acc += to_f(from[k]);
      }
    }
#pragma unroll
    for (int o = TPP / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (sub == 0 && j < np) a.y[p0 + j] = from_f<out_t>(finalize(acc * a.inv_hw));
    if (!a.direct) __syncthreads();
  }
}

// channels_last: x[n][hw][c]; CLT threads across channel vectors, NT / CLT rows of positions. Lanes that
// share channels first add through shuffles, so shared memory holds one partial row per warp (CLT <= 32).
template <int V, int CLT>
__global__ void __launch_bounds__(NT) nhwc_kernel(pool_args a) {
  constexpr int HS = NT / CLT, W = CLT * V;
  constexpr int R = CLT <= 32 ? NT / 32 : HS;  // partial rows left for shared memory
  __shared__ float part[R * W];
  const int tc = threadIdx.x % CLT, th = threadIdx.x / CLT;
  const int64_t tiles = (a.c + W - 1) / W;
  for (int64_t t = blockIdx.x; t < a.n * tiles; t += gridDim.x) {
    const int64_t n = t / tiles, c0 = (t % tiles) * W, c = c0 + (int64_t)tc * V;
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0.f;
    if (c < a.c) {
      const in_t* base = a.x + n * a.hw * a.c + c;
#pragma unroll 4
      for (int64_t h = th; h < a.hw; h += HS) {
        float x[V];
        load_vec<in_t, V>(base + h * a.c, x);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] += x[v];
      }
    }
    int row = th;
    if constexpr (CLT <= 32) {
#pragma unroll
      for (int o = 16; o >= CLT; o >>= 1)
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], o);
      row = threadIdx.x / 32;
    }
    if (CLT > 32 || (threadIdx.x & 31) < CLT) {
#pragma unroll
      for (int v = 0; v < V; ++v) part[row * W + tc * V + v] = acc[v];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < W; i += NT) {
      float s = 0.f;
#pragma unroll
      for (int h = 0; h < R; ++h) s += part[h * W + i];
      if (c0 + i < a.c) a.y[n * a.c + c0 + i] = from_f<out_t>(finalize(s * a.inv_hw));
    }
    __syncthreads();
  }
}

// The SMs of the current device: a grid smaller than this leaves some idle.
inline int sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 1;
  return sms;
}

// How many blocks a layout's launch makes with `per_block` planes (or channels) per block.
inline int64_t blocks_for(int64_t units, int64_t per_block) { return (units + per_block - 1) / per_block; }

// `direct`: threads read their plane's elements from global memory instead of staging whole planes in shared
// memory first (one round trip less; small batches, whose planes sit in L2 or are few).
template <int TPP>
int launch_nchw(pool_args a, bool direct, cudaStream_t s) {
  constexpr int P = NT / TPP;
  size_t smem = (size_t)P * (size_t)a.hw * sizeof(in_t);
  if (direct || smem > 96 * 1024) {
    a.direct = 1;
    smem = 0;
  }
  const int64_t blocks0 = blocks_for(a.n * a.c, P), k_grid_cap = 1 << 20;
  const unsigned blocks = (unsigned)(blocks0 < k_grid_cap ? blocks0 : k_grid_cap);
  const bool vec = (P * a.hw) % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  auto kernel = vec ? nchw_kernel<k_vec, TPP> : nchw_kernel<1, TPP>;
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
    return 3;
  kernel<<<blocks, NT, smem, s>>>(a);
  return 0;
}

template <int CLT>
int launch_nhwc(const pool_args& a, cudaStream_t s) {
  const bool vec = a.c % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  const int64_t wv = (int64_t)CLT * (vec ? k_vec : 1), k_grid_cap = 1 << 20;
  const int64_t blocks0 = a.n * blocks_for(a.c, wv);
  const unsigned blocks = (unsigned)(blocks0 < k_grid_cap ? blocks0 : k_grid_cap);
  if (vec) nhwc_kernel<k_vec, CLT><<<blocks, NT, 0, s>>>(a);
  else nhwc_kernel<1, CLT><<<blocks, NT, 0, s>>>(a);
  return 0;
}

int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  if (x.dtype != dtype_code<in_t>::value || (x.ndim != 3 && x.ndim != 4)) return 1;
  const int d0 = x.ndim - 3;  // index of C
  pool_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.n = x.ndim == 4 ? x.shape[0] : 1;
  a.c = x.shape[d0];
  a.hw = x.shape[d0 + 1] * x.shape[d0 + 2];
  const kf_tensor& y = out[0];
  if (y.dtype != dtype_code<out_t>::value || !contiguous(y) || numel(y) != a.n * a.c) return 1;
  a.y = static_cast<out_t*>(y.data);
  if (a.n * a.c == 0) return 0;
  if (a.hw == 0) return 1;  // torch averages an empty window to NaN; not worth a kernel
  a.inv_hw = 1.f / (float)a.hw;
  const int64_t C = a.c, W = x.shape[d0 + 2], H = x.shape[d0 + 1];
  const bool nhwc = x.ndim == 4 && !contiguous(x) && x.stride[1] == 1 && x.stride[3] == C && x.stride[2] == W * C &&
                    (x.shape[0] == 1 || x.stride[0] == H * W * C);
  // Small batches: when the knobs' launch would leave SMs idle, the small_* knobs give more, smaller blocks.
  if (contiguous(x)) {
    const bool small = k_small_tpp > 0 && blocks_for(a.n * a.c, NT / k_tpp) < sm_count();
    const int rc = small ? launch_nchw<k_tpp_small>(a, k_small_direct, s) : launch_nchw<k_tpp>(a, false, s);
    if (rc != 0) return rc;
  } else if (nhwc) {
    const bool small = k_small_clt > 0 && a.n * blocks_for(C, (int64_t)k_clt * k_vec) < sm_count();
    if (small) launch_nhwc<k_clt_small>(a, s);
    else launch_nhwc<k_clt>(a, s);
  } else {
    return 1;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
)CUDA";
}

}  // namespace kf
