// kforge kernel: family row_softmax_cuda, version 13
// knobs: cache=regs chunks=4 cluster=8 fit=0 head=0 online=1 pdl=1 ragged=0 split=auto strategy=grid stream_store=1 tanh=exp team=32 threads=512 unroll=1 vec=4 waves=0
// computes: x[bfloat16] -> cast(float32) -> softcap(30) -> softmax(float32)
// kforge winner: gemma-vocab-softmax on sm90-nvidia-h100-80gb-hbm3
// found: by `kforge search` (template proposer) on 2026-12-06T12:41:29Z
// lineage: stored:sm90-nvidia-h200 -> template: threads 256->512
// measured: 13.98 us (geometric mean over gated cases), 6.60x eager
// re-emitted: by `kforge reemit` on 2026-12-06T15:05:29Z, row_softmax_cuda version 9 from version 8; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T00:54:57Z, row_softmax_cuda version 10 from version 9; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T01:33:44Z, row_softmax_cuda version 10 from version 10; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T01:48:56Z, row_softmax_cuda version 11 from version 10; knobs filled: ragged=0 (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T02:24:37Z, row_softmax_cuda version 11 from version 11; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T08:56:10Z, row_softmax_cuda version 11 from version 11; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T12:30:24Z, row_softmax_cuda version 12 from version 11; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T19:05:15Z, row_softmax_cuda version 13 from version 12; measured above is the earlier kernel's

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
using out_t = float;
using cache_t = float;
constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_grid = 3;
constexpr int k_strategy = s_grid;
constexpr int NT = 512;
constexpr int k_vec = 4;
constexpr int k_chunks = 4;
constexpr int k_cluster = 8;
constexpr int k_split = 0;  // 0: auto
constexpr int k_unroll = 1;
constexpr bool k_online = true;
constexpr bool k_cache_smem = false;
constexpr bool k_stream_store = true;
constexpr bool k_log = false;
constexpr int k_topk = 0;
constexpr int k_row_op = 0;  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)
constexpr bool k_fit = false;
constexpr bool k_pdl = true;
constexpr int k_team = 32;  // 0: auto
constexpr bool k_head = false;
constexpr bool k_ragged = false;
constexpr int k_waves = 0;
constexpr size_t k_smem_limit = 227 * 1024;
constexpr int k_n_inputs = 1;
constexpr int k_x_input = 0;
constexpr int k_n_masks = 0;
constexpr int k_mask_input[] = {-1};
constexpr int k_mask_dtype[] = {-1};
constexpr int k_mask_bytes[] = {1};

__device__ __forceinline__ float prologue(float x) {
  x = softcap_exp(x, 0.0961796694f, 30.0f);
  return x;
}

template <int V, typename A>
__device__ __forceinline__ void load_row_vec(const A& a, const int64_t* moff, int64_t base, int64_t i, float* x, bool mvec = true) {
  (void)moff;
  (void)mvec;
  load_vec<in_t, V>(a.x + base + i, x);
#pragma unroll
  for (int v = 0; v < V; ++v) x[v] = prologue(x[v]);
}

__device__ __forceinline__ float finalize(float x) {
  return x;
}

}  // namespace kfk

// row_softmax_cuda.cuh: the fixed code of row_softmax_cuda, emitted after the variant's constants, types and fused
// prologue (row_softmax_cuda.cpp): the row's arguments and its masks' broadcasting, the per-row algorithm for a warp,
// a block, a cluster of CTAs or a team of co-resident CTAs per row, top-k, and the launch with kf_launch's checks.

