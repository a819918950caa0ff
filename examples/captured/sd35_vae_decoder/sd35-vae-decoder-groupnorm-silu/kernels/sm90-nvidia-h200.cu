// kforge kernel: family group_norm_cuda, version 6
// knobs: ahead=2 chunks=4 cluster=8 fit=0 l2_hint=1 lag_mb=0 publish=counter reverse=1 ring_kb=192 seg_kb=32 sm_blocks=0 splits=64 stages=2 stats=shifted strategy=stream stream_store=1 team_kb=96 team_l2=50 threads=256 unroll=4 vec=8
// computes: x[bfloat16] -> group_norm(groups=32, eps=1e-06) -> silu
// kforge winner: sd35-vae-decoder-groupnorm-silu on sm90-nvidia-h200
// found: by `kforge search` (template proposer) on 2026-12-02T10:18:05Z
// lineage: default
// measured: 188.08 us (geometric mean over gated cases), 20.05x eager
// re-emitted: by `kforge reemit` on 2026-12-02T13:52:49Z, group_norm_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T03:06:52Z, group_norm_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T15:29:39Z, group_norm_cuda version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T17:06:02Z, group_norm_cuda version 3 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:08:11Z, group_norm_cuda version 4 from version 3; knobs filled: fit=0 (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:55Z, group_norm_cuda version 4 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T21:48:40Z, group_norm_cuda version 5 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T08:56:10Z, group_norm_cuda version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T09:21:49Z, group_norm_cuda version 6 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T19:05:15Z, group_norm_cuda version 6 from version 6; measured above is the earlier kernel's

