// kforge kernel: family row_norm_cuda, version 8
// knobs: block=128 chunks=4 cluster=2 fit=1 math=precise onepass=0 pdl=1 store=streaming strategy=block team=32 vec=8 waves=1 wload=auto wregs=0
// computes: rms_norm (one pass over each row)
// kforge winner: qwen25-7b-rmsnorm on sm90-nvidia-h200
// found: by `kforge search` (template proposer) on 2026-12-03T06:47:02Z
// lineage: default -> template: store default->streaming -> template: waves 0->1
// measured: 4.88 us (geometric mean over gated cases), 1.75x eager
// re-emitted: by `kforge reemit` on 2026-12-06T03:06:52Z, row_norm_cuda version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T06:24:09Z, row_norm_cuda version 6 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T21:46:06Z, row_norm_cuda version 7 from version 6; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T21:50:31Z, row_norm_cuda version 7 from version 7; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T04:40:10Z, row_norm_cuda version 8 from version 7; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T08:56:10Z, row_norm_cuda version 8 from version 8; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T19:05:15Z, row_norm_cuda version 8 from version 8; measured above is the earlier kernel's

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

using out_t = __nv_bfloat16;
using h_t = __nv_bfloat16;
using w_t = __nv_bfloat16;
using b_t = float;
using t0 = __nv_bfloat16;
constexpr int STRAT = 1;
constexpr int TEAM = 32;
constexpr int BLOCK = 128;
constexpr bool FIT = true;
constexpr int CL = 2;
constexpr int V = 8;
constexpr int CHUNKS = 4;
constexpr int WAVES = 1;
constexpr bool WREGS = false;
constexpr int WLOAD = 0;
constexpr bool ONEPASS = false;
constexpr bool STREAM = true;
constexpr bool PDL = true;
constexpr bool k_layer = false;
constexpr bool k_has_w = true;
constexpr bool k_has_b = false;
constexpr float k_eps = 1e-06f;
constexpr bool k_write_h = false;
constexpr int k_y_output = 0;
constexpr int k_h_output = 0;
constexpr int KF_N_INPUTS = 2;
constexpr int KF_NORM_DIMS = 1;
constexpr int NOPND = 1;
constexpr int NPRO = 1;
constexpr int k_w_input = 1;
constexpr int k_b_input = -1;
constexpr int kf_operand_input[NOPND] = {0};
constexpr int kf_operand_dtype[NOPND] = {KF_BFLOAT16};
constexpr int kf_operand_align[NOPND] = {16};

