// kforge kernel: family pointwise_cuda, version 5
// knobs: block=128 loads=1 math=fast occupancy=any pdl=1 spread=1 store=default vec=16 waves=0
// computes: silu -> mul (one pass)
// kforge winner: llama3-8b-swiglu on sm90-nvidia-h200
// found: by `kforge search` (template proposer) on 2026-12-05T04:36:48Z
// lineage: default
// measured: 6.20 us (geometric mean over gated cases), 1.80x eager
// re-emitted: by `kforge reemit` on 2026-12-05T05:11:33Z, pointwise_cuda version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T03:06:52Z, pointwise_cuda version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T08:56:10Z, pointwise_cuda version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T19:05:15Z, pointwise_cuda version 5 from version 5; measured above is the earlier kernel's

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
using t0 = __nv_bfloat16;
using t1 = __nv_bfloat16;
constexpr int V = 16;
constexpr int LOADS = 1;
constexpr int BLOCK = 128;
constexpr int WAVES = 0;
constexpr bool STREAM = false;
constexpr bool PDL = true;
constexpr bool SPREAD = true;
#define KF_PW_MINB 1
constexpr int NOPND = 2;
constexpr int KF_N_INPUTS = 2;
constexpr int KF_OUT_RANK = 2;
constexpr int kf_operand_input[NOPND] = {0, 1};
constexpr int kf_operand_dtype[NOPND] = {KF_BFLOAT16, KF_BFLOAT16};
constexpr int kf_operand_align[NOPND] = {16, 16};