namespace kfk {

struct row_args {
  const in_t* x;
  out_t* y;
  void* idx;  // top-k indices (or null)
  int idx64;  // 1: int64 indices, 0: int32, -1: none
  int use_smem;
  // nv: the length a row's segments are cut from: n, or on the ragged path n + V - 1 (the widest a row gets once its
  // first element moves back to an aligned vector's start) rounded up to whole vectors. phase: on the ragged path, x's
  // (and y's) element address modulo V; mask_phase likewise for each mask.
  int64_t rows, n, nv, seg;
  int phase;
  int mask_phase[k_n_masks > 0 ? k_n_masks : 1];
  int tsize, teams;  // strategy=grid: CTAs per row (a team) and teams in the launch
  // The leading dims as the masks walk them (merge_mask_dims): innermost last; when `rows32` (rows < 2^31), 32-bit
  // arithmetic with each dim's divisor in lead_div.
  int lead_nd, rows32;
  int64_t lead_shape[KF_MAX_DIMS];
  fast_div lead_div[KF_MAX_DIMS];
  const void* mask[k_n_masks > 0 ? k_n_masks : 1];
  int64_t mask_stride[k_n_masks > 0 ? k_n_masks : 1][KF_MAX_DIMS];  // per leading dim of x, 0 where broadcast
  int64_t mask_col_stride[k_n_masks > 0 ? k_n_masks : 1];
};

// Each mask's offset of a row: a division per leading dim the masks walk (one for a causal [S, S] mask under
// [B, H, S, S] scores), by magic numbers when the rows allow (the loop unrolled over the dims, so that each reads
// its divisor and strides at a fixed parameter offset); 64-bit division is a long subroutine on the GPU.
__device__ __forceinline__ void mask_offsets(const row_args& a, int64_t row, int64_t* moff) {
#pragma unroll
  for (int k = 0; k < k_n_masks; ++k) moff[k] = 0;
  if constexpr (k_n_masks > 0) {
    if (a.rows32) {
      uint32_t r = (uint32_t)row;
#pragma unroll
      for (int d = KF_MAX_DIMS - 1; d >= 0; --d) {
        if (d < a.lead_nd) {
          const uint32_t q = div_of(a.lead_div[d], r), i = r - q * a.lead_div[d].d;
          r = q;
#pragma unroll
          for (int k = 0; k < k_n_masks; ++k) moff[k] += (int64_t)i * a.mask_stride[k][d];
        }
      }
    } else {
      for (int d = a.lead_nd - 1; d >= 0; --d) {
        const int64_t i = row % a.lead_shape[d];
        row /= a.lead_shape[d];
#pragma unroll
        for (int k = 0; k < k_n_masks; ++k) moff[k] += i * a.mask_stride[k][d];
      }
    }
  }
}

// Merges adjacent leading dims that every mask walks as one (stride[d] == stride[d + 1] * shape[d + 1], which
// holds where both are broadcast) and drops the outer dims no mask walks.
inline void merge_mask_dims(row_args& a) {
  int nd = 0;
  for (int d = 0; d < a.lead_nd; ++d) {
    bool merge = nd > 0;
    for (int k = 0; k < k_n_masks && merge; ++k)
      merge = a.mask_stride[k][nd - 1] == a.mask_stride[k][d] * a.lead_shape[d];
    if (merge) {
      a.lead_shape[nd - 1] *= a.lead_shape[d];
      for (int k = 0; k < k_n_masks; ++k) a.mask_stride[k][nd - 1] = a.mask_stride[k][d];
    } else {
      a.lead_shape[nd] = a.lead_shape[d];
      for (int k = 0; k < k_n_masks; ++k) a.mask_stride[k][nd] = a.mask_stride[k][d];
      ++nd;
    }
  }
  int first = 0;  // outer dims whose every mask stride is 0 add nothing to any offset
  for (; first < nd; ++first) {
    bool walked = false;
    for (int k = 0; k < k_n_masks; ++k) walked = walked || a.mask_stride[k][first] != 0;
    if (walked) break;
  }
  for (int d = first; d < nd; ++d) {
    a.lead_shape[d - first] = a.lead_shape[d];
    for (int k = 0; k < k_n_masks; ++k) a.mask_stride[k][d - first] = a.mask_stride[k][d];
  }
  a.lead_nd = nd - first;
  a.rows32 = a.rows < (int64_t{1} << 31) ? 1 : 0;  // then every kept dim is below 2^31 too (rows is their multiple)
  if (a.rows32)
    for (int d = 0; d < a.lead_nd; ++d) a.lead_div[d] = make_fast_div((uint32_t)a.lead_shape[d]);
}

// An element address modulo k_vec: equal for two tensors, their vectors line up.
inline int element_phase(const void* p, int bytes) { return (int)(((uintptr_t)p / (uintptr_t)bytes) % k_vec); }

// Broadcasts each mask against x (right-aligned, as torch does); false for a shape that does not broadcast.
inline bool bind_masks(const kf_tensor* in, const kf_tensor& x, row_args& a, bool* vec_ok) {
  for (int k = 0; k < k_n_masks; ++k) {
    const kf_tensor& m = in[k_mask_input[k]];
    if (m.dtype != k_mask_dtype[k] || m.ndim > x.ndim) return false;
    a.mask[k] = m.data;
    a.mask_phase[k] = element_phase(m.data, k_mask_bytes[k]);
    for (int d = 0; d < x.ndim; ++d) {
      const int md = d - (x.ndim - m.ndim);
      int64_t st = 0;
      if (md >= 0 && m.shape[md] == x.shape[d]) st = m.stride[md];
      else if (md >= 0 && m.shape[md] != 1) return false;
      if (d + 1 < x.ndim) a.mask_stride[k][d] = st;
      else a.mask_col_stride[k] = st;
      if (d + 1 < x.ndim && st % k_vec != 0) *vec_ok = false;  // a row's start; the column stride must be 1
    }
    if (a.mask_col_stride[k] != 1 || !aligned(m.data, 16)) *vec_ok = false;
  }
  return true;
}

// ---- combining partial results: (max, sum of exp(x - max)) pairs, maxima, sums ----
__device__ __forceinline__ f2 comb_ms(f2 p, f2 q) {
  const float m = fmaxf(p.a, q.a);
  if (m == -INFINITY) return f2{m, 0.f};
  return f2{m, p.b * __expf(p.a - m) + q.b * __expf(q.a - m)};
}
__device__ __forceinline__ f2 comb_max(f2 p, f2 q) { return f2{fmaxf(p.a, q.a), 0.f}; }
__device__ __forceinline__ f2 comb_sum(f2 p, f2 q) { return f2{p.a + q.a, 0.f}; }

// A reduction over a team of W lanes (aligned groups of W within the warp; every lane of the warp takes part).
template <int W, typename T, typename F>
__device__ __forceinline__ T team_reduce(T v, F comb) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = comb(v, shfl_xor(v, o));
  return v;
}