__device__ __forceinline__ float kf_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float kf_erf(float x) { return erff(x); }
__device__ __forceinline__ float kf_relu(float x) { return x != x ? x : fmaxf(x, 0.f); }
template <typename T> __device__ __forceinline__ float kf_round_to(float x) { return to_f(from_f<T>(x)); }
__device__ __forceinline__ float kf_round(int code, float x) {
  return code == KF_FLOAT16 ? kf_round_to<__half>(x) : code == KF_BFLOAT16 ? kf_round_to<__nv_bfloat16>(x)
       : code == KF_INT32 ? (float)(int32_t)x : code == KF_INT64 ? (float)(int64_t)x : code == KF_UINT8 ? (float)(uint8_t)x : x;
}
__device__ __forceinline__ float kf_exp(float x) { return expf(x); }
__device__ __forceinline__ float kf_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float kf_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * (1.f + kf_erf(x * 0.70710678118654752f)); }
__device__ __forceinline__ float kf_gelu_tanh(float x) {
  return 0.5f * x * (1.f + kf_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

struct rn_args;
template <int VV>
__device__ __forceinline__ void kf_pro(const rn_args& a, int64_t row, int64_t col, float* x);
template <int VV>
__device__ __forceinline__ void kf_epi(const rn_args& a, int64_t row, int64_t col, float* y);

}  // namespace kfk

// row_norm_cuda.cuh: the fixed code of the row_norm family (row_norm_cuda.cpp): LayerNorm or RMSNorm over each row
// of the trailing dims, with a fused elementwise prologue (whose result the kernel may also store: a residual add's
// sum) and epilogue. Emitted before it (namespace kfk):
//   STRAT, TEAM, BLOCK, FIT, CL, V, CHUNKS, WAVES, WREGS, WLOAD, ONEPASS, STREAM, PDL   the variant's knobs
//   k_layer, k_has_w, k_has_b, k_eps, k_write_h, k_y_output, k_h_output     what the graph computes and returns
//   NOPND, NPRO, kf_operand_input, kf_operand_dtype, k_w_input, k_b_input  the operands (0 is x; [0, NPRO) are read
//                                                                           before the norm, the rest after)
//   out_t, h_t (the norm's input type), w_t, b_t, t0 .. t<NOPND-1>
//   kf_pro<VV>(const rn_args&, row, col, float* x)   VV prologue results at (row, col), rounded through h_t
//   kf_epi<VV>(const rn_args&, row, col, float* y)   the epilogue on VV normalized values at (row, col)
// declared there and defined after this file (they read rn_args).
// Strategies: a team of TEAM threads per row (several rows a warp, or a warp a row), a block per row, or a cluster of
// CL blocks per row reducing through distributed shared memory. A row that fits in the threads' registers (CHUNKS
// vectors of V elements a thread) is read once; a longer one is read again for each statistic and for the write.

namespace kfk {

struct rn_args {
  const void* o[NOPND];
  int64_t ors[NOPND];  // an operand's row stride: n (one value per element) or 0 (one row, broadcast)
  const w_t* w;
  const b_t* b;
  out_t* y;
  h_t* h;
  int64_t rows, n;
  float inv_n;
};

constexpr int k_rows_per_cta = STRAT == 0 ? BLOCK / TEAM : 1;
constexpr bool k_fit = FIT && STRAT == 1;  // a block per row, as wide as the row needs (at most BLOCK threads)

// The threads that share one row: a team, the block (launched narrower than BLOCK when k_fit), a cluster's blocks.
__device__ __forceinline__ int row_threads() {
  if constexpr (STRAT == 0) return TEAM;
  else if constexpr (STRAT == 1) return k_fit ? (int)blockDim.x : BLOCK;
  else return BLOCK * CL;
}

// The sum of (a, b) over the threads that share a row; every one of them gets it.
__device__ __forceinline__ f2 row_sum(f2 v, f2* scratch, f2* slot) {
  auto add = [](f2 p, f2 q) { return f2{p.a + q.a, p.b + q.b}; };
  if constexpr (STRAT == 0) {
#pragma unroll
    for (int o = TEAM / 2; o > 0; o >>= 1) v = add(v, shfl_xor(v, o));
    return v;
  } else if constexpr (STRAT == 1) {
    return block_reduce<BLOCK>(v, add, scratch, row_threads() / 32);
  } else {
    return cluster_reduce<BLOCK, CL>(v, add, scratch, slot);
  }
}

// This thread's index among the row's threads.
__device__ __forceinline__ int row_lane() {
  if constexpr (STRAT == 0) return threadIdx.x % TEAM;
  else if constexpr (STRAT == 1) return threadIdx.x;
  else return (int)cluster_rank() * BLOCK + threadIdx.x;
}

template <int VV>
__device__ __forceinline__ void load_affine(const rn_args& a, int64_t col, float* w, float* b) {
#pragma unroll
  for (int e = 0; e < VV; ++e) {
    w[e] = 1.f;
    b[e] = 0.f;
  }
  if constexpr (k_has_w) load_vec<w_t, VV>(a.w + col, w);
  if constexpr (k_has_b) load_vec<b_t, VV>(a.b + col, b);
}

// y = (x - mean) * rstd * w + b (LayerNorm) or x * rstd * w (RMSNorm), the epilogue, the store.
template <int VV>
__device__ __forceinline__ void finish(const rn_args& a, int64_t row, int64_t col, const float* x, const float* w,
                                       const float* b, float mean, float rstd) {
  float y[VV];
#pragma unroll
  for (int e = 0; e < VV; ++e) {
    if constexpr (k_layer) y[e] = (x[e] - mean) * rstd * w[e] + b[e];
    else y[e] = x[e] * rstd * w[e];
  }
  kf_epi<VV>(a, row, col, y);
  store_vec<out_t, VV, STREAM>(a.y + row * a.n + col, y);
}

template <int VV>
__device__ __forceinline__ void prologue(const rn_args& a, int64_t row, int64_t col, float* x) {
  kf_pro<VV>(a, row, col, x);
  if constexpr (k_write_h) store_vec<h_t, VV, false>(a.h + row * a.n + col, x);
}

// LayerNorm's statistics are taken around the row's first element (the prologue's value at column 0, loaded by every
// thread of the row): a row of one repeated value (verify's all_equal_rows) then has an exact mean and x - mean = 0,
// where sum / n can miss that value by an ulp, which rstd = 1/sqrt(eps) magnifies (a fresh float32 LayerNorm failed
// so by 5.9e3 times float32's tolerance on the H200). RMSNorm: 0.
__device__ __forceinline__ float row_shift(const rn_args& a, int64_t row) {
  if constexpr (!k_layer) {
    return 0.f;
  } else {
    float f[1];
    kf_pro<1>(a, row, 0, f);
    return f[0];
  }
}

// A row longer than the registers hold: one pass for each statistic, one for the write (the prologue is
// recomputed each time; h is written once). Each thread sums many elements here: in double, around the row's first
// element (row_shift).
template <int VV>
__device__ void row_streamed(const rn_args& a, int64_t row, bool active, f2* scratch, f2* slot) {
  const int lane = row_lane();
  const int step = row_threads() * VV;
  const float shift = row_shift(a, active ? row : 0);
  double acc = 0.0;
  for (int64_t col = (int64_t)lane * VV; active && col < a.n; col += step) {
    float x[VV], part = 0.f;
    prologue<VV>(a, row, col, x);
#pragma unroll
    for (int e = 0; e < VV; ++e) part += k_layer ? x[e] - shift : x[e] * x[e];
    acc += part;
  }
  f2 s = row_sum(f2{(float)acc, 0.f}, scratch, slot);
  float mean = 0.f, rstd;
  if constexpr (k_layer) {
    mean = shift + s.a * a.inv_n;
    double dev = 0.0;
    for (int64_t col = (int64_t)lane * VV; active && col < a.n; col += step) {
      float x[VV], part = 0.f;
      kf_pro<VV>(a, row, col, x);
#pragma unroll
      for (int e = 0; e < VV; ++e) part += (x[e] - mean) * (x[e] - mean);
      dev += part;
    }
    const f2 q = row_sum(f2{(float)dev, 0.f}, scratch, slot);
    rstd = rsqrtf(q.a * a.inv_n + k_eps);
  } else {
    rstd = rsqrtf(s.a * a.inv_n + k_eps);
  }
  for (int64_t col = (int64_t)lane * VV; active && col < a.n; col += step) {
    float x[VV], w[VV], b[VV];
    kf_pro<VV>(a, row, col, x);
    load_affine<VV>(a, col, w, b);
    finish<VV>(a, row, col, x, w, b, mean, rstd);
  }
}

// One kernel for every strategy: each CTA (cluster) takes k_rows_per_cta rows a step, grid-stride over the rows.
// Every thread runs every step (the reductions need the whole team, block or cluster); `active` guards the memory.
// A row that fits is read whole before anything is stored: a store between two loads would keep the next load waiting
// for it (the pointers may alias), one memory latency per vector. EARLY: the weights are read with the row too, in
// registers beside it (one memory latency for a row, what a one-wave grid waits on); else each vector's weights are
// read after the statistics, packed as stored (fewer registers, more rows in flight an SM, what a grid of many waves
// needs).
template <int VV, int CH, bool EARLY>
__global__ void __launch_bounds__(BLOCK) rn_kernel(rn_args a) {
  __shared__ f2 scratch[BLOCK / 32 > 0 ? BLOCK / 32 : 1];
  __shared__ f2 slot;
  wait_prior_grid<PDL>();
  const int lane = row_lane();
  const int64_t group = STRAT == 2 ? blockIdx.x / CL : blockIdx.x;
  const int64_t groups = STRAT == 2 ? gridDim.x / CL : gridDim.x;
  const int sub = STRAT == 0 ? threadIdx.x / TEAM : 0;
  const int nthr = row_threads();
  const bool fits = a.n <= (int64_t)CH * nthr * VV;
  // The weights and bias of this thread's columns: loaded once before the first row when WREGS (persistent grids
  // reuse them), else with each row.
  constexpr bool hold = EARLY || (WREGS && WAVES > 0);
  float wr[CH][VV], br[CH][VV];  // unused (and left out by the compiler) unless `hold`
  auto load_weights = [&] {
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int64_t col = ((int64_t)c * nthr + lane) * VV;
      load_affine<VV>(a, col < a.n ? col : 0, wr[c], br[c]);  // unguarded, as the row's loads below
    }
  };
  if constexpr (hold)
    if (WREGS && fits) load_weights();
  for (int64_t base = group * k_rows_per_cta; base < a.rows; base += groups * k_rows_per_cta) {
    const int64_t row = base + sub;
    const bool active = row < a.rows;
    if (!fits) {
      row_streamed<VV>(a, row, active, scratch, &slot);
      continue;
    }
    // Every chunk loads, one outside the row (or a thread past the last row) at row 0, column 0 (in bounds: a
    // launch has rows and n >= VV), and is then zeroed: a branch around each chunk's load kept it waiting for the
    // chunk before it (one memory latency a chunk, in the SASS), where straight code issues them all at once.
    // Chunks outside the row hold the shift: they add 0 to the statistics.
    const float shift = row_shift(a, active ? row : 0);
    float x[CH][VV];
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int64_t col = ((int64_t)c * nthr + lane) * VV;
      const bool in = active && col < a.n;
      kf_pro<VV>(a, in ? row : 0, in ? col : 0, x[c]);
#pragma unroll
      for (int e = 0; e < VV; ++e) x[c][e] = in ? x[c][e] : (k_layer ? shift : 0.f);
    }
    if constexpr (hold)
      if (!WREGS && active) load_weights();
    f2 s{0.f, 0.f};
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int64_t col = ((int64_t)c * nthr + lane) * VV;
      if constexpr (k_write_h)
        if (active && col < a.n) store_vec<h_t, VV, false>(a.h + row * a.n + col, x[c]);
#pragma unroll
      for (int e = 0; e < VV; ++e) {  // chunks outside the row are the shift (RMSNorm: zeros)
        // RMSNorm's sums as written before the shift (its shift is 0): written as x - 0, the same sums compiled to
        // other code (the PTX of Qwen3's add + RMSNorm winner changed; its T=1 case timed 1.72 -> 2.15 us on H100s).
        if constexpr (k_layer) {
          const float d = x[c][e] - shift;
          s.a += d;
          s.b += d * d;
        } else {
          s.a += x[c][e];
          s.b += x[c][e] * x[c][e];
        }
      }
    }
    float mean = 0.f, rstd;
    if constexpr (!k_layer) {
      s.a = s.b;  // RMSNorm: the sum of squares
      s.b = 0.f;
      s = row_sum(s, scratch, &slot);
      rstd = rsqrtf(s.a * a.inv_n + k_eps);
    } else if constexpr (ONEPASS) {
      s = row_sum(s, scratch, &slot);
      const float m = s.a * a.inv_n;  // the mean's distance from the shift
      mean = shift + m;
      rstd = rsqrtf(fmaxf(s.b * a.inv_n - m * m, 0.f) + k_eps);
    } else {
      s.b = 0.f;
      s = row_sum(s, scratch, &slot);
      mean = shift + s.a * a.inv_n;
      f2 q{0.f, 0.f};
#pragma unroll
      for (int c = 0; c < CH; ++c) {
        const int64_t col = ((int64_t)c * nthr + lane) * VV;
        if (active && col < a.n) {
#pragma unroll
          for (int e = 0; e < VV; ++e) q.a += (x[c][e] - mean) * (x[c][e] - mean);
        }
      }
      q = row_sum(q, scratch, &slot);
      rstd = rsqrtf(q.a * a.inv_n + k_eps);
    }
    // Late weights: every chunk's loaded before the first store, as stored (16-bit values stay packed two a
    // register), so that their loads wait one latency together rather than one each between the stores.
    packed<w_t, VV> pw[CH];
    packed<b_t, VV> pb[CH];
    if constexpr (!hold) {
#pragma unroll
      for (int c = 0; c < CH; ++c) {
        const int64_t col = ((int64_t)c * nthr + lane) * VV;
        const int64_t at = col < a.n ? col : 0;
        if constexpr (k_has_w) pw[c].load(a.w + at);
        if constexpr (k_has_b) pb[c].load(a.b + at);
      }
    }
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int64_t col = ((int64_t)c * nthr + lane) * VV;
      if (active && col < a.n) {
        if constexpr (hold) {
          finish<VV>(a, row, col, x[c], wr[c], br[c], mean, rstd);
        } else {
          float w[VV], b[VV];
#pragma unroll
          for (int e = 0; e < VV; ++e) {
            w[e] = 1.f;
            b[e] = 0.f;
          }
          if constexpr (k_has_w) pw[c].to_float(w);
          if constexpr (k_has_b) pb[c].to_float(b);
          finish<VV>(a, row, col, x[c], w, b, mean, rstd);
        }
      }
    }
  }
}