__device__ __forceinline__ float kf_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float kf_erf(float x) { return erff(x); }
__device__ __forceinline__ float kf_relu(float x) { return x != x ? x : fmaxf(x, 0.f); }
template <typename T> __device__ __forceinline__ float kf_round_to(float x) { return to_f(from_f<T>(x)); }
__device__ __forceinline__ float kf_round(int code, float x) {
  return code == KF_FLOAT16 ? kf_round_to<__half>(x) : code == KF_BFLOAT16 ? kf_round_to<__nv_bfloat16>(x)
       : code == KF_INT32 ? (float)(int32_t)x : code == KF_INT64 ? (float)(int64_t)x : code == KF_UINT8 ? (float)(uint8_t)x : x;
}
__device__ __forceinline__ float kf_exp(float x) { return exp_ftz(x); }
__device__ __forceinline__ float kf_tanh(float x) { return tanh_exp(x); }
__device__ __forceinline__ float kf_sigmoid(float x) { return rcp_ftz(1.f + ex2_ftz(-1.44269504088896341f * x)); }
__device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * (1.f + kf_erf(x * 0.70710678118654752f)); }
__device__ __forceinline__ float kf_gelu_tanh(float x) {
  return 0.5f * x * (1.f + kf_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

struct pw_args;
struct pw_raw {
  packed<t0, V> r0;
  packed<t1, V> r1;
};
__device__ __forceinline__ void kf_vec_load(const pw_args& a, int64_t i, pw_raw& r);
__device__ __forceinline__ void kf_vec_math(const pw_raw& r, float* y);
__device__ __forceinline__ float kf_one(const pw_args& a, int64_t i);

}  // namespace kfk

// pointwise_cuda.cuh: the fixed code of the pointwise family (pointwise_cuda.cpp): any chain of elementwise ops in
// one pass, one read of each operand element and one write of each result. Emitted before it (namespace kfk):
//   V, LOADS, BLOCK, WAVES, STREAM, PDL, SPREAD, NOPND  the variant's knobs and the operand count
//   KF_PW_MINB (a macro)                  the occupancy knob's minimum blocks an SM (1: none)
//   out_t, t0 .. t<NOPND-1>                the stored types; operand 0 is the chain's input
//   pw_raw                                 every operand's V elements as loaded (packed<t_k, V>, unconverted)
//   kf_vec_load(const pw_args&, int64_t i, pw_raw&)  issues the loads of the V elements at i of every operand
//   kf_vec_math(const pw_raw&, float* y)            V results from them (every operand full or row)
//   kf_one(const pw_args&, int64_t i)             one result from element i, any layout (broadcast, strided)
// declared there and defined after this file (they read pw_args).
// The loads are issued apart from the math (v5): a conversion of operand 0's values placed before operand 1's
// address (a branch: full or row) waited for operand 0's load, so each operand cost its own memory latency (SASS
// of the stored SwiGLU winner: the second LDG.128 pair after the first pair's PRMTs; on the H200, SwiGLU T=1 went
// from 1.58 to 1.50 us without it, docs/kernel-notes.md).
// Two paths, chosen at launch: vectors (every operand is the output's shape or a row of its trailing dims,
// contiguous and aligned; LOADS independent vectors in flight per thread) and, for anything else, one element a
// thread with its offsets computed from the strides. The tail past the last whole vector takes the scalar path.

namespace kfk {

// An operand as the launch classified it: full (the output's shape, contiguous), row (a contiguous block of the
// output's trailing dims, broadcast over the leading ones: element i reads i % inner) or general.
enum { pw_full = 0, pw_row = 1, pw_general = 2 };
struct pw_opnd {
  const void* p;
  int kind;
  int64_t inner;
  int ndim;
  int64_t shape[KF_MAX_DIMS], stride[KF_MAX_DIMS];
};
struct pw_args {
  pw_opnd o[NOPND];
  out_t* y;
  int64_t n;
  int ndim;  // the output's shape (the general path unravels element indices over it)
  int64_t shape[KF_MAX_DIMS], stride[KF_MAX_DIMS];
};

// The offset of element i (row-major over the output's shape) in an operand, broadcast dims read once.
__device__ __forceinline__ int64_t pw_offset(const pw_opnd& t, const pw_args& a, int64_t i) {
  if (t.kind == pw_full) return i;
  if (t.kind == pw_row) return i % t.inner;
  int64_t off = 0;
  const int lead = a.ndim - t.ndim;
  for (int d = a.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % a.shape[d];
    i /= a.shape[d];
    const int td = d - lead;
    if (td >= 0 && t.shape[td] != 1) off += idx * t.stride[td];
  }
  return off;
}
__device__ __forceinline__ int64_t pw_out_offset(const pw_args& a, int64_t i) {
  int64_t off = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    off += (i % a.shape[d]) * a.stride[d];
    i /= a.shape[d];
  }
  return off;
}

template <typename T>
__device__ __forceinline__ float pw_load_one(const pw_opnd& t, const pw_args& a, int64_t i) {
  return to_f(static_cast<const T*>(t.p)[pw_offset(t, a, i)]);
}
template <typename T>
__device__ __forceinline__ const T* pw_vec_ptr(const pw_opnd& t, int64_t i) {
  return static_cast<const T*>(t.p) + (t.kind == pw_row ? i % t.inner : i);
}

// Vector path: each thread takes LOADS vectors of V elements a step, BLOCK threads apart (coalesced), the loads of
// every vector and operand issued before any value is converted; then the scalar tail [tail_start, n).
// (Templates, so that kf_vec and kf_one, which the emitter defines after this file, are needed only where kf_launch
// instantiates them.)
// The occupancy knob: a minimum of blocks an SM caps the registers. Only when asked: `__launch_bounds__(128, 1)` is
// not `__launch_bounds__(128)` to ptxas (GeGLU: 52 registers against 39).
#if KF_PW_MINB > 1
#define KF_PW_BOUNDS(nt) __launch_bounds__(nt, (nt) == BLOCK ? KF_PW_MINB : 1)
#else
#define KF_PW_BOUNDS(nt) __launch_bounds__(nt)
#endif

// NT: the block, BLOCK threads or a warp where SPREAD narrowed it (pw_grid); a constant in the index math.
template <int NT>
__global__ void KF_PW_BOUNDS(NT) pw_vec_kernel(pw_args a, int64_t nvec, int64_t tail_start) {
  wait_prior_grid<PDL>();
  constexpr int nt = NT;
  const int64_t step = (int64_t)gridDim.x * nt * LOADS;
  for (int64_t base = (int64_t)blockIdx.x * nt * LOADS + threadIdx.x; base < nvec; base += step) {
    pw_raw raw[LOADS];
    // Every step loads (one past the end re-reads vector 0): a branch around each load kept it waiting for the
    // math of the step before, one memory latency a step, where straight code issues all LOADS at once.
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
      const int64_t j = base + (int64_t)l * nt;
      kf_vec_load(a, (j < nvec ? j : 0) * V, raw[l]);
    }
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
      const int64_t j = base + (int64_t)l * nt;
      float y[V];
      kf_vec_math(raw[l], y);
      if (j < nvec) store_vec<out_t, V, STREAM>(a.y + j * V, y);
    }
  }
  for (int64_t i = tail_start + (int64_t)blockIdx.x * nt + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * nt)
    a.y[i] = from_f<out_t>(kf_one(a, i));
}

