// kforge winner: sd35-vae-groupnorm on sm90-nvidia-h200
// kforge winner for sd35-vae-groupnorm on sm90-nvidia-h200, found by `kforge search` (template proposer) on 2026-11-30T06:49:06Z
// family: group_norm_cuda
// knobs: chunks=4 cluster=8 reverse=1 splits=16 stats=shifted strategy=split stream_store=1 threads=512 unroll=2 vec=8
// lineage: default
// measured: 78.02 us (geometric mean over gated cases), 15.41x eager

// kforge candidate: family group_norm_cuda (cuda), emitted by the template proposer.
// knobs: chunks=4 reverse=1 splits=16 stats=shifted strategy=split stream_store=1 threads=512 unroll=2 vec=8
// computes: x[bfloat16] -> group_norm(groups=32, eps=1e-06)

#include "kf_abi.h"
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <stdint.h>

namespace kfk {
namespace cg = cooperative_groups;

// ---- types ----
template <typename T> struct dtype_code;
template <> struct dtype_code<float> { static constexpr int value = KF_FLOAT32; };
template <> struct dtype_code<__half> { static constexpr int value = KF_FLOAT16; };
template <> struct dtype_code<__nv_bfloat16> { static constexpr int value = KF_BFLOAT16; };
template <> struct dtype_code<double> { static constexpr int value = KF_FLOAT64; };

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(double x) { return (float)x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ double from_f<double>(float x) { return (double)x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// ---- vector access: V consecutive elements in accesses of at most 16 bytes ----
template <int B> struct raw_bits;
template <> struct raw_bits<2> { using type = unsigned short; };
template <> struct raw_bits<4> { using type = unsigned int; };
template <> struct raw_bits<8> { using type = uint2; };
template <> struct raw_bits<16> { using type = uint4; };

// The alignment (bytes) a V-wide access of T needs.
template <typename T, int V> constexpr int vec_align() { return V * (int)sizeof(T) > 16 ? 16 : V * (int)sizeof(T); }

template <typename T, int V>
__device__ __forceinline__ void load_vec(const T* __restrict__ p, float* o) {
  constexpr int B = V * (int)sizeof(T);
  if constexpr (V == 1) {
    o[0] = to_f(*p);
  } else if constexpr (B > 16) {
    load_vec<T, V / 2>(p, o);
    load_vec<T, V / 2>(p + V / 2, o + V / 2);
  } else {
    using R = typename raw_bits<B>::type;
    R r = *reinterpret_cast<const R*>(p);
    const T* t = reinterpret_cast<const T*>(&r);
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = to_f(t[v]);
  }
}

// STREAM: evict-first stores (__stcs), so written outputs do not push inputs out of L2.
template <typename T, int V, bool STREAM>
__device__ __forceinline__ void store_vec(T* __restrict__ p, const float* x) {
  constexpr int B = V * (int)sizeof(T);
  if constexpr (B > 16) {
    store_vec<T, V / 2, STREAM>(p, x);
    store_vec<T, V / 2, STREAM>(p + V / 2, x + V / 2);
  } else if constexpr (V == 1 || B < 2) {
#pragma unroll
    for (int v = 0; v < V; ++v) p[v] = from_f<T>(x[v]);
  } else {
    using R = typename raw_bits<B>::type;
    R r;
    T* t = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int v = 0; v < V; ++v) t[v] = from_f<T>(x[v]);
    if constexpr (STREAM) __stcs(reinterpret_cast<R*>(p), r);
    else *reinterpret_cast<R*>(p) = r;
  }
}

// softcap's tanh. tanhf costs ~30 instructions, which made softcapped softmax compute-bound on an H200:
// tanh_exp takes one exp and one reciprocal (absolute error ~1e-7; clamped so that the exp never overflows),
// tanh_approx the single tanh.approx.f32 instruction (relative error ~5e-4: verify decides if that is enough).
__device__ __forceinline__ float tanh_exp(float y) {
  y = fminf(fmaxf(y, -15.f), 15.f);
  return 1.f - __fdividef(2.f, 1.f + __expf(2.f * y));
}
__device__ __forceinline__ float tanh_approx(float y) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(y));
  return t;
}

__host__ __device__ __forceinline__ bool aligned(const void* p, int bytes) {
  return ((uintptr_t)p % (uintptr_t)bytes) == 0;
}