// The GPU's SMs, read at the first launch. Host state at namespace scope with internal linkage (CONTRIBUTING.md):
// a function-local static of an inline function would be one object for every candidate library in the worker.
static int g_rn_sms = 0;
inline int rn_sms() {
  if (!g_rn_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_rn_sms, cudaDevAttrMultiProcessorCount, dev);
    if (g_rn_sms <= 0) g_rn_sms = 132;
  }
  return g_rn_sms;
}

// CTAs for `groups` row groups: one a group (WAVES 0), or WAVES waves of resident CTAs (clusters).
template <typename K>
inline int64_t rn_grid(K kernel, int64_t groups) {
  if (WAVES == 0) return groups;
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK, 0) != cudaSuccess || per_sm < 1) per_sm = 1;
  int64_t resident = (int64_t)rn_sms() * per_sm * WAVES / (STRAT == 2 ? CL : 1);
  if (resident < 1) resident = 1;
  return groups < resident ? groups : resident;
}

template <int VV, int CH, bool EARLY>
inline int rn_launch_as(const rn_args& a, cudaStream_t s) {
  auto kernel = rn_kernel<VV, CH, EARLY>;
  const int64_t groups = rn_grid(kernel, (a.rows + k_rows_per_cta - 1) / k_rows_per_cta);
  if (STRAT == 2) return launch_clusters<PDL>(kernel, CL, dim3((unsigned)(groups * CL)), BLOCK, 0, s, a);
  int threads = BLOCK;
  if (k_fit) {  // the fewest whole warps that hold the row in CH vectors a thread
    const int64_t need = (a.n + (int64_t)CH * VV - 1) / ((int64_t)CH * VV);
    threads = need >= BLOCK ? BLOCK : (int)((need + 31) / 32 * 32);
  }
  return launch_kernel<PDL>(kernel, dim3((unsigned)groups), threads, 0, s, a);
}