// General path: one element a thread, grid-stride.
template <int NT>
__global__ void KF_PW_BOUNDS(NT) pw_one_kernel(pw_args a) {
  wait_prior_grid<PDL>();
  constexpr int nt = NT;
  for (int64_t i = (int64_t)blockIdx.x * nt + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * nt)
    a.y[pw_out_offset(a, i)] = from_f<out_t>(kf_one(a, i));
}

// The GPU's SMs, read at the first launch. Host state at namespace scope with internal linkage (CONTRIBUTING.md):
// a function-local static of an inline function would be one object for every candidate library in the worker.
static int g_pw_sms = 0;
inline int pw_sms() {
  if (!g_pw_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_pw_sms, cudaDevAttrMultiProcessorCount, dev);
    if (g_pw_sms <= 0) g_pw_sms = 132;
  }
  return g_pw_sms;
}

struct pw_launch {
  int64_t blocks;
  int threads;
};

// Blocks for `items` thread-items: enough for one item each (WAVES 0), or WAVES waves of resident blocks. SPREAD: a
// one-shot grid of fewer blocks than SMs launches blocks of a warp instead, so that a small tensor (a decode step) is
// read by many SMs at once rather than by a few, each waiting on its own requests.
inline pw_launch pw_grid(int64_t items) {
  int threads = BLOCK;
  int64_t need = (items + threads - 1) / threads;
  if (need < 1) need = 1;
  if (WAVES == 0) {
    if (SPREAD && BLOCK > 32 && need < pw_sms()) {
      threads = 32;
      need = (items + 31) / 32;
    }
    return {need < 2147483647 ? need : 2147483647, threads};
  }
  const int64_t resident = (int64_t)pw_sms() * (2048 / BLOCK) * WAVES;
  return {need < resident ? need : resident, threads};
}