// ---- reductions over a warp, a block and a cluster, of small records of floats ----
struct f2 { float a, b; };
struct f3 { float a, b, c; };
__device__ __forceinline__ f2 shfl_xor(f2 v, int o) {
  return f2{__shfl_xor_sync(0xffffffffu, v.a, o), __shfl_xor_sync(0xffffffffu, v.b, o)};
}
__device__ __forceinline__ f3 shfl_xor(f3 v, int o) {
  return f3{__shfl_xor_sync(0xffffffffu, v.a, o), __shfl_xor_sync(0xffffffffu, v.b, o),
            __shfl_xor_sync(0xffffffffu, v.c, o)};
}

template <typename T, typename F>
__device__ __forceinline__ T warp_reduce(T v, F comb) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = comb(v, shfl_xor(v, o));
  return v;
}

// Every thread of the block gets the result. `scratch` holds one T per warp; it is free again on return.
template <int NT, typename T, typename F>
__device__ __forceinline__ T block_reduce(T v, F comb, T* scratch) {
  v = warp_reduce(v, comb);
  if constexpr (NT <= 32) {
    return v;
  } else {
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = scratch[0];
#pragma unroll
    for (int i = 1; i < NT / 32; ++i) r = comb(r, scratch[i]);
    __syncthreads();
    return r;
  }
}

// Every thread of every CTA of the cluster gets the result (read through distributed shared memory).
template <int NT, int CL, typename T, typename F>
__device__ __forceinline__ T cluster_reduce(T v, F comb, T* scratch, T* slot) {
  v = block_reduce<NT>(v, comb, scratch);
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) *slot = v;
  cluster.sync();
  T r = *cluster.map_shared_rank(slot, 0);
#pragma unroll
  for (int i = 1; i < CL; ++i) r = comb(r, *cluster.map_shared_rank(slot, i));
  cluster.sync();  // no CTA overwrites its slot (or exits) while another still reads it
  return r;
}

// Launches `kernel` on a grid of clusters of `cl` CTAs along x. Non-zero when the device refuses.
template <typename K, typename... A>
inline int launch_clusters(K kernel, int cl, dim3 grid, int threads, size_t smem, cudaStream_t s, A... args) {
  if (cl > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
    return 3;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cl;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...) == cudaSuccess ? 0 : 3;
}

// Whether a tensor has the standard row-major strides of its shape (size-1 dims may have any stride).
inline bool contiguous(const kf_tensor& t) {
  int64_t expect = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}
inline int64_t numel(const kf_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// ---- this variant ----
using in_t = __nv_bfloat16;
using out_t = __nv_bfloat16;
using w_t = __nv_bfloat16;
using b_t = __nv_bfloat16;
constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_split = 3;
constexpr int st_shifted = 0, st_sumsq = 1, st_twopass = 2;
constexpr int k_strategy = s_split;
constexpr int k_stats = st_shifted;
constexpr int NT = 512;
constexpr int k_vec = 8;
constexpr int k_chunks = 4;
constexpr int k_cluster = 8;
constexpr int k_splits = 16;
constexpr bool k_reverse = true;
constexpr int k_unroll = 2;
constexpr bool k_stream_store = true;
constexpr bool k_group = true;
constexpr bool k_rms = false;
constexpr int k_num_groups = 32;
constexpr int k_normalized_dims = 1;
constexpr float k_eps = 1e-06f;
constexpr bool k_has_w = true;
constexpr bool k_has_b = true;
constexpr int k_n_inputs = 3;
constexpr int k_x_input = 0;
constexpr int k_w_input = 1;
constexpr int k_b_input = 2;

struct norm_args {
  const in_t* x;
  const w_t* w;
  const b_t* b;
  out_t* y;
  int64_t rows, n;          // rows of n elements: (sample, group) pairs, or normalized slices
  int64_t groups, cpg, hw;  // GroupNorm: groups, channels per group, elements per channel
  int64_t seg;              // cluster / split: elements per CTA
  int splits;
  float eps;
};

template <int V>
__device__ __forceinline__ void load_x(const norm_args& a, int64_t at, float* x) {
  load_vec<in_t, V>(a.x + at, x);
}

// The fused activation and casts after the norm.
__device__ __forceinline__ float finalize(float x) {
  return x;
}

// y = (x - mean) * rstd * w + b, then the activation: per channel for GroupNorm, per element otherwise.
template <int V>
__device__ __forceinline__ void apply(const norm_args& a, int64_t row, int64_t i, float mean, float rstd, float* x) {
  if constexpr (k_group) {
    // 32-bit division when the row allows it: a 64-bit one per vector made the apply pass issue-bound.
    const int64_t within = a.n <= 0xffffffffll ? (int64_t)((uint32_t)i / (uint32_t)a.hw) : i / a.hw;
    const int64_t c = (row % a.groups) * a.cpg + within;
    const float w = k_has_w ? to_f(a.w[c]) : 1.f, b = k_has_b ? to_f(a.b[c]) : 0.f;
    const float sc = rstd * w, sh = b - mean * sc;
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = finalize(x[v] * sc + sh);
  } else {
    float w[V], b[V];
#pragma unroll
    for (int v = 0; v < V; ++v) { w[v] = 1.f; b[v] = 0.f; }
    if constexpr (k_has_w) load_vec<w_t, V>(a.w + i, w);
    if constexpr (k_has_b) load_vec<b_t, V>(a.b + i, b);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = finalize((x[v] - mean) * rstd * w[v] + b[v]);
  }
}

// ---- statistics: (count, sum, sum of squares) records, added across threads ----
// stats=shifted sums x - shift, where shift is the row's first element (shared by every thread and block of the
// row): close to the mean in practice, so float sums of squares do not cancel (sumsq uses shift 0), and partial
// records still combine by plain addition.
__device__ __forceinline__ f3 comb_add(f3 p, f3 q) { return f3{p.a + q.a, p.b + q.b, p.c + q.c}; }

struct moments {
  float n = 0.f, s1 = 0.f, s2 = 0.f, shift = 0.f;
  template <int V> __device__ __forceinline__ void add(const float* x) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const float d = x[v] - shift;
      s1 += d;
      s2 += d * d;
    }
    n += V;
  }
  __device__ __forceinline__ f3 record() const { return f3{n, s1, s2}; }
};