// ---- strategy=grid: a team of `tsize` co-resident CTAs per row (one cooperative launch), each holding a segment of
// the row; the team meets in global memory once per reduction. Few long rows (a vocabulary over a few tokens) use
// every SM this way, where a portable cluster of 8 CTAs a row leaves most of them idle. ----
constexpr int k_grid_cap = 8192;               // CTAs of one launch
__device__ f2 g_rs_part[2][k_grid_cap];        // partial results by round parity: a CTA is at most a round ahead
__device__ unsigned g_rs_arrived[k_grid_cap];  // per team: arrivals, counting up across its rounds
__device__ unsigned g_rs_left[k_grid_cap];     // per team: CTAs done; the last resets both for the next launch

// Round `round` of team `team`: each CTA posts its block's partial (slot b), counts itself in and waits for the
// whole team; then one warp combines the team's partials in a fixed order, so every CTA of the team gets the same
// result bit for bit. `id` is comb's identity. Why the parity is safe: a CTA posts round r + 2 only after every
// member arrived at round r + 1, which each does after it has read round r.
template <typename F>
__device__ __forceinline__ f2 grid_reduce(f2 v, F comb, f2 id, f2* scratch, f2* slot, int team, int b, int tsize,
                                          unsigned round) {
  v = block_reduce<NT>(v, comb, scratch);
  f2* part = &g_rs_part[round & 1][(int64_t)team * tsize];
  if (threadIdx.x == 0) {
    __stcg(&part[b].a, v.a);
    __stcg(&part[b].b, v.b);
    __threadfence();
    atomicAdd(&g_rs_arrived[team], 1u);
    const unsigned want = (round + 1) * (unsigned)tsize;
    while (ld_acquire(&g_rs_arrived[team]) < want) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    f2 r = id;
    for (int j = threadIdx.x; j < tsize; j += 32) r = comb(r, f2{__ldcg(&part[j].a), __ldcg(&part[j].b)});
    r = warp_reduce(r, comb);
    if (threadIdx.x == 0) *slot = r;
  }
  __syncthreads();
  return *slot;  // the next write of *slot comes after block_reduce's barriers
}

// The threads that share one row (or, for clusters and teams, one segment of a row) and how they reduce. W:
// strategy=warp's team width. `id` is comb's identity (used where a team's partials are combined).
template <int W>
struct group {
  int tid, nthr;
  f2* scratch;
  f2* slot;
  int team = 0, tb = 0, tsize = 1;  // strategy=grid: the team, this CTA's place in it, its size
  unsigned round = 0;               // strategy=grid: reductions so far (the team's barrier count)
  template <typename F>
  __device__ __forceinline__ f2 reduce(f2 v, F comb, f2 id) {
    if constexpr (k_strategy == s_warp) return team_reduce<W>(v, comb);
    else if constexpr (k_strategy == s_block) return block_reduce<NT>(v, comb, scratch, nthr / 32);
    else if constexpr (k_strategy == s_cluster) return cluster_reduce<NT, k_cluster>(v, comb, scratch, slot);
    else return grid_reduce(v, comb, id, scratch, slot, team, tb, tsize, round++);
  }
};

// ---- top-k over a warp: each lane keeps its K best (value, index), then K rounds of a warp arg-max ----
struct topk_list {
  float v[k_topk > 0 ? k_topk : 1];
  int i[k_topk > 0 ? k_topk : 1];
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int j = 0; j < k_topk; ++j) {
      v[j] = -INFINITY;
      i[j] = 0x7fffffff;
    }
  }
  // Strictly greater moves ahead: among equal values the earlier index stays first (lanes insert in index order).
  __device__ __forceinline__ void insert(float val, int idx) {
    if (!(val > v[k_topk - 1]) && !(i[k_topk - 1] == 0x7fffffff)) return;
    bool placed = false;
#pragma unroll
    for (int j = k_topk - 1; j >= 0; --j) {
      if (!placed) {
        if (j > 0 && (val > v[j - 1] || i[j - 1] == 0x7fffffff)) {
          v[j] = v[j - 1];
          i[j] = i[j - 1];
        } else {
          v[j] = val;
          i[j] = idx;
          placed = true;
        }
      }
    }
  }
};