// Classifies an operand against the output's shape (right-aligned, as broadcasting reads it).
inline pw_opnd pw_classify(const kf_tensor& t, const kf_tensor& y) {
  pw_opnd o;
  o.p = t.data;
  o.ndim = t.ndim;
  for (int d = 0; d < KF_MAX_DIMS; ++d) {
    o.shape[d] = d < t.ndim ? t.shape[d] : 1;
    o.stride[d] = d < t.ndim ? t.stride[d] : 0;
  }
  o.kind = pw_general;
  o.inner = 1;
  if (!contiguous(t)) return o;
  const int lead = y.ndim - t.ndim;
  int first = t.ndim;  // the first dim of t's trailing block that matches y's
  for (int d = t.ndim - 1; d >= 0 && t.shape[d] == y.shape[d + lead]; --d) first = d;
  for (int d = 0; d < first; ++d)
    if (t.shape[d] != 1) return o;
  for (int d = first; d < t.ndim; ++d) o.inner *= t.shape[d];
  o.kind = first == 0 && lead == 0 ? pw_full : pw_row;
  return o;
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != KF_N_INPUTS || n_out != 1) return 1;
  const kf_tensor& y = out[0];
  if (y.dtype != dtype_code<out_t>::value || y.ndim != KF_OUT_RANK) return 1;
  pw_args a;
  a.y = static_cast<out_t*>(y.data);
  a.n = numel(y);
  a.ndim = y.ndim;
  for (int d = 0; d < KF_MAX_DIMS; ++d) {
    a.shape[d] = d < y.ndim ? y.shape[d] : 1;
    a.stride[d] = d < y.ndim ? y.stride[d] : 0;
  }
  bool vec = contiguous(y) && reinterpret_cast<uintptr_t>(y.data) % vec_align<out_t, V>() == 0;
  for (int k = 0; k < NOPND; ++k) {
    const kf_tensor& t = in[kf_operand_input[k]];
    if (t.dtype != kf_operand_dtype[k] || t.ndim > y.ndim) return 1;
    for (int d = 0; d < t.ndim; ++d)
      if (t.shape[d] != 1 && t.shape[d] != y.shape[d + y.ndim - t.ndim]) return 1;
    a.o[k] = pw_classify(t, y);
    vec = vec && a.o[k].kind != pw_general && (a.o[k].kind == pw_full || a.o[k].inner % V == 0) &&
          reinterpret_cast<uintptr_t>(t.data) % kf_operand_align[k] == 0;
  }
  if (a.n == 0) return 0;
  if (vec) {
    const int64_t nvec = a.n / V;
    const pw_launch g = pw_grid((nvec + LOADS - 1) / LOADS);
    if constexpr (SPREAD && BLOCK != 32)  // the warp-wide kernel is instantiated only where it can run
      if (g.threads == 32)
        return launch_kernel<PDL>(pw_vec_kernel<32>, dim3((unsigned)g.blocks), 32, 0, s, a, nvec, nvec * V);
    return launch_kernel<PDL>(pw_vec_kernel<BLOCK>, dim3((unsigned)g.blocks), BLOCK, 0, s, a, nvec, nvec * V);
  }
  const pw_launch g = pw_grid(a.n);
  if constexpr (SPREAD && BLOCK != 32)
    if (g.threads == 32) return launch_kernel<PDL>(pw_one_kernel<32>, dim3((unsigned)g.blocks), 32, 0, s, a);
  return launch_kernel<PDL>(pw_one_kernel<BLOCK>, dim3((unsigned)g.blocks), BLOCK, 0, s, a);
}

}  // namespace kfk

// ---- this variant ----
namespace kfk {

__device__ __forceinline__ void kf_vec_load(const pw_args& a, int64_t i, pw_raw& r) {
  const t0* p0 = pw_vec_ptr<t0>(a.o[0], i);
  const t1* p1 = pw_vec_ptr<t1>(a.o[1], i);
  r.r0.load(p0);
  r.r1.load(p1);
}
__device__ __forceinline__ void kf_vec_math(const pw_raw& r, float* y) {
  float x0[V];
  r.r0.to_float(x0);
  float x1[V];
  r.r1.to_float(x1);
#pragma unroll
  for (int e = 0; e < V; ++e) {
    float v = x0[e];
    v = v * kf_sigmoid(v);
    v = v * x1[e];
    y[e] = v;
  }
}
__device__ __forceinline__ float kf_one(const pw_args& a, int64_t i) {
  float v = pw_load_one<t0>(a.o[0], a, i);
    v = v * kf_sigmoid(v);
    v = v * pw_load_one<t1>(a.o[1], a, i);
  return v;
}

}  // namespace kfk

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));
}