// WLOAD 0 (auto): the weights early when the rows fit in one wave of CTAs (a few rows: latency-bound), late otherwise.
template <int VV, int CH>
inline int rn_launch(const rn_args& a, cudaStream_t s) {
  const bool early = WLOAD == 1 || (WLOAD == 0 && (a.rows + k_rows_per_cta - 1) / k_rows_per_cta <= rn_sms());
  if (WLOAD != 2 && early) return rn_launch_as<VV, CH, true>(a, s);
  return rn_launch_as<VV, CH, false>(a, s);
}

// The scalar path (rows whose length or address does not allow V-wide accesses): its registers hold fewer values
// than V-wide chunks (each scalar chunk has its own address and weights), so it holds at most a share of what a
// thread's registers take, and longer rows are streamed. Holding CHUNKS x V values, as the vector path does,
// spilled 0.4 to 1.5 KB a thread (ptxas, LayerNorm + weight + bias + GELU at 256 to 1024 threads).
constexpr int k_scalar_regs = 65536 / BLOCK < 255 ? 65536 / BLOCK : 255;
constexpr int k_scalar_fit = (k_scalar_regs - 64) / (4 * (1 + (k_has_w ? 1 : 0) + (k_has_b ? 1 : 0)));
constexpr int k_scalar_chunks = CHUNKS * V < k_scalar_fit ? CHUNKS * V
                                : k_scalar_fit < 1        ? 1
                                : k_scalar_fit > 32       ? 32
                                                          : k_scalar_fit;