__device__ __forceinline__ void topk_store(const row_args& a, int64_t row, topk_list& l, int lane) {
  float my_v = 0.f;
  int my_i = 0;
#pragma unroll
  for (int j = 0; j < k_topk; ++j) {
    float bv = l.v[0];
    int bi = l.i[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if (l.i[0] == bi) {  // this lane owned the winner: drop it from its list
#pragma unroll
      for (int q = 0; q + 1 < k_topk; ++q) {
        l.v[q] = l.v[q + 1];
        l.i[q] = l.i[q + 1];
      }
      l.v[k_topk - 1] = -INFINITY;
      l.i[k_topk - 1] = 0x7fffffff;
    }
    if (lane == j % 32) {
      my_v = bv;
      my_i = bi;
    }
    if (j % 32 == 31 || j == k_topk - 1) {
      const int first = j - j % 32;
      if (lane <= j - first) {
        a.y[row * k_topk + first + lane] = from_f<out_t>(my_v);
        if (a.idx64 == 1) static_cast<int64_t*>(a.idx)[row * k_topk + first + lane] = my_i;
        else if (a.idx64 == 0) static_cast<int32_t*>(a.idx)[row * k_topk + first + lane] = my_i;
      }
    }
  }
}

// ---- the ragged path: rows that are not a whole number of aligned vectors (n % V != 0, or a misaligned view) ----
// Each row's columns are counted from the aligned vector its first element falls in: column i is the row's element
// i - sh, sh = (phase + row * n) % V. Vectors wholly inside the row load and store as on the aligned path (x and y
// share their phase; a mask whose vectors do not line up with x's loads a value at a time); the row's first and
// last vectors load their elements in the row one at a time and hold -inf elsewhere, and store only those.
struct ragged_row {
  int64_t sh = 0, n = 0;
  bool mvec = true;  // every mask's vectors line up with x's in this row
};

template <int V, bool R>
__device__ __forceinline__ void load_at(const row_args& a, const int64_t* moff, int64_t base, int64_t i,
                                        const ragged_row& rr, float* x) {
  if constexpr (!R) {
    load_row_vec<V>(a, moff, base, i, x);
  } else {
    const int64_t j = i - rr.sh;
    if (j >= 0 && j + V <= rr.n) {
      load_row_vec<V>(a, moff, base, j, x, rr.mvec);
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (j + v >= 0 && j + v < rr.n) load_row_vec<1>(a, moff, base, j + v, x + v, false);
        else x[v] = -INFINITY;
      }
    }
  }
}

template <int V, bool R>
__device__ __forceinline__ void store_at(const row_args& a, int64_t base, int64_t i, const ragged_row& rr,
                                         const float* x) {
  if constexpr (!R) {
    store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
  } else {
    const int64_t j = i - rr.sh;
    if (j >= 0 && j + V <= rr.n) {
      store_vec<out_t, V, k_stream_store>(a.y + base + j, x);
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (j + v >= 0 && j + v < rr.n) store_vec<out_t, 1, k_stream_store>(a.y + base + j + v, x + v);
    }
  }
}

// The register cache: this thread's k_chunks vectors of segment [lo, hi), -inf past it; returns their max. Every
// chunk loads, one past the segment at the row's first column (in bounds: the row exists and n >= V), and is then
// set to -inf: a branch around each load kept every chunk's load waiting for the chunk before it (one memory
// latency a chunk, in the SASS), where straight code issues them all at once.
template <int V, bool R, typename G>
__device__ __forceinline__ float load_cache(const row_args& a, const int64_t* moff, int64_t base, int64_t lo,
                                            int64_t hi, const ragged_row& rr, const G& g, float (&r)[k_chunks][V]) {
#pragma unroll
  for (int c = 0; c < k_chunks; ++c) {
    const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
    const bool in = i < hi;
    load_at<V, R>(a, moff, base, in ? i : 0, rr, r[c]);
#pragma unroll
    for (int v = 0; v < V; ++v) r[c][v] = in ? r[c][v] : -INFINITY;
  }
  float m = -INFINITY;
#pragma unroll
  for (int c = 0; c < k_chunks; ++c)
#pragma unroll
    for (int v = 0; v < V; ++v) m = fmaxf(m, r[c][v]);
  return m;
}