template <int V>
__device__ __forceinline__ float row_shift(const norm_args& a, int64_t base) {
  if constexpr (k_stats == st_sumsq || k_rms) return 0.f;
  float x[1];
  load_x<1>(a, base, x);
  return x[0];
}

// (mean, 1/sqrt(var + eps)) from a combined record; RMSNorm uses the mean square instead of the variance.
__device__ __forceinline__ float2 finish_stats(f3 t, float shift, float eps) {
  const float m = t.b / t.a;
  const float var = fmaxf(t.c / t.a - m * m, 0.f);
  if constexpr (k_rms) return make_float2(0.f, rsqrtf(t.c / t.a + eps));
  else return make_float2(shift + m, rsqrtf(var + eps));
}

template <int STRAT> struct group {
  int tid, nthr;
  f3* scratch;
  f3* slot;
  template <typename F> __device__ __forceinline__ f3 reduce(f3 v, F comb) const {
    if constexpr (STRAT == s_warp) return warp_reduce(v, comb);
    else if constexpr (STRAT == s_cluster) return cluster_reduce<NT, k_cluster>(v, comb, scratch, slot);
    else return block_reduce<NT>(v, comb, scratch);
  }
};

// ---- one row (a group of GroupNorm, a normalized slice of LayerNorm/RMSNorm), or a segment of it ----
template <int V, int STRAT>
__device__ __forceinline__ void do_row(const norm_args& a, const group<STRAT>& g, int64_t row, int64_t lo, int64_t hi,
                                       int64_t seg_max) {
  const int64_t base = row * a.n;
  const int64_t span = (int64_t)g.nthr * V;
  float2 mr;
  if (seg_max <= (int64_t)k_chunks * span) {
    // The segment in registers: one read of x.
    float r[k_chunks][V];
    moments mo;
    mo.shift = row_shift<V>(a, base);
#pragma unroll
    for (int c = 0; c < k_chunks; ++c) {
      const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
      if (i < hi) {
        load_x<V>(a, base + i, r[c]);
        if constexpr (k_stats != st_twopass) mo.add<V>(r[c]);
      }
    }
    if constexpr (k_stats == st_twopass && !k_rms) {
      float s = 0.f, cnt = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
        if (lo + ((int64_t)c * g.nthr + g.tid) * V < hi) {
#pragma unroll
          for (int v = 0; v < V; ++v) s += r[c][v];
          cnt += V;
        }
      const f3 t = g.reduce(f3{cnt, s, 0.f}, comb_add);
      const float mean = t.b / t.a;
      float q = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
        if (lo + ((int64_t)c * g.nthr + g.tid) * V < hi) {
#pragma unroll
          for (int v = 0; v < V; ++v) q += (r[c][v] - mean) * (r[c][v] - mean);
        }
      const float var = g.reduce(f3{q, 0.f, 0.f}, comb_add).a / t.a;
      mr = make_float2(mean, rsqrtf(var + a.eps));
    } else if constexpr (k_stats == st_twopass) {
      float q = 0.f, cnt = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
        if (lo + ((int64_t)c * g.nthr + g.tid) * V < hi) {
#pragma unroll
          for (int v = 0; v < V; ++v) q += r[c][v] * r[c][v];
          cnt += V;
        }
      const f3 t = g.reduce(f3{cnt, q, 0.f}, comb_add);
      mr = make_float2(0.f, rsqrtf(t.b / t.a + a.eps));
    } else {
      mr = finish_stats(g.reduce(mo.record(), comb_add), mo.shift, a.eps);
    }
#pragma unroll
    for (int c = 0; c < k_chunks; ++c) {
      const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
      if (i < hi) {
        apply<V>(a, row, i, mr.x, mr.y, r[c]);
        store_vec<out_t, V, k_stream_store>(a.y + base + i, r[c]);
      }
    }
  } else {
    // Longer than the register cache: a statistics pass, then an apply pass that reads x again (from L2
    // when the row is small enough to stay there).
    moments mo;
    mo.shift = row_shift<V>(a, base);
#pragma unroll k_unroll
    for (int64_t i = lo + (int64_t)g.tid * V; i < hi; i += span) {
      float x[V];
      load_x<V>(a, base + i, x);
      mo.add<V>(x);
    }
    mr = finish_stats(g.reduce(mo.record(), comb_add), mo.shift, a.eps);
#pragma unroll k_unroll
    for (int64_t i = lo + (int64_t)g.tid * V; i < hi; i += span) {
      float x[V];
      load_x<V>(a, base + i, x);
      apply<V>(a, row, i, mr.x, mr.y, x);
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  }
}

template <int V>
__global__ void __launch_bounds__(NT) norm_kernel(norm_args a) {
  __shared__ f3 scratch[NT / 32];
  __shared__ f3 slot;
  if constexpr (k_strategy == s_warp) {
    const group<s_warp> g{(int)(threadIdx.x & 31), 32, scratch, &slot};
    for (int64_t row = (int64_t)blockIdx.x * (NT / 32) + (threadIdx.x >> 5); row < a.rows;
         row += (int64_t)gridDim.x * (NT / 32))
      do_row<V>(a, g, row, 0, a.n, a.n);
  } else if constexpr (k_strategy == s_cluster) {
    const group<s_cluster> g{(int)threadIdx.x, NT, scratch, &slot};
    const int64_t lo = min(a.n, (int64_t)blockIdx.x * a.seg), hi = min(a.n, lo + a.seg);
    for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) do_row<V>(a, g, row, lo, hi, a.seg);
  } else {  // block per row (also the split strategy's fallback when its scratch is too small)
    const group<s_block> g{(int)threadIdx.x, NT, scratch, &slot};
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) do_row<V>(a, g, row, 0, a.n, a.n);
  }
}