template <typename T>
inline bool rn_aligned(const void* p) {
  return p == nullptr || aligned(p, vec_align<T, V>());
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != KF_N_INPUTS || n_out != (k_write_h ? 2 : 1)) return 1;
  const kf_tensor& x = in[kf_operand_input[0]];
  if (x.dtype != kf_operand_dtype[0] || x.ndim < KF_NORM_DIMS || !contiguous(x)) return 1;
  rn_args a = {};
  a.n = 1;
  for (int d = x.ndim - KF_NORM_DIMS; d < x.ndim; ++d) a.n *= x.shape[d];
  a.rows = a.n > 0 ? numel(x) / a.n : 0;
  a.inv_n = a.n > 0 ? 1.f / (float)a.n : 0.f;
  auto matches = [&](const kf_tensor& t, int dtype, int64_t count) {
    return t.dtype == dtype && contiguous(t) && numel(t) == count;
  };
  const kf_tensor& y = out[k_y_output];
  if (!matches(y, dtype_code<out_t>::value, a.rows * a.n)) return 1;
  a.y = static_cast<out_t*>(y.data);
  bool vec = a.n % V == 0 && rn_aligned<out_t>(a.y);
  if constexpr (k_write_h) {
    if (!matches(out[k_h_output], dtype_code<h_t>::value, a.rows * a.n)) return 1;
    a.h = static_cast<h_t*>(out[k_h_output].data);
    vec = vec && rn_aligned<h_t>(a.h);
  }
  if constexpr (k_has_w) {
    if (!matches(in[k_w_input], dtype_code<w_t>::value, a.n)) return 1;
    a.w = static_cast<const w_t*>(in[k_w_input].data);
    vec = vec && rn_aligned<w_t>(a.w);
  }
  if constexpr (k_has_b) {
    if (!matches(in[k_b_input], dtype_code<b_t>::value, a.n)) return 1;
    a.b = static_cast<const b_t*>(in[k_b_input].data);
    vec = vec && rn_aligned<b_t>(a.b);
  }
  for (int k = 0; k < NOPND; ++k) {
    const kf_tensor& t = in[kf_operand_input[k]];
    if (t.dtype != kf_operand_dtype[k] || !contiguous(t)) return 1;
    const int64_t count = numel(t);
    if (count == a.rows * a.n) a.ors[k] = a.n;
    else if (k > 0 && count == a.n) a.ors[k] = 0;
    else return 1;
    a.o[k] = t.data;
    vec = vec && aligned(t.data, kf_operand_align[k]);
  }
  if (a.rows == 0 || a.n == 0) return 0;
  if (vec) return rn_launch<V, CHUNKS>(a, s);
  return rn_launch<1, k_scalar_chunks>(a, s);
}

}  // namespace kfk

// ---- this variant ----
namespace kfk {

template <int VV>
__device__ __forceinline__ void kf_pro(const rn_args& a, int64_t row, int64_t col, float* out) {
  float x0[VV];
  load_vec<t0, VV>(static_cast<const t0*>(a.o[0]) + row * a.ors[0] + col, x0);
#pragma unroll
  for (int e = 0; e < VV; ++e) {
    float v = x0[e];
    out[e] = kf_round_to<h_t>(v);
  }
}
template <int VV>
__device__ __forceinline__ void kf_epi(const rn_args& a, int64_t row, int64_t col, float* y) {
#pragma unroll
  for (int e = 0; e < VV; ++e) {
    float v = y[e];
    y[e] = v;
  }
}

}  // namespace kfk

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));
}