// ---- one row (or one cluster CTA's segment [lo, hi) of it; R: the ragged path's columns) ----
template <int V, bool R, typename G>
__device__ __forceinline__ void do_row(const row_args& a, G& g, int64_t row, int64_t lo, int64_t hi, int64_t seg_max,
                                       cache_t* sm) {
  int64_t moff[k_n_masks > 0 ? k_n_masks : 1];
  mask_offsets(a, row, moff);
  const int64_t base = row * a.n;
  ragged_row rr;
  if constexpr (R) {
    rr.sh = (a.phase + base) & (V - 1);
    rr.n = a.n;
    const int64_t end = a.n + rr.sh;  // this row's columns: [0, end)
    lo = lo < end ? lo : end;
    hi = hi < end ? hi : end;
#pragma unroll
    for (int k = 0; k < k_n_masks; ++k)
      rr.mvec = rr.mvec && a.mask_col_stride[k] == 1 && ((a.mask_phase[k] + moff[k] - rr.sh) & (V - 1)) == 0;
  }
  const int64_t span = (int64_t)g.nthr * V;
  float M, S;
  topk_list tl;
  if constexpr (k_topk > 0) tl.clear();
  // One vector of results at column i: into the top-k lists, or stored.
  auto put = [&](int64_t i, float* x) {
    if constexpr (k_topk > 0) {
#pragma unroll
      for (int v = 0; v < V; ++v) tl.insert(x[v], (int)(i + v));
    } else {
      store_at<V, R>(a, base, i, rr, x);
    }
  };

  if constexpr (k_row_op != 0) {
    // No softmax (a top-k of the values, or of their sigmoid): no statistics, one pass. The accurate expf: a
    // float32 sigmoid is checked to float32's tolerance.
#pragma unroll k_unroll
    for (int64_t i = lo + (int64_t)g.tid * V; i < hi; i += span) {
      float x[V];
      load_at<V, R>(a, moff, base, i, rr, x);
#pragma unroll
      for (int v = 0; v < V; ++v) x[v] = finalize(k_row_op == 1 ? 1.f / (1.f + expf(-x[v])) : x[v]);
      put(i, x);
    }
    if constexpr (k_topk > 0) topk_store(a, row, tl, g.tid);
    return;
  }
  if (!(k_cache_smem && a.use_smem) && seg_max <= (int64_t)k_chunks * span) {
    // The whole segment in registers: one read of the input.
    float r[k_chunks][V];
    const float lm = load_cache<V, R>(a, moff, base, lo, hi, rr, g, r);
    if constexpr (k_online) {
      // exp relative to this thread's max, rescaled once after a single (max, sum) reduction.
      const float ref = lm == -INFINITY ? 0.f : lm;
      float ls = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float e = exp_ftz(r[c][v] - ref);
          ls += e;
          if constexpr (!k_log) r[c][v] = e;
        }
      const f2 t = g.reduce(f2{lm, ls}, comb_ms, f2{-INFINITY, 0.f});
      M = t.a;
      S = t.b;
      if constexpr (k_log) {
        // (x - M) - log S, not x - (M + log S): rounding M + log S to float loses log S next to a large M. And the
        // accurate logf, once a row: __logf's absolute error (2^-21) is above float32's tolerance near log p = 0.
        const float lg = logf(S);
#pragma unroll
        for (int c = 0; c < k_chunks; ++c)
#pragma unroll
          for (int v = 0; v < V; ++v) r[c][v] = (r[c][v] - M) - lg;
      } else {
        const float f = (lm == -INFINITY && M != -INFINITY) ? 0.f : __expf(ref - M) / S;
#pragma unroll
        for (int c = 0; c < k_chunks; ++c)
#pragma unroll
          for (int v = 0; v < V; ++v) r[c][v] *= f;
      }
    } else {
      M = g.reduce(f2{lm, 0.f}, comb_max, f2{-INFINITY, 0.f}).a;
      float ls = 0.f;
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float e = exp_ftz(r[c][v] - M);
          ls += e;
          if constexpr (!k_log) r[c][v] = e;
        }
      S = g.reduce(f2{ls, 0.f}, comb_sum, f2{0.f, 0.f}).a;
      const float f = 1.f / S, lg = k_log ? logf(S) : 0.f;  // as above
#pragma unroll
      for (int c = 0; c < k_chunks; ++c)
#pragma unroll
        for (int v = 0; v < V; ++v) r[c][v] = k_log ? (r[c][v] - M) - lg : r[c][v] * f;
    }
#pragma unroll
    for (int c = 0; c < k_chunks; ++c) {
      const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
#pragma unroll
      for (int v = 0; v < V; ++v) r[c][v] = finalize(r[c][v]);
      if (i < hi) put(i, r[c]);
    }
  } else {
    // Longer than the register cache: a pass for the statistics (keeping the row in shared memory when the cache
    // knob says so and it fits), then a pass that writes. With head=1 and no shared-memory copy, the first k_chunks
    // vectors a thread stay in registers between the two (loaded as above) and only the rest of the segment is
    // read twice: for Llama-3's 128,256-wide rows over 8 CTAs of 256 threads x 32 values, 51 % of each row is read
    // once instead of twice.
    const bool keep = k_cache_smem && a.use_smem;
    const bool hold = k_head && !keep;
    const int64_t mid = hold ? lo + (int64_t)k_chunks * span : lo;  // [lo, mid) held, [mid, hi) streamed
    float r[k_chunks][V];
    float m = -INFINITY, s = 0.f;
    if (hold) {
      m = load_cache<V, R>(a, moff, base, lo, hi, rr, g, r);
      if (k_online && m != -INFINITY)
#pragma unroll
        for (int c = 0; c < k_chunks; ++c)
#pragma unroll
          for (int v = 0; v < V; ++v) s += exp_ftz(r[c][v] - m);
    }
#pragma unroll k_unroll
    for (int64_t i = mid + (int64_t)g.tid * V; i < hi; i += span) {
      float x[V];
      load_at<V, R>(a, moff, base, i, rr, x);
      if (keep) store_vec<cache_t, V, false>(sm + (i - lo), x);  // exact: cache_t holds the prologue's values
      float vm = -INFINITY;
#pragma unroll
      for (int v = 0; v < V; ++v) vm = fmaxf(vm, x[v]);
      if constexpr (k_online) {
        const float nm = fmaxf(m, vm);
        if (nm != -INFINITY) {
          s *= __expf(m - nm);
#pragma unroll
          for (int v = 0; v < V; ++v) s += exp_ftz(x[v] - nm);
        }
        m = nm;
      } else {
        m = vm > m ? vm : m;
      }
    }
    auto fetch = [&](int64_t i, float* x) {
      if (keep) {
        load_vec<cache_t, V>(sm + (i - lo), x);
      } else {
        load_at<V, R>(a, moff, base, i, rr, x);
      }
    };
    if constexpr (k_online) {
      const f2 t = g.reduce(f2{m, s}, comb_ms, f2{-INFINITY, 0.f});
      M = t.a;
      S = t.b;
    } else {
      M = g.reduce(f2{m, 0.f}, comb_max, f2{-INFINITY, 0.f}).a;
      s = 0.f;
      if (hold)
#pragma unroll
        for (int c = 0; c < k_chunks; ++c)
#pragma unroll
          for (int v = 0; v < V; ++v) s += exp_ftz(r[c][v] - M);
#pragma unroll k_unroll
      for (int64_t i = mid + (int64_t)g.tid * V; i < hi; i += span) {
        float x[V];
        fetch(i, x);
#pragma unroll
        for (int v = 0; v < V; ++v) s += exp_ftz(x[v] - M);
      }
      S = g.reduce(f2{s, 0.f}, comb_sum, f2{0.f, 0.f}).a;
    }
    const float f = 1.f / S, lg = k_log ? logf(S) : 0.f;  // (x - M) - log S, as above
    auto result = [&](float x) { return finalize(k_log ? (x - M) - lg : exp_ftz(x - M) * f); };
    if (hold)
#pragma unroll
      for (int c = 0; c < k_chunks; ++c) {
        const int64_t i = lo + ((int64_t)c * g.nthr + g.tid) * V;
#pragma unroll
        for (int v = 0; v < V; ++v) r[c][v] = result(r[c][v]);
        if (i < hi) put(i, r[c]);
      }
#pragma unroll k_unroll
    for (int64_t i = mid + (int64_t)g.tid * V; i < hi; i += span) {
      float x[V];
      fetch(i, x);
#pragma unroll
      for (int v = 0; v < V; ++v) x[v] = result(x[v]);
      put(i, x);
    }
  }
  if constexpr (k_topk > 0) topk_store(a, row, tl, g.tid);
}