// ---- split: many blocks per row; partial statistics in a fixed device buffer, then an apply pass ----
constexpr int k_part_cap = 1 << 16;
__device__ f3 g_part[k_part_cap];

template <int V>
__global__ void __launch_bounds__(NT) stats_kernel(norm_args a) {
  __shared__ f3 scratch[NT / 32];
  const int64_t row = blockIdx.x / a.splits, s = blockIdx.x % a.splits;
  const int64_t lo = min(a.n, s * a.seg), hi = min(a.n, lo + a.seg), base = row * a.n;
  moments mo;
  mo.shift = row_shift<V>(a, base);
#pragma unroll k_unroll
  for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
    float x[V];
    load_x<V>(a, base + i, x);
    mo.add<V>(x);
  }
  const f3 t = block_reduce<NT>(mo.record(), comb_add, scratch);
  if (threadIdx.x == 0) g_part[blockIdx.x] = t;
}

template <int V>
__global__ void __launch_bounds__(NT) apply_kernel(norm_args a) {
  __shared__ f3 scratch[NT / 32];
  // In reverse, the first blocks to run take the data the stats pass read last, still in L2.
  const int64_t b = k_reverse ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int64_t row = b / a.splits, s = b % a.splits;
  const int64_t lo = min(a.n, s * a.seg), hi = min(a.n, lo + a.seg), base = row * a.n;
  f3 p{0.f, 0.f, 0.f};
  for (int j = threadIdx.x; j < a.splits; j += NT) p = comb_add(p, g_part[row * a.splits + j]);
  const float2 mr = finish_stats(block_reduce<NT>(p, comb_add, scratch), row_shift<V>(a, row * a.n), a.eps);
  const int64_t steps = (hi - lo + (int64_t)NT * V - 1) / ((int64_t)NT * V);
#pragma unroll k_unroll
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t i = lo + ((k_reverse ? steps - 1 - k : k) * NT + threadIdx.x) * V;
    if (i < hi) {
      float x[V];
      load_x<V>(a, base + i, x);
      apply<V>(a, row, i, mr.x, mr.y, x);
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  }
}