// cuda_prelude.cuh: the device helpers every CUDA family's kernel opens with, emitted after its header
// (cuda_emit.cpp): type conversions, 16-byte vector access, the multi-function unit's exp2 and reciprocal, reductions
// over a warp, a block and a cluster, launches with attributes (clusters, programmatic dependent launch), and checks
// of the tensors kf_launch receives.
#include "kf_abi.h"
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace kfk {

// ---- clusters (sm_90) ----
// The runtime's cluster intrinsics, the ones cooperative_groups' cluster_group wraps: without <cooperative_groups.h>,
// whose parsing took 2 of the ~4.3 s nvcc spent on each candidate (cudafe++ and cicc), so the search compiles twice
// as many candidates a minute.
__device__ __forceinline__ unsigned cluster_rank() { return __clusterRelativeBlockRank(); }
__device__ __forceinline__ void cluster_sync() {
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
}
// `p` (this CTA's shared memory) as CTA `rank` of the cluster holds it: distributed shared memory.
template <typename T>
__device__ __forceinline__ T* cluster_map(T* p, unsigned rank) {
  return static_cast<T*>(__cluster_map_shared_rank(p, rank));
}

// ---- cross-CTA flags ----
// A load that later loads cannot pass (acquire, GPU scope): a CTA polls another's counter or flag, then reads
// what was written before it was released (row_softmax's grid teams, group_norm's teams and row statistics).
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// ---- types ----
// clang-format off
template <typename T> struct dtype_code;
template <> struct dtype_code<float> { static constexpr int value = KF_FLOAT32; };
template <> struct dtype_code<__half> { static constexpr int value = KF_FLOAT16; };
template <> struct dtype_code<__nv_bfloat16> { static constexpr int value = KF_BFLOAT16; };
template <> struct dtype_code<double> { static constexpr int value = KF_FLOAT64; };
template <> struct dtype_code<bool> { static constexpr int value = KF_BOOL; };

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(double x) { return (float)x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(bool x) { return x ? 1.f : 0.f; }  // a masked_fill mask
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ double from_f<double>(float x) { return (double)x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
// clang-format on

// 16-bit pairs: two floats rounded in one instruction (the low half is the first value).
template <typename T>
struct pair_of {
  static constexpr bool ok = false;
};
template <>
struct pair_of<__nv_bfloat16> {
  static constexpr bool ok = true;
  using type = __nv_bfloat162;
  static __device__ __forceinline__ type make(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <>
struct pair_of<__half> {
  static constexpr bool ok = true;
  using type = __half2;
  static __device__ __forceinline__ type make(float a, float b) { return __floats2half2_rn(a, b); }
};

// ---- vector access: V consecutive elements in accesses of at most 16 bytes ----
// clang-format off
template <int B> struct raw_bits;
template <> struct raw_bits<2> { using type = unsigned short; };
template <> struct raw_bits<4> { using type = unsigned int; };
template <> struct raw_bits<8> { using type = uint2; };
template <> struct raw_bits<16> { using type = uint4; };
// clang-format on

// The alignment (bytes) a V-wide access of T needs.
template <typename T, int V>
constexpr int vec_align() {
  return V * (int)sizeof(T) > 16 ? 16 : V * (int)sizeof(T);
}

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

// V values of T as loaded, in V * sizeof(T) bytes of registers (16-bit values two a register), converted to float
// where used: values loaded early and used late cost half the registers of floats.
template <typename T, int V>
struct packed {
  static constexpr int B = V * (int)sizeof(T);
  static constexpr int W = B > 16 ? 16 : B;
  using R = typename raw_bits<W>::type;
  R r[B / W];
  __device__ __forceinline__ void load(const T* __restrict__ p) {
#pragma unroll
    for (int k = 0; k < B / W; ++k) r[k] = reinterpret_cast<const R*>(p)[k];
  }
  __device__ __forceinline__ void to_float(float* o) const {
    const T* t = reinterpret_cast<const T*>(r);
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = to_f(t[v]);
  }
};

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
    if constexpr (pair_of<T>::ok && V % 2 == 0) {  // one conversion instruction per two values
      auto* t2 = reinterpret_cast<typename pair_of<T>::type*>(&r);
#pragma unroll
      for (int v = 0; v < V / 2; ++v) t2[v] = pair_of<T>::make(x[2 * v], x[2 * v + 1]);
    } else {
      T* t = reinterpret_cast<T*>(&r);
#pragma unroll
      for (int v = 0; v < V; ++v) t[v] = from_f<T>(x[v]);
    }
    if constexpr (STREAM) __stcs(reinterpret_cast<R*>(p), r);
    else *reinterpret_cast<R*>(p) = r;
  }
}

// ---- the multi-function unit's exp2 and reciprocal, one instruction each ----
// The .ftz forms: without it each gets range fixes around it (measured on an H200: softcapped attention rows
// were issue-bound at 38 instructions per element, ncu 86 % issue slots busy). Results below 2^-126 become 0.
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float exp_ftz(float x) { return ex2_ftz(x * 1.44269504088896341f); }

// tanh(y) = 1 - 2 / (1 + exp(2y)): one ex2, one rcp (absolute error ~1e-7; +-inf give +-1, NaN stays NaN).
__device__ __forceinline__ float tanh_exp(float y) {
  return fmaf(-2.f, rcp_ftz(1.f + ex2_ftz(y * 2.88539008177792681f)), 1.f);
}
// softcap: cap * tanh(x / cap) = cap - 2 cap / (1 + exp(2 x / cap)), with k2 = 2 log2(e) / cap: five instructions.
__device__ __forceinline__ float softcap_exp(float x, float k2, float cap) {
  return fmaf(-2.f * cap, rcp_ftz(1.f + ex2_ftz(x * k2)), cap);
}
// The tanh.approx.f32 instruction (relative error ~5e-4: verify decides if that is enough).
__device__ __forceinline__ float tanh_approx(float y) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(y));
  return t;
}

__host__ __device__ __forceinline__ bool aligned(const void* p, int bytes) {
  return ((uintptr_t)p % (uintptr_t)bytes) == 0;
}

// ---- reductions over a warp, a block and a cluster, of small records of floats ----
// clang-format off
struct f2 { float a, b; };
struct f3 { float a, b, c; };
// clang-format on
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
// `warps`: the block's warps when it was launched with fewer than NT threads.
template <int NT, typename T, typename F>
__device__ __forceinline__ T block_reduce(T v, F comb, T* scratch, int warps = NT / 32) {
  v = warp_reduce(v, comb);
  if constexpr (NT <= 32) {
    return v;
  } else {
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = scratch[0];
#pragma unroll
    for (int i = 1; i < NT / 32; ++i)
      if (i < warps) r = comb(r, scratch[i]);
    __syncthreads();
    return r;
  }
}

// Every thread of every CTA of the cluster gets the result (read through distributed shared memory).
template <int NT, int CL, typename T, typename F>
__device__ __forceinline__ T cluster_reduce(T v, F comb, T* scratch, T* slot) {
  v = block_reduce<NT>(v, comb, scratch);
  if (threadIdx.x == 0) *slot = v;
  cluster_sync();
  T r = *cluster_map(slot, 0);
#pragma unroll
  for (int i = 1; i < CL; ++i) r = comb(r, *cluster_map(slot, i));
  cluster_sync();  // no CTA overwrites its slot (or exits) while another still reads it
  return r;
}

// Launches `kernel` with launch attributes (a cluster shape, a cooperative launch, PDL). Non-zero when the device
// refuses.
template <typename K, typename... A>
inline int launch_ex(const cudaLaunchAttribute* attrs, int n_attrs, K kernel, dim3 grid, int threads, size_t smem,
                     cudaStream_t s, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = const_cast<cudaLaunchAttribute*>(attrs);
  cfg.numAttrs = n_attrs;
  return cudaLaunchKernelEx(&cfg, kernel, args...) == cudaSuccess ? 0 : 3;
}
template <typename K, typename... A>
inline int launch_with(cudaLaunchAttribute attr, K kernel, dim3 grid, int threads, size_t smem, cudaStream_t s,
                       A... args) {
  return launch_ex(&attr, 1, kernel, grid, threads, smem, s, args...);
}

// ---- division by a divisor fixed at launch ----
// A multiply-high, an add and a shift (Granlund and Montgomery's magic numbers, as PyTorch's IntDivider): exact for
// 1 <= d <= 2^31 and 0 <= n < 2^31. A 32-bit `%` and `/` by a value read at run time are ~25 dependent instructions
// (I2F, MUFU.RCP, F2I and fix-ups; a 64-bit one some 70): row_softmax_cuda's mask offsets take one per leading dim the
// masks walk, adaptive_pool_cuda's outputs one per run-time size they are indexed by.
struct fast_div {
  uint32_t d = 1, mul = 1, shift = 0;
};
inline fast_div make_fast_div(uint32_t d) {
  fast_div f;
  f.d = d;
  while ((uint64_t{1} << f.shift) < d) ++f.shift;
  f.mul = (uint32_t)(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
  return f;
}
__host__ __device__ __forceinline__ uint32_t div_of(const fast_div& f, uint32_t n) {
#ifdef __CUDA_ARCH__
  const uint32_t t = __umulhi(n, f.mul);
#else
  const uint32_t t = (uint32_t)(((uint64_t)n * f.mul) >> 32);
#endif
  return (t + n) >> f.shift;
}

// ---- programmatic dependent launch (the `pdl` knob) ----
// Launched with PDL, a kernel's blocks may be scheduled while the kernel before it on the stream is still finishing
// (its last blocks exiting, its memory being flushed), so its own launch latency overlaps that tail. Every kernel
// so launched runs wait_prior_grid before its first access to global memory: griddepcontrol.wait returns once the
// grids it depends on have completed and their memory is visible. It never triggers its dependents early, so the
// next kernel on the stream starts as it would after any kernel.
template <bool PDL>
__device__ __forceinline__ void wait_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
inline cudaLaunchAttribute pdl_attr() {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return attr;
}

// kernel<<<grid, threads, smem, s>>>(args...), with PDL when asked. Non-zero on a launch error.
template <bool PDL, typename K, typename... A>
inline int launch_kernel(K kernel, dim3 grid, int threads, size_t smem, cudaStream_t s, A... args) {
  if constexpr (PDL) {
    const cudaLaunchAttribute attr = pdl_attr();
    return launch_ex(&attr, 1, kernel, grid, threads, smem, s, args...);
  } else {
    kernel<<<grid, threads, smem, s>>>(args...);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
  }
}

// Launches `kernel` on a grid of clusters of `cl` CTAs along x, with PDL when asked. Non-zero when the device
// refuses.
template <bool PDL = false, typename K, typename... A>
inline int launch_clusters(K kernel, int cl, dim3 grid, int threads, size_t smem, cudaStream_t s, A... args) {
  if (cl > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
    return 3;
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = cl;
  attrs[0].val.clusterDim.y = 1;
  attrs[0].val.clusterDim.z = 1;
  attrs[1] = pdl_attr();
  return launch_ex(attrs, PDL ? 2 : 1, kernel, grid, threads, smem, s, args...);
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

}  // namespace kfk

// ---- this variant ----
namespace kfk {

using in_t = __nv_bfloat16;
using out_t = __nv_bfloat16;
using w_t = __nv_bfloat16;
using b_t = __nv_bfloat16;
constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_split = 3, s_team = 4, s_stream = 5, s_ring = 6;
constexpr int st_shifted = 0, st_sumsq = 1, st_twopass = 2;
constexpr int k_strategy = s_stream;
constexpr int k_stats = st_shifted;
constexpr int NT = 256;
constexpr int k_vec = 8;
constexpr int k_chunks = 4;
constexpr int k_cluster = 8;
constexpr int k_splits = 64;
constexpr bool k_reverse = true;
constexpr int k_team_kb = 96;
constexpr int k_seg_kb = 32;
constexpr int k_ring_kb = 192;
constexpr int k_ahead = 2;
constexpr int k_lag_mb = 0;
constexpr int k_sm_blocks = 0;
constexpr int pub_counter = 0, pub_tagged = 1;
constexpr int k_stages = 2;
constexpr int k_publish = pub_counter;
constexpr bool k_l2_hint = true;
constexpr int k_team_l2 = 50;
constexpr int k_unroll = 4;
constexpr bool k_stream_store = true;
constexpr bool k_fit = false;
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
constexpr bool k_held_twopass = false;

// The casts before the norm, on values as loaded.
template <int V>
__device__ __forceinline__ void prologue_x(float* x) {
}

// The fused activation and casts after the norm.
__device__ __forceinline__ float finalize(float x) {
  x = x * rcp_ftz(1.f + exp_ftz(-x));
  return x;
}

}  // namespace kfk

// group_norm_cuda_rows.cuh: the first of group_norm_cuda's fixed files, emitted after the variant's constants, types,
// prologue casts and activation (group_norm_cuda.cpp): the arguments, the affine step, statistics, the per-row
// algorithm for each strategy and the split pair (a statistics pass, then an apply pass). Then come
// group_norm_cuda_grid.cuh, group_norm_cuda_ring.cuh and group_norm_cuda_launch.cuh.

namespace kfk {

struct norm_args {
  const in_t* x;
  const w_t* w;
  const b_t* b;
  out_t* y;
  int64_t rows, n;          // rows of n elements: (sample, group) pairs, or normalized slices
  int64_t groups, cpg, hw;  // GroupNorm: groups, channels per group, elements per channel
  int64_t seg;              // cluster / split / team / stream: elements per CTA or work item
  int splits;
  float eps;
};

// Loads V elements of x at `at` with the casts before the norm.
template <int V>
__device__ __forceinline__ void load_x(const norm_args& a, int64_t at, float* x) {
  load_vec<in_t, V>(a.x + at, x);
  prologue_x<V>(x);
}

// GroupNorm's channel c: its weight and bias (1 and 0 where the graph has none).
__device__ __forceinline__ float2 channel_wb(const norm_args& a, int64_t c) {
  return make_float2(k_has_w ? to_f(a.w[c]) : 1.f, k_has_b ? to_f(a.b[c]) : 0.f);
}

// A channel's (w, b) as one scale and shift: (x - mean) * rstd * w + b is x * sc + sh.
__device__ __forceinline__ float2 affine_of(float2 wb, float mean, float rstd) {
  const float sc = rstd * wb.x;
  return make_float2(sc, wb.y - mean * sc);
}

__device__ __forceinline__ float2 channel_affine(const norm_args& a, int64_t c, float mean, float rstd) {
  return affine_of(channel_wb(a, c), mean, rstd);
}

// The channel within its group of a row's element i (32-bit division when the row allows it: a 64-bit one per
// vector made the apply pass issue-bound).
__device__ __forceinline__ int64_t channel_in_row(const norm_args& a, int64_t i) {
  return a.n <= 0xffffffffll ? (int64_t)((uint32_t)i / (uint32_t)a.hw) : i / a.hw;
}

template <int V>
__device__ __forceinline__ void apply_uniform(float sc, float sh, float* x) {
#pragma unroll
  for (int v = 0; v < V; ++v) x[v] = finalize(x[v] * sc + sh);
}

// y = (x - mean) * rstd * w + b, then the activation: per channel for GroupNorm, per element otherwise.
template <int V>
__device__ __forceinline__ void apply(const norm_args& a, int64_t row, int64_t i, float mean, float rstd, float* x) {
  if constexpr (k_group) {
    const float2 t = channel_affine(a, (row % a.groups) * a.cpg + channel_in_row(a, i), mean, rstd);
    apply_uniform<V>(t.x, t.y, x);
  } else {
    float w[V], b[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      w[v] = 1.f;
      b[v] = 0.f;
    }
    if constexpr (k_has_w) load_vec<w_t, V>(a.w + i, w);
    if constexpr (k_has_b) load_vec<b_t, V>(a.b + i, b);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = finalize((x[v] - mean) * rstd * w[v] + b[v]);
  }
}

// GroupNorm over [lo, hi) of a row that one channel covers (channels are runs of hw elements; a segment shorter
// than a channel usually lies in one): the channel's scale and shift (channel_affine, as apply takes them), once
// for the range, so the loop over it needs no division and no weight or bias load per vector (the compiler
// cannot hoist those past the stores to y, which may alias them). false otherwise: apply per vector.
__device__ __forceinline__ bool uniform_affine(const norm_args& a, int64_t row, int64_t lo, int64_t hi, float mean,
                                               float rstd, float* sc, float* sh) {
  if constexpr (!k_group) {
    return false;
  } else {
    if (hi <= lo || lo / a.hw != (hi - 1) / a.hw) return false;
    const float2 t = channel_affine(a, (row % a.groups) * a.cpg + lo / a.hw, mean, rstd);
    *sc = t.x;
    *sh = t.y;
    return true;
  }
}

// ---- statistics: (count, sum, sum of squares) records, added across threads ----
// stats=shifted sums x - shift, where shift is the row's first element (shared by every thread and block of the
// row): close to the mean in practice, so float sums of squares do not cancel (sumsq uses shift 0), and partial
// records still combine by plain addition.
__device__ __forceinline__ f3 comb_add(f3 p, f3 q) { return f3{p.a + q.a, p.b + q.b, p.c + q.c}; }

struct moments {
  float n = 0.f, s1 = 0.f, s2 = 0.f, shift = 0.f;
  template <int V>
  __device__ __forceinline__ void add(const float* x) {
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

__device__ __forceinline__ float first_x(const norm_args& a, int64_t base) {
  float x[1];
  load_x<1>(a, base, x);
  return x[0];
}

template <int V>
__device__ __forceinline__ float row_shift(const norm_args& a, int64_t base) {
  if constexpr (k_stats == st_sumsq || k_rms) return 0.f;
  else return first_x(a, base);
}

// Adds x[base + i] for i in [from, hi), a vector per thread of the block per step, into `mo`.
template <int V>
__device__ __forceinline__ void add_block_range(const norm_args& a, int64_t base, int64_t from, int64_t hi,
                                                moments& mo) {
#pragma unroll k_unroll
  for (int64_t i = from + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
    float x[V];
    load_x<V>(a, base + i, x);
    mo.add<V>(x);
  }
}

// (mean, 1/sqrt(var + eps)) from a combined record; RMSNorm uses the mean square instead of the variance.
__device__ __forceinline__ float2 finish_stats(f3 t, float shift, float eps) {
  const float m = t.b / t.a;
  const float var = fmaxf(t.c / t.a - m * m, 0.f);
  if constexpr (k_rms) return make_float2(0.f, rsqrtf(t.c / t.a + eps));
  else return make_float2(shift + m, rsqrtf(var + eps));
}

template <int STRAT>
struct group {
  int tid, nthr;
  f3* scratch;
  f3* slot;
  template <typename F>
  __device__ __forceinline__ f3 reduce(f3 v, F comb) const {
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
    // The segment in registers: one read of x. GroupNorm: each vector's channel's w and b are loaded with it (a
    // vector lies in one channel), so the statistics and the reduction hide that load; loaded in the apply step,
    // each waited behind the stores before it (they may alias w and b).
    float r[k_chunks][V];
    float2 wb[k_group ? k_chunks : 1];
    const int64_t c_row = k_group ? (row % a.groups) * a.cpg : 0;
    // k_held_twopass (the family's held_twopass): stats=twopass, or x in float32 whatever `stats` says; the mean
    // is taken around the row's first element (a row of one value has an exact mean).
    moments mo;
    mo.shift = k_held_twopass && !k_rms ? first_x(a, base) : row_shift<V>(a, base);
#pragma unroll
    for (int c = 0; c < k_chunks; ++c) {
      const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
      if (i < hi) {
        load_x<V>(a, base + i, r[c]);
        if constexpr (k_group) wb[c] = channel_wb(a, c_row + channel_in_row(a, i));
        if constexpr (!k_held_twopass) mo.add<V>(r[c]);
      }
    }
    if constexpr (k_held_twopass && !k_rms) {
      float s = 0.f, cnt = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
        if (lo + ((int64_t)c * g.nthr + g.tid) * V < hi) {
#pragma unroll
          for (int v = 0; v < V; ++v) s += r[c][v] - mo.shift;
          cnt += V;
        }
      // Shifted by the row's first element: a row of one value has an exact mean, so x - mean is 0 there (its
      // 1/sqrt(eps) would magnify a mean off by an ulp).
      const f3 t = g.reduce(f3{cnt, s, 0.f}, comb_add);
      const float mean0 = mo.shift + t.b / t.a;
      // The second pass sums the deviations from mean0 too and corrects it (the corrected two-pass algorithm): the
      // first sum's float error grows with |mean - shift| x n (a row of 16384 values a mean 2 from its first value
      // put the mean 4e-7 off, 4 units of float32's tolerance where an output is near 0); the deviations' sum is
      // about sqrt(n) in size, its error 100s of times smaller. A row of one value still gives 0 deviations.
      float q = 0.f, d1 = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
        if (lo + ((int64_t)c * g.nthr + g.tid) * V < hi) {
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const float d = r[c][v] - mean0;
            d1 += d;
            q += d * d;
          }
        }
      const f3 u = g.reduce(f3{q, d1, 0.f}, comb_add);
      const float corr = u.b / t.a;
      const float mean = mean0 + corr, var = fmaxf(u.a / t.a - corr * corr, 0.f);
      mr = make_float2(mean, rsqrtf(var + a.eps));
    } else if constexpr (k_held_twopass) {
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
        if constexpr (k_group) {
          const float2 t = affine_of(wb[c], mr.x, mr.y);
          apply_uniform<V>(t.x, t.y, r[c]);
        } else {
          apply<V>(a, row, i, mr.x, mr.y, r[c]);
        }
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

// A warp, a block or a cluster of k_cluster CTAs per row; STRAT is the variant's strategy, or the per-row kernel
// that a grid strategy hands a launch to (launch.cuh: a block per row as the fallback, `fit`).
template <int V, int STRAT = k_strategy>
__global__ void __launch_bounds__(NT) norm_kernel(norm_args a) {
  __shared__ f3 scratch[NT / 32];
  __shared__ f3 slot;
  if constexpr (STRAT == s_warp) {
    const group<s_warp> g{(int)(threadIdx.x & 31), 32, scratch, &slot};
    for (int64_t row = (int64_t)blockIdx.x * (NT / 32) + (threadIdx.x >> 5); row < a.rows;
         row += (int64_t)gridDim.x * (NT / 32))
      do_row<V>(a, g, row, 0, a.n, a.n);
  } else if constexpr (STRAT == s_cluster) {
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
  add_block_range<V>(a, base, lo, hi, mo);
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

}  // namespace kfk

// group_norm_cuda_grid.cuh: the group_norm_cuda kernels that span the grid, each reading x from DRAM once however
// long a row is: `team` (co-resident blocks per row, the row held in shared memory, one cooperative launch) and
// `stream` (the apply step trailing the statistics by a few MiB, reading x back from L2, blocks taking work in ticket
// order); `stream`'s launch also starts `ring` (group_norm_cuda_ring.cuh), which keeps the segments in shared memory.
// Emitted after group_norm_cuda_rows.cuh, whose statistics helpers they use.

namespace kfk {

// ---- team: co-resident blocks (one cooperative launch), `tsize` of them per row. Each block keeps the first
// `hold` elements of its segment in shared memory from the statistics to the apply step, so a row far larger than
// one SM is read from DRAM once; the blocks of a team meet at a barrier in global memory once per row. ----
constexpr int k_team_cap = 8192;                 // blocks of one launch
__device__ f3 g_team_part[2][k_team_cap];        // partial records by row parity: a block is at most one row ahead
__device__ unsigned g_team_arrived[k_team_cap];  // per team: arrivals, counting up across its rows
__device__ unsigned g_team_left[k_team_cap];     // per team: blocks done; the last resets both for the next launch

// The sum of n records that other blocks wrote, for every lane of the calling warp; read through L2 (__ldcg), not
// L1, which may hold stale lines of them.
__device__ __forceinline__ f3 warp_sum_records(const f3* recs, int64_t n) {
  f3 p{0.f, 0.f, 0.f};
  for (int64_t j = threadIdx.x & 31; j < n; j += 32)
    p = comb_add(p, f3{__ldcg(&recs[j].a), __ldcg(&recs[j].b), __ldcg(&recs[j].c)});
  return warp_reduce(p, comb_add);
}

// Loads V elements of x, keeps a raw copy at `kept` (shared memory) and returns them as floats (before the prologue).
template <int V>
__device__ __forceinline__ void load_keep(const in_t* src, in_t* kept, float* x) {
  constexpr int B = V * (int)sizeof(in_t);
  if constexpr (B > 16) {
    load_keep<V / 2>(src, kept, x);
    load_keep<V / 2>(src + V / 2, kept + V / 2, x + V / 2);
  } else if constexpr (V == 1) {
    const in_t r = *src;
    *kept = r;
    x[0] = to_f(r);
  } else {
    using R = typename raw_bits<B>::type;
    const R r = *reinterpret_cast<const R*>(src);
    *reinterpret_cast<R*>(kept) = r;
    const in_t* t = reinterpret_cast<const in_t*>(&r);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = to_f(t[v]);
  }
}

// ---- the Hopper bulk copy (TMA, 1-D): global -> shared memory, completion counted in bytes on an mbarrier ----
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n waiting:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra waiting;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// The same with an L2 eviction priority for the lines read (a createpolicy value): a hint on this access only, no
// state left in the device's configuration.
__device__ __forceinline__ void bulk_load_hint(void* dst, const void* src, unsigned bytes, uint64_t* bar,
                                               uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

__device__ __forceinline__ uint64_t l2_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}

__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// GroupNorm's channels a team block's segment spans, per row: their (scale, shift) in shared memory, so that the
// apply loop neither divides its index by hw nor loads w and b per vector (a load the compiler cannot hoist past the
// stores to y, which may alias w and b: each vector's division, w and b loads, math and store ran one after
// another). Thread j loads channel j's w and b when its row starts, so the statistics and the team's barrier hide
// that load; the table is filled once the row's mean and rstd are in. A segment spanning more channels than the
// table or the block's threads applies per vector as before.
constexpr int k_team_chan = 128;

// x / d and x % d for a row's indices, in 32-bit arithmetic where both fit (a 64-bit division is a long subroutine).
__device__ __forceinline__ void row_divmod(int64_t x, int64_t d, int64_t* q, int64_t* r) {
  if (x <= 0xffffffffll && d <= 0xffffffffll) {
    const uint32_t q32 = (uint32_t)x / (uint32_t)d;
    *q = q32;
    *r = (int64_t)((uint32_t)x - q32 * (uint32_t)d);
  } else {
    *q = x / d;
    *r = x - *q * d;
  }
}

// The kept part of a segment arrives in up to k_team_parts bulk copies, each with its own mbarrier, so the
// statistics start on the first part while the others are still in flight.
constexpr int k_team_parts = 8;

// At most 64 registers a thread whatever NT (1024 threads an SM): the 48 KiB variants fit 4 blocks an SM. The channel
// table's registers took a 256-thread block from 64 to 80 (3 an SM).
template <int V>
__global__ void __launch_bounds__(NT, 1024 / NT) team_kernel(norm_args a, int tsize, int teams, int64_t hold) {
  extern __shared__ __align__(128) unsigned char team_smem[];
  in_t* kept = reinterpret_cast<in_t*>(team_smem);
  __shared__ f3 scratch[NT / 32];
  __shared__ float2 row_stats;
  __shared__ float2 chan[k_group ? k_team_chan : 1];  // the segment's channels' (scale, shift), GroupNorm
  __shared__ __align__(8) uint64_t bars[k_team_parts];
  const int team = blockIdx.x / tsize, b = blockIdx.x % tsize;
  const int64_t lo = min(a.n, (int64_t)b * a.seg), hi = min(a.n, lo + a.seg), kept_hi = min(hi, lo + hold);
  // Bulk copies move 16-byte units between 16-byte aligned addresses: whole vectors of V elements when V
  // elements are 16 bytes (the launch checked x's alignment and n % V for this V).
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  const int64_t kept_n = kept_hi - lo;
  const int parts = (int)min((int64_t)k_team_parts, max((int64_t)1, kept_n * (int64_t)sizeof(in_t) / 16384));
  const int64_t part_n = ((kept_n + parts - 1) / parts + V - 1) / V * V;
  if (k_bulk && threadIdx.x == 0) {
    for (int p = 0; p < k_team_parts; ++p) mbar_init(&bars[p]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // GroupNorm: the segment's channels [c_lo, c_lo + tab_n) (tab_n 0: no table), and each thread's place in them,
  // stepped without division: channel c0 and offset r0 of its first vector, dc channels and dr elements a step.
  constexpr int k_tab_cap = k_team_chan < NT ? k_team_chan : NT;
  const int64_t step = (int64_t)NT * V, first = lo + (int64_t)threadIdx.x * V;
  int64_t c_lo = 0;
  int tab_n = 0, c0 = 0, r0 = 0, dc = 0, dr = 0;
  if constexpr (k_group) {
    int64_t c_last, q, r;
    row_divmod(lo, a.hw, &c_lo, &r);
    row_divmod(hi > lo ? hi - 1 : lo, a.hw, &c_last, &r);
    if (hi > lo && c_last - c_lo < k_tab_cap && a.hw <= 0x3fffffffll && step <= 0x3fffffffll) {  // rem + dr fits an int
      tab_n = (int)(c_last - c_lo + 1);  // the same for the whole block
      row_divmod(first, a.hw, &q, &r);
      c0 = (int)(q - c_lo);  // past the table only for a thread with no vector in the segment
      r0 = (int)r;
      row_divmod(step, a.hw, &q, &r);
      dc = (int)q;
      dr = (int)r;
    }
  }
  unsigned round = 0;
  for (int64_t row = team; row < a.rows; row += teams, ++round) {
    const int64_t base = row * a.n;
    float2 twb = make_float2(1.f, 0.f);  // this thread's table channel's w and b, loaded ahead of the statistics
    if constexpr (k_group)
      if ((int)threadIdx.x < tab_n) twb = channel_wb(a, (row % a.groups) * a.cpg + c_lo + threadIdx.x);
    moments mo;
    mo.shift = row_shift<V>(a, base);
    if constexpr (k_bulk) {
      __syncthreads();  // every thread is done reading the previous row's kept part
      if (threadIdx.x == 0 && kept_n > 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        for (int p = 0; p < parts; ++p) {
          const int64_t p_lo = min(kept_n, (int64_t)p * part_n), p_n = min(kept_n, p_lo + part_n) - p_lo;
          const unsigned bytes = (unsigned)(p_n * (int64_t)sizeof(in_t));
          mbar_expect(&bars[p], bytes);
          if (bytes) bulk_load(kept + p_lo, a.x + base + lo + p_lo, bytes, &bars[p]);
        }
      }
      for (int p = 0; p < parts && kept_n > 0; ++p) {
        const int64_t p_lo = min(kept_n, (int64_t)p * part_n), p_hi = min(kept_n, p_lo + part_n);
        mbar_wait(&bars[p], round & 1);
#pragma unroll k_unroll
        for (int64_t j = p_lo + (int64_t)threadIdx.x * V; j < p_hi; j += (int64_t)NT * V) {
          float x[V];
          load_vec<in_t, V>(kept + j, x);
          prologue_x<V>(x);
          mo.add<V>(x);
        }
      }
    } else {
#pragma unroll k_unroll
      for (int64_t i = lo + (int64_t)threadIdx.x * V; i < kept_hi; i += (int64_t)NT * V) {
        float x[V];
        load_keep<V>(a.x + base + i, kept + (i - lo), x);
        prologue_x<V>(x);
        mo.add<V>(x);
      }
    }
    add_block_range<V>(a, base, kept_hi, hi, mo);  // what does not fit in shared memory is read twice
    const f3 t = block_reduce<NT>(mo.record(), comb_add, scratch);
    if (threadIdx.x == 0) {
      g_team_part[round & 1][blockIdx.x] = t;
      __threadfence();
      atomicAdd(&g_team_arrived[team], 1u);
      const unsigned target = (round + 1) * (unsigned)tsize;
      while ((int)(ld_acquire(&g_team_arrived[team]) - target) < 0) __nanosleep(32);
    }
    __syncthreads();
    if (threadIdx.x < 32) {  // the row's statistics from the team's records
      const f3 p = warp_sum_records(&g_team_part[round & 1][team * tsize], tsize);
      if (threadIdx.x == 0) row_stats = finish_stats(p, mo.shift, a.eps);
    }
    __syncthreads();
    const float2 mr = row_stats;  // rewritten only after the next row's block_reduce, which every thread reaches
    if (tab_n > 0) {              // the table (rewritten, like row_stats, only after the next row's barriers)
      if ((int)threadIdx.x < tab_n) chan[threadIdx.x] = affine_of(twb, mr.x, mr.y);
      __syncthreads();
    }
    int c = c0, rem = r0;
#pragma unroll k_unroll
    for (int64_t i = first; i < hi; i += step) {
      float x[V];  // the kept part is complete: every thread waited for it (bulk) or wrote its own (else)
      if (i < kept_hi) load_vec<in_t, V>(kept + (i - lo), x), prologue_x<V>(x);
      else load_x<V>(a, base + i, x);
      if (tab_n > 0) {
        const float2 t = chan[c];
        apply_uniform<V>(t.x, t.y, x);
        c += dc;
        rem += dr;
        if (rem >= (int)a.hw) rem -= (int)a.hw, ++c;
      } else {
        apply<V>(a, row, i, mr.x, mr.y, x);
      }
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  }
  if (threadIdx.x == 0) {  // every block of the team is past its last barrier once all have counted themselves out
    __threadfence();
    if (atomicAdd(&g_team_left[team], 1u) == (unsigned)tsize - 1) {
      g_team_arrived[team] = 0;
      g_team_left[team] = 0;
      __threadfence();
    }
  }
}

// What a grid-wide kernel was sized for, per vector width: the device, its SMs and L2, the blocks an SM holds with
// `smem` bytes of dynamic shared memory. At namespace scope with internal linkage: a template's function-local
// static would be one object shared by every candidate library in the process (STB_GNU_UNIQUE).
struct grid_setup {
  int dev = -1, sms = 0, per_sm = 0, l2 = 0;
  size_t smem = 0;
};
static grid_setup g_team_setup[2];

// The team launch: as many blocks as fit on the device at once (k_team_kb KiB of shared memory each), split into
// teams. A team takes rows one after another; each round costs its segment's bytes plus a fixed latency (a
// barrier, the first bytes' round trip: ~32 KB of one SM's share of DRAM bandwidth), so few long rows get big teams
// and many short rows get many small teams. -1 when the device cannot launch it (the caller falls back to a block
// per row), 3 on a launch error.
template <int V>
int launch_team(norm_args a, cudaStream_t s) {
  grid_setup& su = g_team_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  const size_t want = (size_t)k_team_kb * 1024;
  if (dev != su.dev) {
    int coop = 0;
    if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaFuncSetAttribute(team_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)want) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, team_kernel<V>, NT, want) != cudaSuccess || !coop) {
      cudaGetLastError();
      return -1;
    }
    su.dev = dev;
  }
  const int64_t resident = min((int64_t)su.per_sm * su.sms, (int64_t)k_team_cap);
  if (resident < 1) return -1;
  const int64_t es = sizeof(in_t), per_block = (int64_t)want / es;
  const int64_t t_min = (a.n + per_block - 1) / per_block;  // blocks whose shared memory holds a row
  const int64_t t_max = max((int64_t)1, (a.n + (int64_t)NT * V - 1) / ((int64_t)NT * V));  // a vector per thread
  int64_t teams = 1;
  double best = 0.0;
  for (int64_t k = 1; k <= min(a.rows, resident); ++k) {
    const int64_t t = min(resident / k, t_max);
    if (t < min(t_min, t_max)) break;
    const double rounds = (double)((a.rows + k - 1) / k), seg_bytes = (double)((a.n + t - 1) / t * es);
    const double cost = rounds * (seg_bytes + 32768.0);
    if (k == 1 || cost < best * (1.0 - 1e-9)) best = cost, teams = k;
  }
  const int64_t tsize = min(resident / teams, t_max);
  a.seg = ((a.n + tsize - 1) / tsize + V - 1) / V * V;
  const int64_t hold = min(a.seg, per_block / V * V);
  const size_t smem = (size_t)((hold * es + 15) / 16 * 16);
  cudaLaunchAttribute coop = {};
  coop.id = cudaLaunchAttributeCooperative;  // co-residency guaranteed, or the launch fails: never a hang
  coop.val.cooperative = 1;
  return launch_with(coop, team_kernel<V>, dim3((unsigned)(teams * tsize)), NT, smem, s, a, (int)tsize, (int)teams,
                     hold);
}

// ---- stream: the row cut into segments of k_seg_kb KiB; a statistics item per segment, then an apply item per
// segment trailing the statistics by `lag` segments (a row, the grid, plus k_lag_mb MiB), so the apply step reads x
// back from L2 and DRAM sees x once. Blocks take items in ticket order from one counter: statistics items never
// wait, an apply item waits only for its row's statistics, whose items all hold earlier tickets. A block holds its
// current ticket and the next one (fetched, and its segment's bulk copy started, while the current item runs); a
// held ticket is always later than its holder's current one, so the earliest current item never waits on an
// unfinished ticket: the launch cannot hang whatever the grid or the scheduler. The row's last statistics item
// finishes the row's (mean, rstd) for its apply items; the last block out resets the counters for the next launch.
__device__ float2 g_row_mr[k_part_cap];
__device__ unsigned g_row_done[k_part_cap];   // statistics items done, per row
__device__ unsigned g_row_ready[k_part_cap];  // 1 once g_row_mr holds the row's statistics
__device__ unsigned g_stream_ticket, g_stream_out;

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Ticket t -> (statistics?, segment): `lag` statistics items, then apply and statistics alternating, then the
// last `lag` apply items: the apply item of segment g comes right before the statistics item of segment g + lag.
__device__ __forceinline__ int64_t stream_item(int64_t t, int64_t total, int64_t lag, bool* stats) {
  if (t < lag) return *stats = true, t;
  const int64_t u = t - lag;
  if (u < 2 * (total - lag)) return *stats = (u & 1), (u & 1) ? lag + u / 2 : u / 2;
  return *stats = false, total - lag + (u - 2 * (total - lag));
}

// ---- publish=tagged: a statistics item stores its record as three 64-bit words, each (the launch's epoch, a
// float's bits) and single-copy atomic, so a record is complete once all three words carry the epoch. No fence, no
// counter and no last item finishing the row: each apply item sums its row's records itself (the same records in
// the same order, so every item of a row gets the same statistics). Records left by an earlier launch carry an
// earlier epoch (the last block out advances g_stream_epoch; zeroed memory is epoch 0, and launches count from 1),
// so nothing is reset between launches, and a CUDA graph replays with the epoch it finds in device memory.
__device__ unsigned long long g_stream_rec[k_part_cap][3];
__device__ unsigned g_stream_epoch;

__device__ __forceinline__ void st_relaxed_u64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void post_tagged(int64_t g, f3 p, unsigned epoch) {
  const unsigned long long e = (unsigned long long)epoch << 32;
  st_relaxed_u64(&g_stream_rec[g][0], e | __float_as_uint(p.a));
  st_relaxed_u64(&g_stream_rec[g][1], e | __float_as_uint(p.b));
  st_relaxed_u64(&g_stream_rec[g][2], e | __float_as_uint(p.c));
}

// The sum of the n tagged records from `first` on, for every lane of the calling warp, once each carries `epoch`:
// four records a lane in flight at a time (a poll is one round trip to L2, not one per record), added in the order
// warp_sum_records adds them.
__device__ __forceinline__ f3 warp_sum_tagged(int64_t first, int64_t n, unsigned epoch) {
  constexpr int R = 4;
  const int lane = threadIdx.x & 31;
  f3 p{0.f, 0.f, 0.f};
  for (int64_t j0 = 0; j0 < n; j0 += 32 * R) {
    unsigned long long w[R][3];
    for (;;) {
      bool ready = true;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = j0 + r * 32 + lane;
#pragma unroll
        for (int k = 0; k < 3; ++k) w[r][k] = j < n ? ld_relaxed_u64(&g_stream_rec[first + j][k]) : 0ull;
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int k = 0; k < 3; ++k) ready = ready && (j0 + r * 32 + lane >= n || (unsigned)(w[r][k] >> 32) == epoch);
      if (ready) break;
      __nanosleep(64);
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (j0 + r * 32 + lane < n)
        p = comb_add(p, f3{__uint_as_float((unsigned)w[r][0]), __uint_as_float((unsigned)w[r][1]),
                           __uint_as_float((unsigned)w[r][2])});
  }
  return warp_reduce(p, comb_add);
}

// A statistics item: segment [lo, hi) of `row` (segment g of the tensor), read through load(i, x), reduced into
// its partial record. publish=counter: the row's last item (`*last`, shared) sums the records into (mean, rstd) and
// publishes them; publish=tagged: the record is posted with the launch's epoch, and that is all.
template <int V, typename L>
__device__ __forceinline__ void segment_stats(const norm_args& a, int64_t g, int64_t row, int64_t lo, int64_t hi,
                                              int64_t segs, L load, f3* scratch, bool* last, unsigned epoch) {
  const int64_t base = row * a.n;
  moments mo;
  mo.shift = row_shift<V>(a, base);
#pragma unroll k_unroll
  for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
    float x[V];
    load(i, x);
    mo.add<V>(x);
  }
  const f3 p = block_reduce<NT>(mo.record(), comb_add, scratch);
  if constexpr (k_publish == pub_tagged) {
    if (threadIdx.x == 0) post_tagged(g, p, epoch);
    return;
  }
  if (threadIdx.x == 0) {
    g_part[g] = p;
    __threadfence();
    *last = atomicAdd(&g_row_done[row], 1u) == (unsigned)segs - 1;
  }
  __syncthreads();
  if (*last && threadIdx.x < 32) {  // the row's last statistics item: every record of the row is written
    __threadfence();
    const f3 q = warp_sum_records(&g_part[row * segs], segs);
    if (threadIdx.x == 0) {
      g_row_mr[row] = finish_stats(q, mo.shift, a.eps);
      __threadfence();
      st_release(&g_row_ready[row], 1u);
    }
  }
}

// One thread: waits for the row's statistics (published by its last statistics item) and returns them.
__device__ __forceinline__ float2 wait_row_stats(int64_t row) {
  while (ld_acquire(&g_row_ready[row]) == 0) __nanosleep(64);
  return __ldcg(&g_row_mr[row]);
}

// An apply item: y over segment [lo, hi) of `row` from x read through load(i, x), with the row's (mean, rstd).
template <int V, typename L>
__device__ __forceinline__ void segment_apply(const norm_args& a, int64_t row, int64_t lo, int64_t hi, float2 mr,
                                              L load) {
  const int64_t base = row * a.n;
  // One loop, instantiated twice: with the segment's affine hoisted, or per vector.
  auto each = [&](auto affine) {
#pragma unroll k_unroll
    for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
      float x[V];
      load(i, x);
      affine(i, x);
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  };
  float sc, sh;
  if (uniform_affine(a, row, lo, hi, mr.x, mr.y, &sc, &sh))
    each([&](int64_t, float* x) { apply_uniform<V>(sc, sh, x); });
  else each([&](int64_t i, float* x) { apply<V>(a, row, i, mr.x, mr.y, x); });
}

// With 16-byte vectors each segment comes into shared memory in one bulk copy, into k_stages stages a block: the
// copies of the block's next k_stages - 1 tickets run while the current item is reduced or applied; otherwise the
// threads load x themselves.
template <int V>
__global__ void __launch_bounds__(NT) stream_kernel(norm_args a, int64_t lag) {
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  extern __shared__ __align__(128) unsigned char stream_smem[];
  __shared__ f3 scratch[NT / 32];
  __shared__ unsigned tickets[k_stages];
  __shared__ __align__(8) uint64_t bars[k_stages];
  __shared__ bool last;
  __shared__ float2 row_stats;
  __shared__ unsigned epoch;
  const int64_t segs = a.splits, total = a.rows * segs, end = 2 * total;
  in_t* const stages = reinterpret_cast<in_t*>(stream_smem);  // stage k at stages + k * a.seg
  // Thread 0: take a ticket into slot k and start the copy of its segment.
  auto take = [&](int k) {
    const unsigned t = atomicAdd(&g_stream_ticket, 1u);
    tickets[k] = t;
    if (!k_bulk || t >= end) return;
    bool st;
    const int64_t g = stream_item(t, total, lag, &st), lo = min(a.n, (g % segs) * a.seg);
    const unsigned bytes = (unsigned)((min(a.n, lo + a.seg) - lo) * (int64_t)sizeof(in_t));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // earlier reads of the stage come first
    mbar_expect(&bars[k], bytes);
    // k_l2_hint: the statistics read keeps the segment in L2 ahead of the output stream (evict last) until its
    // apply item, the last read, lets it go (evict first).
    if constexpr (k_l2_hint)
      bulk_load_hint(stages + k * a.seg, a.x + (g / segs) * a.n + lo, bytes, &bars[k],
                     st ? l2_evict_last() : l2_evict_first());
    else bulk_load(stages + k * a.seg, a.x + (g / segs) * a.n + lo, bytes, &bars[k]);
  };
  if (threadIdx.x == 0) {
    if (k_bulk) {
      for (int k = 0; k < k_stages; ++k) mbar_init(&bars[k]);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (k_publish == pub_tagged) {  // 0 is what never-written records carry: skipped when it wraps
      const unsigned e = *(volatile unsigned*)&g_stream_epoch + 1u;
      epoch = e == 0 ? 1u : e;
    }
    for (int k = 0; k + 1 < k_stages; ++k) take(k);
  }
  __syncthreads();
  for (unsigned it = 0;; ++it) {
    const int k = (int)(it % k_stages);
    const int64_t t = tickets[k];
    if (t >= end) break;  // the tickets this block took after t are later still: none has a copy in flight
    // The stage of the last item, released by the barrier that ended it (a later ticket than any the block holds).
    if (threadIdx.x == 0) take((int)((it + k_stages - 1) % k_stages));
    bool stats;
    const int64_t g = stream_item(t, total, lag, &stats);
    const int64_t row = g / segs, lo = min(a.n, (g % segs) * a.seg), hi = min(a.n, lo + a.seg), base = row * a.n;
    if (k_bulk) mbar_wait(&bars[k], (it / k_stages) & 1);
    // Element i of the segment, from the stage or from x.
    auto load = [&](int64_t i, float* x) {
      if constexpr (k_bulk) load_vec<in_t, V>(stages + k * a.seg + (i - lo), x), prologue_x<V>(x);
      else load_x<V>(a, base + i, x);
    };
    if (stats) {
      segment_stats<V>(a, g, row, lo, hi, segs, load, scratch, &last, epoch);
    } else {
      if constexpr (k_publish == pub_tagged) {
        if (threadIdx.x < 32) {
          const float shift = row_shift<V>(a, base);
          const f3 q = warp_sum_tagged(row * segs, segs, epoch);
          if (threadIdx.x == 0) row_stats = finish_stats(q, shift, a.eps);
        }
      } else {
        if (threadIdx.x == 0) row_stats = wait_row_stats(row);
      }
      __syncthreads();
      segment_apply<V>(a, row, lo, hi, row_stats, load);  // row_stats is rewritten only after two barriers
    }
    __syncthreads();  // the stage is free again, and the next ticket is in
  }
  if (threadIdx.x == 0) {  // every block took its last ticket before counting itself out
    __threadfence();
    last = atomicAdd(&g_stream_out, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    if constexpr (k_publish == pub_tagged) {
      if (threadIdx.x == 0) g_stream_epoch = epoch;  // every block read the old one when it started
    } else {
      for (int64_t r = threadIdx.x; r < a.rows; r += NT) g_row_done[r] = 0, g_row_ready[r] = 0;
    }
    if (threadIdx.x == 0) g_stream_ticket = 0, g_stream_out = 0;
    __threadfence();
  }
}

static grid_setup g_stream_setup[2];  // per vector width: k_stages stages of a segment a block

template <int V>
int launch_ring(norm_args a, cudaStream_t s);  // group_norm_cuda_ring.cuh: strategy=ring, over stream's segments

// As many blocks as run at once (more would only queue for tickets), at most k_sm_blocks an SM when set. -1 when the
// shape does not fit the counters or the device cannot run the kernel (the caller falls back to a block per row), 3 on
// a launch error.
template <int V>
int launch_stream(norm_args a, cudaStream_t s) {
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  if (a.rows > k_part_cap) return -1;
  const int64_t es = sizeof(in_t);
  int64_t seg = max((int64_t)V, (int64_t)k_seg_kb * 1024 / es / V * V);
  int64_t segs = (a.n + seg - 1) / seg;
  if (a.rows * segs > k_part_cap) {  // fewer, longer segments
    seg = ((a.n + k_part_cap / a.rows - 1) / (k_part_cap / a.rows) + V - 1) / V * V;
    segs = (a.n + seg - 1) / seg;
  }
  const size_t smem = k_bulk ? (size_t)(k_stages * seg * es) : 0;
  grid_setup& su = g_stream_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  if (dev != su.dev || smem != su.smem) {
    if (cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&su.l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess ||
        cudaFuncSetAttribute(stream_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, stream_kernel<V>, NT, smem) != cudaSuccess ||
        su.per_sm < 1) {
      cudaGetLastError();
      su.dev = -1;
      return -1;
    }
    su.dev = dev;
    su.smem = smem;
  }
  // A tensor that fits in k_team_l2 % of L2 goes to the team kernel instead: L2 keeps all of x between the two
  // passes anyway, and the team's shorter critical path wins where latency, not bandwidth, bounds the run.
  if (k_team_l2 > 0 && a.rows * a.n * es * 100 <= (int64_t)k_team_l2 * su.l2) {
    const int rc = launch_team<V>(a, s);
    if (rc >= 0) return rc;
  }
  a.seg = seg;
  a.splits = (int)segs;
  if constexpr (k_strategy == s_ring) {  // the segments held in shared memory where the device has room for them
    const int rc = launch_ring<V>(a, s);
    if (rc >= 0) return rc;
  }
  const int64_t total = a.rows * segs;
  const int per_sm = k_sm_blocks > 0 && k_sm_blocks < su.per_sm ? k_sm_blocks : su.per_sm;
  const int64_t blocks = min(2 * total, (int64_t)per_sm * su.sms);
  // The apply item of segment g is taken `lag` statistics tickets after segment g's: past a whole row, past the
  // statistics items still running or held (k_stages - 1 a block), plus k_lag_mb MiB of slack, so it rarely waits.
  const int64_t lag = min(total, segs + blocks * (k_stages - 1) + ((int64_t)k_lag_mb << 20) / (seg * es));
  stream_kernel<V><<<(unsigned)blocks, NT, smem, s>>>(a, lag);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace kfk

// group_norm_cuda_ring.cuh: group_norm_cuda's `ring` kernel: the stream kernel's ticket order, but a block keeps
// each segment it takes in a ring of shared-memory slots from its statistics to its apply step, across rows, so x is
// read from DRAM once and never again from L2, whatever the tensor's size (as `team`, whose blocks serialize load,
// barrier and store of one row at a time). Emitted after group_norm_cuda_grid.cuh, whose bulk copies, counters and
// segment items it uses.

namespace kfk {

// ---- ring: tickets are segments in row order, taken from one counter (dealing them round robin instead, with no
// atomics, measured slower on an H200: 123.7 against 113.3 us at SD3.5 256x512). Each block has NT compute threads
// and one control warp. The control warp takes tickets into the free slots of the block's ring, starts their bulk
// copies, and hands the
// compute threads one operation at a time through a queue in shared memory: reduce a slot (its statistics), or
// apply the oldest reduced slot, from shared memory, once its row's statistics are in. It also does everything that
// waits on global memory (tickets; posting each slot's partial record and counting it into its row, the row's last
// one finishing the row; waiting for rows), so the compute threads only read shared memory, reduce and store y.
// A slot is reduced once the copies of k_ahead later slots are in flight, or nothing else is left. The control warp
// waits on a row only when every slot its block holds is reduced and posted, so with the grid co-resident (a
// cooperative launch) and blocks x slots at least a row's segments the launch cannot hang: were every block
// waiting, all held segments, and the first untaken one, would lie in one row (docs/kernel-notes.md). The last
// block out resets the counters, as stream's. ----
constexpr int k_ring_slots = 32;  // most slots a block
constexpr int k_ring_queue = 4;   // operations handed to the compute threads ahead of their completion
constexpr int op_stats = 0, op_apply = 1, op_end = 2;

struct ring_op {
  int kind, slot;
  unsigned ticket, parity;  // the slot's segment; the parity its copy completes with
  float2 mr;                // op_apply: the row's (mean, rstd)
};

__device__ __forceinline__ void mbar_init_count(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// A barrier of the NT compute threads alone (the control warp is elsewhere).
__device__ __forceinline__ void compute_sync() { asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory"); }

__device__ __forceinline__ void ring_segment(const norm_args& a, unsigned t, int64_t* row, int64_t* lo, int64_t* hi) {
  *row = t / a.splits;
  *lo = min(a.n, (int64_t)(t % a.splits) * a.seg);
  *hi = min(a.n, *lo + a.seg);
}

// The compute threads: the queue's operations in order, until op_end.
template <int V>
__device__ __forceinline__ void ring_compute(const norm_args& a, in_t* ring, ring_op* ops, f3* recs, uint64_t* full,
                                             uint64_t* op_ready, uint64_t* op_done, f3* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (unsigned n = 0;; ++n) {
    const int q = (int)(n % k_ring_queue);
    mbar_wait(&op_ready[q], (n / k_ring_queue) & 1);
    const ring_op o = ops[q];
    if (o.kind == op_end) return;
    int64_t row, lo, hi;
    ring_segment(a, o.ticket, &row, &lo, &hi);
    const in_t* const slot = ring + (int64_t)o.slot * a.seg;
    auto load = [&](int64_t i, float* x) { load_vec<in_t, V>(slot + (i - lo), x), prologue_x<V>(x); };
    if (o.kind == op_stats) {
      mbar_wait(&full[o.slot], o.parity);
      moments mo;
      mo.shift = row_shift<V>(a, row * a.n);
#pragma unroll k_unroll
      for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
        float x[V];
        load(i, x);
        mo.add<V>(x);
      }
      f3 p = warp_reduce(mo.record(), comb_add);
      if (lane == 0) scratch[warp] = p;
      compute_sync();
      if (threadIdx.x == 0) {
        for (int w = 1; w < NT / 32; ++w) p = comb_add(p, scratch[w]);
        recs[q] = p;
      }
      compute_sync();  // scratch is free again
    } else {
      segment_apply<V>(a, row, lo, hi, o.mr, load);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&op_done[q]);  // this warp is done with the slot, and recs[q] is written
  }
}

template <int V>
__global__ void __launch_bounds__(NT + 32) ring_kernel(norm_args a, int slots) {
  static_assert(V * sizeof(in_t) == 16, "the ring moves whole 16-byte vectors with bulk copies");
  static_assert(NT % 32 == 0 && NT >= 64, "whole compute warps");
  extern __shared__ __align__(128) unsigned char ring_smem[];
  in_t* const ring = reinterpret_cast<in_t*>(ring_smem);  // slot k at ring + k * a.seg
  __shared__ f3 scratch[NT / 32];
  __shared__ ring_op ops[k_ring_queue];
  __shared__ f3 recs[k_ring_queue];
  __shared__ unsigned slot_ticket[k_ring_slots];
  __shared__ __align__(8) uint64_t full[k_ring_slots];  // a slot's copy has landed
  __shared__ __align__(8) uint64_t op_ready[k_ring_queue], op_done[k_ring_queue];
  __shared__ bool last;
  const int64_t segs = a.splits, total = a.rows * segs;
  const unsigned lane = threadIdx.x & 31, all = 0xffffffffu;
  if (threadIdx.x == 0) {
    for (int k = 0; k < slots; ++k) mbar_init_count(&full[k], 1);
    for (int q = 0; q < k_ring_queue; ++q) mbar_init_count(&op_ready[q], 1), mbar_init_count(&op_done[q], NT / 32);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x < NT) {
    ring_compute<V>(a, ring, ops, recs, full, op_ready, op_done, scratch);
  } else {  // the control warp: every lane runs it in step, lane 0 touches memory
    int64_t taken = 0, reduced = 0, applying = 0, applied = 0;  // slots, in ring order: pushed as stats / apply ops
    unsigned pushed = 0, retired = 0;                           // operations, in queue order
    bool exhausted = false;
    // Waits for the oldest operation in flight: posts a stats op's record (finishing the row when it is the row's
    // last), or counts an apply op's slot as free.
    auto retire = [&]() {
      const int q = (int)(retired % k_ring_queue);
      mbar_wait(&op_done[q], (retired / k_ring_queue) & 1);
      const ring_op o = ops[q];
      if (o.kind == op_stats) {
        int64_t row, lo, hi;
        ring_segment(a, o.ticket, &row, &lo, &hi);
        int row_done = 0;
        if (lane == 0) {
          g_part[o.ticket] = recs[q];
          __threadfence();
          row_done = atomicAdd(&g_row_done[row], 1u) == (unsigned)segs - 1;
        }
        if (__shfl_sync(all, row_done, 0)) {  // every record of the row is written
          __threadfence();
          const f3 t = warp_sum_records(&g_part[row * segs], segs);
          if (lane == 0) {
            g_row_mr[row] = finish_stats(t, row_shift<V>(a, row * a.n), a.eps);
            __threadfence();
            st_release(&g_row_ready[row], 1u);
          }
        }
      } else {
        ++applied;
      }
      ++retired;
    };
    auto push = [&](int kind, int64_t seq, float2 mr) {
      if (pushed - retired == k_ring_queue) retire();
      const int q = (int)(pushed % k_ring_queue), k = (int)(seq % slots);
      if (lane == 0) {
        ops[q] = ring_op{kind, k, slot_ticket[k], (unsigned)((seq / slots) & 1), mr};
        mbar_arrive(&op_ready[q]);
      }
      __syncwarp();
      ++pushed;
    };
    for (;;) {
      while (!exhausted && taken - applied < slots) {  // fill the free slots
        unsigned t = 0;
        if (lane == 0) t = atomicAdd(&g_stream_ticket, 1u);
        t = __shfl_sync(all, t, 0);
        if (t >= total) {
          exhausted = true;
          break;
        }
        if (lane == 0) {
          const int k = (int)(taken % slots);
          int64_t row, lo, hi;
          ring_segment(a, t, &row, &lo, &hi);
          const unsigned bytes = (unsigned)((hi - lo) * (int64_t)sizeof(in_t));
          slot_ticket[k] = t;
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // earlier reads of the slot come first
          mbar_expect(&full[k], bytes);
          bulk_load(ring + (int64_t)k * a.seg, a.x + row * a.n + lo, bytes, &full[k]);
        }
        __syncwarp();
        ++taken;
      }
      const bool can_reduce = reduced < taken, can_apply = applying < reduced;
      if (can_reduce && (taken - reduced > k_ahead || exhausted || !can_apply)) {
        push(op_stats, reduced++, float2{});
        continue;
      }
      if (can_apply) {
        int ready = 0;
        float2 mr{};
        if (lane == 0) {
          const int64_t row = slot_ticket[applying % slots] / segs;
          ready = ld_acquire(&g_row_ready[row]) != 0;
          if (ready) mr = __ldcg(&g_row_mr[row]);
        }
        if (__shfl_sync(all, ready, 0)) {
          push(op_apply, applying++, mr);
        } else if (can_reduce) {
          push(op_stats, reduced++, float2{});
        } else if (retired < pushed) {
          retire();  // its record may be what the row waits for
        } else {
          __nanosleep(64);  // every held slot reduced and posted: the row is others' to finish
        }
        continue;
      }
      if (retired < pushed) {
        retire();
        continue;
      }
      break;  // no ticket left, every slot applied
    }
    push(op_end, 0, float2{});
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // every block took its last ticket before counting itself out
    __threadfence();
    last = atomicAdd(&g_stream_out, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    for (int64_t r = threadIdx.x; r < a.rows; r += NT + 32) g_row_done[r] = 0, g_row_ready[r] = 0;
    if (threadIdx.x == 0) g_stream_ticket = 0, g_stream_out = 0;
    __threadfence();
  }
}

static grid_setup g_ring_setup;  // one vector width (16 bytes) runs the ring

// The ring launch over the stream kernel's segments (a.seg elements, a.splits a row): as many blocks as fit on the
// device at once with k_ring_kb KiB of slots each. -1 where it does not apply (vectors of other than 16 bytes,
// fewer than k_ahead + 2 slots, no cooperative launch, or too little shared memory on the device for the rows:
// the caller runs the stream kernel), 3 on a launch error.
template <int V>
int launch_ring(norm_args a, cudaStream_t s) {
  if constexpr (V * sizeof(in_t) != 16) {
    return -1;
  } else {
    const int64_t seg_bytes = a.seg * (int64_t)sizeof(in_t);
    const int slots = (int)min((int64_t)k_ring_slots, (int64_t)k_ring_kb * 1024 / seg_bytes);
    if (slots < k_ahead + 2) return -1;
    const size_t smem = (size_t)slots * (size_t)seg_bytes;
    grid_setup& su = g_ring_setup;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 3;
    if (dev != su.dev || smem != su.smem) {
      int coop = 0;
      if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
          cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
          cudaFuncSetAttribute(ring_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, ring_kernel<V>, NT + 32, smem) != cudaSuccess ||
          !coop || su.per_sm < 1) {
        cudaGetLastError();
        su.dev = -1;
        return -1;
      }
      su.dev = dev;
      su.smem = smem;
    }
    const int64_t total = a.rows * a.splits;
    const int64_t blocks = min((int64_t)su.per_sm * su.sms, total);
    // Room for a row's segments plus one a block beyond the copies in flight: below it, blocks would wait on rows
    // most of the time (and below a row's segments in all, the launch could hang).
    if (blocks * (slots - k_ahead) < a.splits + blocks) return -1;
    cudaLaunchAttribute coop = {};
    coop.id = cudaLaunchAttributeCooperative;  // co-residency guaranteed, or the launch fails: never a hang
    coop.val.cooperative = 1;
    return launch_with(coop, ring_kernel<V>, dim3((unsigned)blocks), NT + 32, smem, s, a, slots);
  }
}

}  // namespace kfk

// group_norm_cuda_launch.cuh: the last of group_norm_cuda's fixed files: the launch of the variant's strategy (with
// the per-row kernels as the fallback of the grid strategies) and kf_launch's checks.

namespace kfk {

// A cluster of k_cluster CTAs per row, each CTA a segment of it (in registers when it fits k_chunks vectors a
// thread), the statistics combined through distributed shared memory.
template <int V>
int launch_cluster_rows(norm_args a, cudaStream_t s) {
  a.seg = ((a.n + k_cluster - 1) / k_cluster + V - 1) / V * V;
  const dim3 grid(k_cluster, (unsigned)(a.rows < 65535 ? a.rows : 65535));
  if (launch_clusters(norm_kernel<V, s_cluster>, k_cluster, grid, NT, 0, s, a) != 0) return 3;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

// ---- fit (the grid strategies): a launch whose rows each fit the registers of one block (k_chunks vectors a
// thread), or else of a cluster of k_cluster CTAs, with every row's block or cluster resident at once, runs that
// per-row kernel instead: x is read from DRAM once into registers and the statistics meet in shared memory or
// through distributed shared memory, where the grid kernels pass each row through bulk copies into shared memory,
// a barrier in global memory (team) or ticket and statistics round trips (stream). What is resident is the
// occupancy calculator's answer for this device and kernel (registers decide it), asked once per device.
struct fit_setup {
  int dev = -1, blocks = 0, clusters = 0;  // the block kernel's resident blocks, the cluster kernel's clusters
};
static fit_setup g_fit_setup[2];  // per vector width; internal linkage, as g_team_setup

template <int V>
int launch_fit(norm_args a, cudaStream_t s) {
  fit_setup& su = g_fit_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  if (dev != su.dev) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, norm_kernel<V, s_block>, NT, 0) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    su.blocks = sms * per_sm;
    su.clusters = 0;
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = k_cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(k_cluster);
    cfg.blockDim = dim3(NT);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if ((k_cluster > 8 && cudaFuncSetAttribute(norm_kernel<V, s_cluster>,
                                               cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) ||
        cudaOccupancyMaxActiveClusters(&su.clusters, norm_kernel<V, s_cluster>, &cfg) != cudaSuccess) {
      cudaGetLastError();  // no cluster launch here: blocks only
      su.clusters = 0;
    }
    su.dev = dev;
  }
  const int64_t cap = (int64_t)k_chunks * NT * V;  // elements a block holds in registers
  if (a.n <= cap && a.rows <= su.blocks) {
    norm_kernel<V, s_block><<<(unsigned)a.rows, NT, 0, s>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
  }
  if (a.n <= cap * k_cluster && a.rows <= su.clusters) return launch_cluster_rows<V>(a, s);
  return -1;
}

template <int V>
int run(norm_args a, cudaStream_t s) {
  const int64_t k_grid_cap = 1 << 22;
  if constexpr (k_fit &&
                (k_strategy == s_split || k_strategy == s_team || k_strategy == s_stream || k_strategy == s_ring)) {
    const int rc = launch_fit<V>(a, s);
    if (rc >= 0) return rc;
  }
  if constexpr (k_strategy == s_team) {
    const int rc = launch_team<V>(a, s);
    if (rc >= 0) return rc;
  }
  if constexpr (k_strategy == s_stream || k_strategy == s_ring) {
    const int rc = launch_stream<V>(a, s);
    if (rc >= 0) return rc;
  }
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
    return launch_cluster_rows<V>(a, s);
  } else {
    norm_kernel<V, s_block><<<(unsigned)(a.rows < k_grid_cap ? a.rows : k_grid_cap), NT, 0, s>>>(a);
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