// W: strategy=warp's team width (32 for the other strategies). Every strategy loops over its rows, so a grid smaller
// than the rows (k_waves, the grid cap) is still complete.
template <int V, int W, bool R>
__global__ void __launch_bounds__(NT) softmax_kernel(row_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  __shared__ f2 scratch[NT / 32];
  __shared__ f2 slot;
  extern __shared__ __align__(16) unsigned char dyn_bytes[];
  cache_t* dyn = reinterpret_cast<cache_t*>(dyn_bytes);
  if constexpr (k_strategy == s_warp) {
    // 32 / W rows a warp. The warp's lanes loop together (the team reductions shuffle over the whole warp):
    // a team past the last row runs an empty segment [0, 0) down the same path (seg_max a.nv) and stores nothing.
    constexpr int per_block = NT / W;
    const int team = threadIdx.x / W;
    group<W> g{(int)(threadIdx.x % W), W, scratch, &slot};
    const int64_t first = (int64_t)blockIdx.x * per_block + (threadIdx.x >> 5) * (32 / W);
    for (int64_t r0 = first; r0 < a.rows; r0 += (int64_t)gridDim.x * per_block) {
      const int64_t row = r0 + (team % (32 / W));
      const int64_t n = row < a.rows ? a.nv : 0;
      do_row<V, R>(a, g, row < a.rows ? row : r0, 0, n, a.nv, dyn + (a.use_smem ? team * a.seg : 0));
    }
  } else if constexpr (k_strategy == s_block) {
    group<W> g{(int)threadIdx.x, (int)blockDim.x, scratch, &slot};  // blockDim.x <= NT (k_fit)
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) do_row<V, R>(a, g, row, 0, a.nv, a.nv, dyn);
  } else if constexpr (k_strategy == s_cluster) {
    group<W> g{(int)threadIdx.x, NT, scratch, &slot};
    const int64_t lo = min(a.nv, (int64_t)blockIdx.x * a.seg), hi = min(a.nv, lo + a.seg);
    for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) do_row<V, R>(a, g, row, lo, hi, a.seg, dyn);
  } else {
    // Team t takes rows t, t + teams, ...; every CTA of a team takes the same rows, so all of them make the same
    // reductions (a CTA past the row's end runs an empty segment down the same path).
    group<W> g{(int)threadIdx.x, NT, scratch, &slot, (int)(blockIdx.x / a.tsize), (int)(blockIdx.x % a.tsize), a.tsize};
    const int64_t lo = min(a.nv, (int64_t)g.tb * a.seg), hi = min(a.nv, lo + a.seg);
    for (int64_t row = g.team; row < a.rows; row += a.teams) do_row<V, R>(a, g, row, lo, hi, a.seg, dyn);
    // The last CTA of the team out resets its counters for the next launch: every member has passed every barrier.
    if (threadIdx.x == 0 && atomicAdd(&g_rs_left[g.team], 1u) == (unsigned)a.tsize - 1) {
      g_rs_arrived[g.team] = 0;
      g_rs_left[g.team] = 0;
    }
  }
}

// The GPU's SMs, read at the first launch. Host state at namespace scope with internal linkage (CONTRIBUTING.md):
// a function-local static of an inline function would be one object for every candidate library in the worker.
static int g_rs_sms = 0;
inline int rs_sms() {
  if (!g_rs_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_rs_sms, cudaDevAttrMultiProcessorCount, dev);
    if (g_rs_sms <= 0) g_rs_sms = 132;
  }
  return g_rs_sms;
}