template <int V>
int run(norm_args a, cudaStream_t s) {
  const int64_t k_grid_cap = 1 << 22;
  if constexpr (k_strategy == s_split) {
    int64_t splits = k_splits;
    if (a.rows * splits > k_part_cap) splits = k_part_cap / a.rows;
    if (splits >= 2) {
      a.splits = (int)splits;
      a.seg = ((a.n + splits - 1) / splits + V - 1) / V * V;
      const unsigned blocks = (unsigned)(a.rows * splits);
      stats_kernel<V><<<blocks, NT, 0, s>>>(a);
      apply_kernel<V><<<blocks, NT, 0, s>>>(a);
      return cudaGetLastError() == cudaSuccess ? 0 : 3;
    }
  }
  if constexpr (k_strategy == s_warp) {
    const int64_t blocks = (a.rows + NT / 32 - 1) / (NT / 32);
    norm_kernel<V><<<(unsigned)(blocks < k_grid_cap ? blocks : k_grid_cap), NT, 0, s>>>(a);
  } else if constexpr (k_strategy == s_cluster) {
    a.seg = ((a.n + k_cluster - 1) / k_cluster + V - 1) / V * V;
    const dim3 grid(k_cluster, (unsigned)(a.rows < 65535 ? a.rows : 65535));
    if (launch_clusters(norm_kernel<V>, k_cluster, grid, NT, 0, s, a) != 0) return 3;
  } else {
    norm_kernel<V><<<(unsigned)(a.rows < k_grid_cap ? a.rows : k_grid_cap), NT, 0, s>>>(a);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  if (x.dtype != dtype_code<in_t>::value || x.ndim < 1 || !contiguous(x)) return 1;
  norm_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.eps = k_eps;
  const int64_t total = numel(x);
  int64_t wn;  // elements the weight and bias must hold
  if constexpr (k_group) {
    if (x.ndim < 2 || x.shape[1] % k_num_groups != 0) return 1;
    a.groups = k_num_groups;
    a.cpg = x.shape[1] / k_num_groups;
    a.hw = 1;
    for (int d = 2; d < x.ndim; ++d) a.hw *= x.shape[d];
    a.rows = x.shape[0] * k_num_groups;
    a.n = a.cpg * a.hw;
    wn = x.shape[1];
  } else {
    if (x.ndim < k_normalized_dims) return 1;
    a.n = 1;
    for (int d = x.ndim - k_normalized_dims; d < x.ndim; ++d) a.n *= x.shape[d];
    a.rows = a.n ? total / a.n : 0;
    wn = a.n;
  }
  bool vec_ok = a.n % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  if (k_group) vec_ok = vec_ok && a.hw % k_vec == 0;
  if (k_has_w) {
    const kf_tensor& w = in[k_w_input];
    if (w.dtype != dtype_code<w_t>::value || numel(w) != wn || !contiguous(w)) return 1;
    a.w = static_cast<const w_t*>(w.data);
    if (!k_group) vec_ok = vec_ok && aligned(a.w, vec_align<w_t, k_vec>());
  }
  if (k_has_b) {
    const kf_tensor& b = in[k_b_input];
    if (b.dtype != dtype_code<b_t>::value || numel(b) != wn || !contiguous(b)) return 1;
    a.b = static_cast<const b_t*>(b.data);
    if (!k_group) vec_ok = vec_ok && aligned(a.b, vec_align<b_t, k_vec>());
  }
  const kf_tensor& y = out[0];
  if (y.dtype != dtype_code<out_t>::value || !contiguous(y) || numel(y) != total) return 1;
  a.y = static_cast<out_t*>(y.data);
  vec_ok = vec_ok && aligned(a.y, vec_align<out_t, k_vec>());
  if (total == 0) return 0;
  return vec_ok ? run<k_vec>(a, s) : run<1>(a, s);
}

}  // namespace kfk

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));
}