// Blocks for `blocks` row groups: one a group (k_waves 0), or k_waves waves of resident blocks that loop over them.
template <typename K>
inline int64_t rs_grid(K kernel, int64_t blocks, int threads, size_t smem) {
  if (k_waves == 0) return blocks;
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess || per_sm < 1)
    per_sm = 1;
  const int64_t resident = (int64_t)rs_sms() * per_sm * k_waves;
  return blocks < resident ? blocks : resident;
}

// strategy=grid's team shape for `rows` rows of `n` elements when `resident` CTAs fit on the device at once: a fixed
// team size (k_split), or the one that costs least, a round of a team costing its segment (twice where the segment
// is longer than a CTA's registers hold: it is then streamed twice) plus a fixed latency (a barrier and the first
// bytes' round trip, taken as 16384 elements' worth). At least a vector a thread: no team wider than the row needs.
template <int V>
inline void grid_shape(row_args& a, int64_t resident) {
  auto lo = [](int64_t x, int64_t y) { return x < y ? x : y; };
  const int64_t per_vec_pass = (int64_t)NT * V, held = (int64_t)k_chunks * per_vec_pass;
  const int64_t t_max = a.nv > per_vec_pass ? (a.nv + per_vec_pass - 1) / per_vec_pass : 1;
  int64_t tsize = 1, teams = 1;
  if (k_split > 0) {
    tsize = lo(lo((int64_t)k_split, t_max), resident);
    teams = lo(a.rows, resident / tsize);
  } else {
    double best = 0.0;
    for (int64_t k = 1; k <= lo(a.rows, resident); ++k) {
      const int64_t t = lo(resident / k, t_max), seg = (a.nv + t - 1) / t;
      const double cost = (double)((a.rows + k - 1) / k) * ((double)seg * (seg <= held ? 1 : 2) + 16384.0);
      if (k == 1 || cost < best * (1.0 - 1e-9)) best = cost, teams = k, tsize = t;
    }
  }
  a.seg = ((a.nv + tsize - 1) / tsize + V - 1) / V * V;
  a.tsize = (int)((a.nv + a.seg - 1) / a.seg);  // no CTA without a segment
  a.teams = (int)teams;                         // at least 1: rows >= 1 and tsize <= resident
}

// The resident CTAs of the grid kernel on this device (0: no cooperative launch here), read once per device and
// vector width, and the team shape of the last (rows, n) launched, so repeated launches of one shape (a model's
// forward, timing) skip grid_shape's search. Host state at namespace scope with internal linkage, as g_rs_sms.
struct rs_grid_device {
  int dev = -1, resident = 0, pdl_ok = 1;
  int64_t rows = -1, n = -1, seg = 0;
  int tsize = 1, teams = 1;
};
static rs_grid_device g_rs_grid[3];  // per kernel: the element-wise one, the aligned and the ragged vector ones

// One cooperative launch of teams x tsize CTAs (co-residency guaranteed, or the launch fails: never a hang), with
// PDL when asked and the device takes both attributes (tried once, outside any capture: the first launch is the
// verifier's). Without a cooperative launch, teams of one CTA: a block per row, no CTA ever waits on another.
template <int V, bool R, typename K>
int launch_grid(K kernel, row_args a, cudaStream_t s) {
  rs_grid_device& d = g_rs_grid[V == 1 ? 0 : R ? 2 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  if (d.dev != dev) {
    int coop = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, NT, 0) != cudaSuccess) {
      cudaGetLastError();
      coop = 0;
    }
    const int64_t resident = (int64_t)per_sm * rs_sms();
    d = rs_grid_device{};
    d.dev = dev;
    d.resident = coop ? (int)(resident < k_grid_cap ? resident : k_grid_cap) : 0;
  }
  if (d.resident < 1) {
    a.tsize = 1;
    a.seg = a.nv;
    a.teams = (int)(a.rows < (1 << 22) ? a.rows : (1 << 22));
    return launch_kernel<k_pdl>(kernel, dim3((unsigned)a.teams), NT, 0, s, a);
  }
  if (a.rows != d.rows || a.nv != d.n) {
    grid_shape<V>(a, d.resident);
    d.rows = a.rows, d.n = a.nv, d.seg = a.seg, d.tsize = a.tsize, d.teams = a.teams;
  } else {
    a.seg = d.seg, a.tsize = d.tsize, a.teams = d.teams;
  }
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeCooperative;
  attrs[0].val.cooperative = 1;
  attrs[1] = pdl_attr();
  const dim3 grid((unsigned)((int64_t)a.teams * a.tsize));
  if (k_pdl && d.pdl_ok) {
    if (launch_ex(attrs, 2, kernel, grid, NT, 0, s, a) == 0) return 0;
    cudaGetLastError();
    d.pdl_ok = 0;
  }
  return launch_ex(attrs, 1, kernel, grid, NT, 0, s, a);
}

template <int V, int W, bool R>
int run(row_args a, cudaStream_t s) {
  auto kernel = softmax_kernel<V, W, R>;
  a.seg = k_strategy == s_cluster ? ((a.nv + k_cluster - 1) / k_cluster + V - 1) / V * V : a.nv;
  size_t smem = 0;
  if (k_cache_smem && k_strategy != s_grid) {
    const size_t need = (size_t)(k_strategy == s_warp ? NT / W : 1) * (size_t)a.seg * sizeof(cache_t);
    if (need <= k_smem_limit) {
      a.use_smem = 1;
      smem = need;
      if (smem > 48 * 1024 &&
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return 3;
    }
  }
  const int64_t k_grid_cap = 1 << 22;
  if constexpr (k_strategy == s_warp) {
    const int64_t blocks = rs_grid(kernel, (a.rows + NT / W - 1) / (NT / W), NT, smem);
    return launch_kernel<k_pdl>(kernel, dim3((unsigned)(blocks < k_grid_cap ? blocks : k_grid_cap)), NT, smem, s, a);
  } else if constexpr (k_strategy == s_block) {
    // k_fit: a short row gets a narrower block (more rows in flight per SM), as long as it still fits the
    // register cache of `k_chunks` vectors per thread.
    int bt = NT;
    while (k_fit && !a.use_smem && bt > 64 && a.nv <= (int64_t)k_chunks * (bt / 2) * V) bt /= 2;
    const int64_t blocks = rs_grid(kernel, a.rows, bt, smem);
    return launch_kernel<k_pdl>(kernel, dim3((unsigned)(blocks < k_grid_cap ? blocks : k_grid_cap)), bt, smem, s, a);
  } else if constexpr (k_strategy == s_cluster) {
    const dim3 grid(k_cluster, (unsigned)(a.rows < 65535 ? a.rows : 65535));
    return launch_clusters<k_pdl>(kernel, k_cluster, grid, NT, smem, s, a);
  } else {
    return launch_grid<V, R>(kernel, a, s);
  }
}

// The team width of strategy=warp (32 for the others); T = 0 is team=auto: the narrowest team that still holds the
// row in registers (`k_chunks` vectors a thread), so short rows put more rows in flight a warp. (A template, so that
// only the chosen widths are instantiated.)
template <int T, bool R>
int run_vectors(const row_args& a, cudaStream_t s) {
  if constexpr (T == 0) {
    const int64_t v = (a.nv + k_vec - 1) / k_vec;
    if (v <= 4 * k_chunks) return run<k_vec, 4, R>(a, s);
    if (v <= 8 * k_chunks) return run<k_vec, 8, R>(a, s);
    if (v <= 16 * k_chunks) return run<k_vec, 16, R>(a, s);
    return run<k_vec, 32, R>(a, s);
  } else {
    return run<k_vec, T, R>(a, s);
  }
}

// Aligned vectors; else the ragged path where the spec has ragged rows (k_ragged) and x and y line up; else an
// element a thread, in whole warps.
template <int T>
int dispatch(const row_args& a, bool vec_ok, bool ragged, cudaStream_t s) {
  if (vec_ok) return run_vectors<T, false>(a, s);
  if constexpr (k_ragged)
    if (ragged) return run_vectors<T, true>(a, s);
  return run < 1, T == 0 ? 32 : T, false > (a, s);
}

int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out < 1 || n_out > (k_topk > 0 ? 2 : 1)) return 1;
  const kf_tensor& x = in[k_x_input];
  if (x.dtype != dtype_code<in_t>::value || x.ndim < 1 || x.ndim > KF_MAX_DIMS || !contiguous(x)) return 1;
  row_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.n = x.shape[x.ndim - 1];
  a.nv = a.n;
  a.rows = 1;
  a.lead_nd = x.ndim - 1;
  for (int d = 0; d + 1 < x.ndim; ++d) {
    a.lead_shape[d] = x.shape[d];
    a.rows *= x.shape[d];
  }
  bool vec_ok = a.n % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  if (!bind_masks(in, x, a, &vec_ok)) return 1;
  merge_mask_dims(a);
  const kf_tensor& y = out[0];
  const int64_t per_row = k_topk > 0 ? k_topk : a.n;
  if (y.dtype != dtype_code<out_t>::value || !contiguous(y) || numel(y) != a.rows * per_row) return 1;
  a.y = static_cast<out_t*>(y.data);
  a.idx64 = -1;
  if (k_topk > 0) {
    if (a.n < k_topk || a.n > 0x7fffffff) return 1;
    if (n_out == 2) {
      const kf_tensor& ix = out[1];
      if (!contiguous(ix) || numel(ix) != a.rows * k_topk) return 1;
      if (ix.dtype == KF_INT64) a.idx64 = 1;
      else if (ix.dtype == KF_INT32) a.idx64 = 0;
      else return 1;
      a.idx = ix.data;
    }
  } else {
    vec_ok = vec_ok && aligned(a.y, vec_align<out_t, k_vec>());
  }
  if (a.rows == 0 || a.n == 0) return 0;
  bool ragged = false;
  if constexpr (k_ragged && k_topk == 0) {
    a.phase = element_phase(a.x, sizeof(in_t));
    ragged = !vec_ok && a.phase == element_phase(a.y, sizeof(out_t));
    // The widest a row's columns get (n + vec - 1), rounded up to whole vectors: a warp's teams cut their shared
    // memory rows at multiples of nv, which must stay vector-aligned.
    if (ragged) a.nv = (a.n + 2 * k_vec - 2) / k_vec * k_vec;
  }
  return dispatch < k_strategy == s_warp ? k_team : 32 > (a, vec_ok, ragged, s);
}

}  // namespace kfk

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));
}
