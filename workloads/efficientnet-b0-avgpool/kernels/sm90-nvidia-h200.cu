// kforge kernel: family pool_cuda, version 1
// knobs: cl_threads=32 pdl=1 small_cl_loop=0 small_cl_threads=2 small_cl_warp=0 small_direct=0 small_threads=128 small_tpp=8 threads=256 tpp=2 vec=8
// computes: x[float16] -> adaptive_avg_pool2d(1) -> flatten
// kforge winner: efficientnet-b0-avgpool on sm90-nvidia-h200
// found: by `kforge search` (template proposer) on 2026-12-02T06:45:08Z
// lineage: default
// measured: 2.24 us (geometric mean over gated cases), 2.79x eager
// re-emitted: by `kforge reemit` on 2026-12-02T10:00:49Z, pool_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-02T13:52:49Z, pool_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T03:06:52Z, pool_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T08:56:10Z, pool_cuda version 1 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T19:05:15Z, pool_cuda version 1 from version 1; measured above is the earlier kernel's

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

using in_t = __half;
using out_t = __half;
constexpr int k_threads = 256;
constexpr int k_vec = 8;
constexpr int k_tpp = 2;
constexpr int k_clt = 32;
constexpr int k_small_threads = 128;
constexpr int k_small_tpp = 8;
constexpr int k_small_direct = 0;
constexpr int k_small_clt = 2;
constexpr int k_small_cl_loop = 0;
constexpr int k_small_cl_warp = 0;
constexpr int k_flat_k = 4;
constexpr bool k_pdl = true;
constexpr int k_n_inputs = 1;
constexpr int k_x_input = 0;

__device__ __forceinline__ float finalize(float x) {
  return x;
}

}  // namespace kfk

// pool_cuda.cuh: the fixed code of pool_cuda, emitted after the variant's constants, types and casts
// (pool_cuda.cpp): the NCHW and channels_last kernels, the small-batch launches, and kf_launch's checks.

namespace kfk {

constexpr int k_tpp_small = k_small_tpp > 0 ? k_small_tpp : k_tpp;
constexpr int k_clt_small = k_small_clt > 0 ? k_small_clt : k_clt;

struct pool_args {
  const in_t* x;
  out_t* y;
  int64_t n, c, hw;  // images, channels, positions per plane
  float inv_hw;
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

// x[0] + x[TPP] + x[2 TPP] + ... below hw, from thread `sub`'s first element, with indices of type I.
template <int TPP, typename I>
__device__ __forceinline__ float strided_sum(const in_t* x, I hw, int sub) {
  float acc = 0.f;
#pragma unroll 4
  for (I k = sub; k < hw; k += TPP) acc += to_f(x[k]);
  return acc;
}

// NCHW: planes are contiguous; a block of BT threads takes BT / TPP planes at a time. STAGED: the block copies its
// planes into shared memory with V-element accesses first (else each thread reads its plane from global memory).
// I: the index type, int where every index fits (index_fits).
template <int BT, int V, int TPP, bool STAGED, typename I>
__global__ void __launch_bounds__(BT) nchw_kernel(pool_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  in_t* tile = reinterpret_cast<in_t*>(smem_raw);
  constexpr int P = BT / TPP;
  const I planes = (I)(a.n * a.c), hw = (I)a.hw;
  const int j = threadIdx.x / TPP, sub = threadIdx.x % TPP;
  for (I p0 = (I)blockIdx.x * P; p0 < planes; p0 += (I)gridDim.x * P) {
    const I np = planes - p0 < P ? planes - p0 : (I)P;
    const in_t* src = a.x + p0 * hw;
    float acc = 0.f;
    if constexpr (STAGED) {  // the block's planes fit in shared memory: int indices there
      const int ne = (int)(np * hw);
      for (int i = (int)threadIdx.x * V; i < ne; i += BT * V) {
        if (i + V <= ne) copy_vec<in_t, V>(tile + i, src + i);
        else
          for (int t = i; t < ne; ++t) tile[t] = src[t];
      }
      __syncthreads();
      if (j < np) acc = strided_sum<TPP>(tile + j * (int)hw, (int)hw, sub);
    } else {
      if (j < np) acc = strided_sum<TPP>(src + (I)j * hw, hw, sub);
    }
#pragma unroll
    for (int o = TPP / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (sub == 0 && j < np) a.y[p0 + j] = from_f<out_t>(finalize(acc * a.inv_hw));
    if constexpr (STAGED) __syncthreads();
  }
}

// ---- NCHW "flat" reads (small batches, small_direct = 2) ----
// A block owns P whole planes: one contiguous range of P * hw elements that starts on a 16-byte boundary and is
// at most k_flat_k vectors a thread (flat_fits). Each thread issues its 16-byte loads first, so the block waits
// for one round trip; it adds each run of a vector's elements that belong to one plane in registers and leaves the
// run sums in shared memory, slot j of vector i holding the j-th plane the vector touches; then thread t adds
// plane t's slots in vector order. No atomics: the order is fixed, so reruns are bitwise identical.
constexpr int k_flat_v = 16 / (int)sizeof(in_t);  // elements per 16-byte vector

// The slots a vector needs: how many planes V consecutive elements can touch.
inline int flat_slots(int hw) {
  const int s = (k_flat_v - 1 + hw - 1) / hw + 1;
  return s < k_flat_v ? s : k_flat_v;
}

// g / hw for the element indices of a flat range (below 2^16, flat_fits): the float product is within one of it.
__device__ __forceinline__ int flat_div(int g, int hw, float inv_hw) {
  int q = __float2int_rz((float)g * inv_hw);
  q += (q + 1) * hw <= g;
  q -= q * hw > g;
  return q;
}

// x[0] + ... + x[N - 1] as a tree: a short dependent chain, in a fixed order.
template <int N>
__device__ __forceinline__ float tree_sum(const float* x) {
  if constexpr (N == 1) return x[0];
  else return tree_sum<N / 2>(x) + tree_sum<N - N / 2>(x + N / 2);
}

// Writes the run sums of vector i of the block's range, x[0, cnt): part[j * nv + i] for the j-th plane touched.
__device__ __forceinline__ void flat_runs(float* part, int nv, int i, const float* x, int cnt, int hw, float inv_hw) {
  constexpr int V = k_flat_v;
  const int g0 = i * V;
  const int next = (flat_div(g0, hw, inv_hw) + 1) * hw - g0;  // where in x the next plane starts (>= 1)
  if (hw >= V) {                                              // at most one plane starts inside the vector: two sums
    float m0[V], m1[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const float e = v < cnt ? x[v] : 0.f;
      m0[v] = v < next ? e : 0.f;
      m1[v] = v < next ? 0.f : e;
    }
    part[i] = tree_sum<V>(m0);
    if (next < cnt) part[nv + i] = tree_sum<V>(m1);
    return;
  }
  // Planes shorter than a vector: a new one starts at most once a step.
  float acc = 0.f;
  int j = 0, b = next;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    if (v < cnt) {
      if (v == b) {
        part[j * nv + i] = acc;
        acc = 0.f;
        ++j;
        b += hw;
      }
      acc += x[v];
    }
  }
  part[j * nv + i] = acc;
}

template <int BT, int P>
__global__ void __launch_bounds__(BT) nchw_flat_kernel(pool_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  static_assert(P <= BT, "a thread adds each plane");
  constexpr int V = k_flat_v, K = k_flat_k;
  extern __shared__ float part[];  // [flat_slots(hw)][nv]
  const int64_t planes = a.n * a.c;
  const int hw = (int)a.hw, nv = P * hw / V;  // vectors of a whole block's range
  for (int64_t p0 = (int64_t)blockIdx.x * P; p0 < planes; p0 += (int64_t)gridDim.x * P) {
    const int np = planes - p0 < P ? (int)(planes - p0) : P;
    const int ne = np * hw, nfull = ne / V, nvec = (ne + V - 1) / V;  // a partial vector only ends the last range
    const in_t* src = a.x + p0 * a.hw;
    const uint4* vsrc = reinterpret_cast<const uint4*>(src);
    uint4 r[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = k * BT + (int)threadIdx.x;
      if (i < nfull) r[k] = __ldg(vsrc + i);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = k * BT + (int)threadIdx.x;
      float x[V];
      if (i < nfull) {
        const in_t* e = reinterpret_cast<const in_t*>(&r[k]);
#pragma unroll
        for (int v = 0; v < V; ++v) x[v] = to_f(e[v]);
        flat_runs(part, nv, i, x, V, hw, a.inv_hw);
      } else if (i < nvec) {
        const int cnt = ne - i * V;
#pragma unroll
        for (int v = 0; v < V; ++v) x[v] = v < cnt ? to_f(src[i * V + v]) : 0.f;
        flat_runs(part, nv, i, x, cnt, hw, a.inv_hw);
      }
    }
    __syncthreads();
    const int t = threadIdx.x;
    if (t < np) {
      // Plane t starts in vector f (in slot t - f's first plane) and fills slot 0 of the vectors after f, up to l.
      const int f = t * hw / V, l = ((t + 1) * hw - 1) / V;
      float s0 = part[(t - flat_div(f * V, hw, a.inv_hw)) * nv + f], s1 = 0.f;
      int i = f + 1;
      for (; i < l; i += 2) {  // two chains
        s0 += part[i];
        s1 += part[i + 1];
      }
      if (i == l) s0 += part[i];
      a.y[p0 + t] = from_f<out_t>(finalize((s0 + s1) * a.inv_hw));
    }
    if (p0 + (int64_t)gridDim.x * P < planes) __syncthreads();  // the next range reuses `part`
  }
}

// Whether blocks of P planes can read flat: every block's range starts 16-byte aligned and is at most k_flat_k
// vectors a thread.
template <int BT, int P>
bool flat_fits(const pool_args& a) {
  const int64_t ne = (int64_t)P * a.hw;
  return ne <= (int64_t)BT * k_flat_k * k_flat_v && (ne * (int64_t)sizeof(in_t)) % 16 == 0 && aligned(a.x, 16);
}

// channels_last: x[n][hw][c]; CLT threads across channel vectors, BT / CLT rows of positions. Lanes that
// share channels first add through shuffles, so shared memory holds one partial row per warp (CLT <= 32).
template <int BT, int V, int CLT, typename I>
__global__ void __launch_bounds__(BT) nhwc_kernel(pool_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  constexpr int HS = BT / CLT, W = CLT * V;
  constexpr int R = CLT <= 32 ? BT / 32 : HS;  // partial rows left for shared memory
  __shared__ float part[R * W];
  const int tc = threadIdx.x % CLT, th = threadIdx.x / CLT;
  const I C = (I)a.c, hw = (I)a.hw, tiles = (C + W - 1) / W;
  for (I t = blockIdx.x; t < (I)a.n * tiles; t += gridDim.x) {
    const I n = t / tiles;
    const I c0 = (t - n * tiles) * W, c = c0 + (I)tc * V;
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0.f;
    if (c < C) {
      const in_t* base = a.x + n * hw * C + c;
#pragma unroll 4
      for (I h = th; h < hw; h += HS) {
        float x[V];
        load_vec<in_t, V>(base + h * C, x);
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
    for (int i = threadIdx.x; i < W; i += BT) {
      float s = 0.f;
#pragma unroll
      for (int h = 0; h < R; ++h) s += part[h * W + i];
      if (c0 + i < C) a.y[n * C + c0 + i] = from_f<out_t>(finalize(s * a.inv_hw));
    }
    __syncthreads();
  }
}

// s[0, V) = the sums of V channels at `base` over the rows (positions) first, first + step, ... below hw, rows C
// elements apart; two rows in flight.
template <int V, typename I>
__device__ __forceinline__ void sum_rows(const in_t* base, I C, I first, I step, I hw, float* s) {
  float s1[V];
#pragma unroll
  for (int v = 0; v < V; ++v) s[v] = s1[v] = 0.f;
  I h = first;
#pragma unroll 4
  for (; h + step < hw; h += 2 * step) {
    float x0[V], x1[V];
    load_vec<in_t, V>(base + h * C, x0);
    load_vec<in_t, V>(base + (h + step) * C, x1);
#pragma unroll
    for (int v = 0; v < V; ++v) s[v] += x0[v], s1[v] += x1[v];
  }
  if (h < hw) {
    float x0[V];
    load_vec<in_t, V>(base + h * C, x0);
#pragma unroll
    for (int v = 0; v < V; ++v) s[v] += x0[v];
  }
#pragma unroll
  for (int v = 0; v < V; ++v) s[v] += s1[v];
}

// channels_last, small batches (small_cl_loop = V): a thread owns V channels of one image and adds up all of their
// positions itself, two independent sums so the loads go out back to back: one round trip, no shuffles, no shared
// memory, no barrier. Needs C % V == 0 and V-aligned x (launch_nhwc_loop checks).
template <int BT, int V, typename I>
__global__ void __launch_bounds__(BT) nhwc_loop_kernel(pool_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  const I C = (I)a.c, hw = (I)a.hw, vecs = C / V;
  for (I t = (I)blockIdx.x * BT + threadIdx.x; t < (I)a.n * vecs; t += (I)gridDim.x * BT) {
    const I n = t / vecs, c = (t - n * vecs) * V;
    float s[V];
    sum_rows<V>(a.x + n * hw * C + c, C, (I)0, (I)1, hw, s);
#pragma unroll
    for (int v = 0; v < V; ++v) a.y[n * C + c + v] = from_f<out_t>(finalize(s[v] * a.inv_hw));
  }
}

// channels_last, small batches (small_cl_warp = WPB warps a block): a warp owns one 16-byte vector of channels
// (V = 16 / sizeof(in_t)) of one image; its lanes take positions lane, lane + 32, ... with two sums in flight. A
// reduce-scatter across the lanes then halves the vector at each of the first log2(V) shuffle steps (V / 2 + V / 4
// + ... + 1 shuffles instead of V at each of 5 steps); the last steps add whole values, and lane l ends with
// channel scatter_index(l) of the vector. Neighbouring warps of a block own neighbouring vectors, so the halves of
// a 32-byte sector meet in L1. No shared memory, no barrier. Needs C % V == 0 and 16-byte aligned x.
constexpr int k_scatter_v = 16 / (int)sizeof(in_t);

// The sum over the warp of v[0, N) for element scatter_index(lane) (an argument of O = 16 at the top).
template <int N, int O>
__device__ __forceinline__ float scatter_sum(const float* v, int lane) {
  if constexpr (N == 1) {
    float x = v[0];
#pragma unroll
    for (int o = O; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
  } else {
    static_assert(O > 0, "at most 32 values a lane");
    const bool up = (lane & O) != 0;  // this lane keeps the upper half and hands its partner the lower one
    float w[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float send = up ? v[i] : v[i + N / 2], keep = up ? v[i + N / 2] : v[i];
      w[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
    }
    return scatter_sum<N / 2, O / 2>(w, lane);
  }
}

// Which of the V elements scatter_sum<V, 16> leaves lane `lane` holding: one bit per halving step.
template <int V>
__device__ __forceinline__ int scatter_index(int lane) {
  int idx = 0;
#pragma unroll
  for (int n = V, o = 16; n > 1; n >>= 1, o >>= 1)
    if (lane & o) idx += n / 2;
  return idx;
}

template <int WPB, typename I>
__global__ void __launch_bounds__(WPB * 32) nhwc_warp_kernel(pool_args a) {
  wait_prior_grid<k_pdl>();  // before any access to global memory (a no-op unless k_pdl)
  constexpr int V = k_scatter_v;
  const int lane = threadIdx.x & 31;
  const I C = (I)a.c, hw = (I)a.hw, vecs = C / V;
  for (I u = (I)blockIdx.x * WPB + (I)(threadIdx.x / 32); u < (I)a.n * vecs; u += (I)gridDim.x * WPB) {
    const I n = u / vecs, c = (u - n * vecs) * V;
    float part[V];
    sum_rows<V>(a.x + n * hw * C + c, C, (I)lane, (I)32, hw, part);
    const float s = scatter_sum<V, 16>(part, lane);
    if ((lane & (32 / V - 1)) == 0) a.y[n * C + c + scatter_index<V>(lane)] = from_f<out_t>(finalize(s * a.inv_hw));
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

// The grid for `blocks` blocks: capped, the kernels loop over what is left.
inline unsigned grid_of(int64_t blocks) {
  constexpr int64_t k_grid_cap = 1 << 20;
  return (unsigned)(blocks < k_grid_cap ? blocks : k_grid_cap);
}

// Whether the kernels' indices fit in an int for x, with `step` the most a grid-stride loop steps past its end in
// planes (NCHW) or threads and blocks (channels_last): every index stays below (planes + step) * hw. 64-bit
// address arithmetic in front of the first load cost the batch-1 launches ([1, 2048, 7, 7], 64 blocks) about
// 0.15 us of their 1.7 us in a CUDA graph; 32-bit division is also far shorter than 64-bit.
inline bool index_fits(const pool_args& a, int64_t step) { return (a.n * a.c + step) * a.hw < 0x7fffffffll; }

// kernel<<<grid, threads, smem, s>>>(a), with PDL where the pdl knob asks for it. Non-zero on a launch error.
template <typename K>
inline int start(K kernel, unsigned grid, int threads, size_t smem, const pool_args& a, cudaStream_t s) {
  return launch_kernel<k_pdl>(kernel, dim3(grid), threads, smem, s, a);
}

// The kernel for planes of `vec`-aligned size and address or not, staged or not, with int indices where they fit.
template <int BT, int TPP, bool STAGED>
auto nchw_kernel_for(bool vec, bool narrow) {
  if (vec) return narrow ? nchw_kernel<BT, k_vec, TPP, STAGED, int> : nchw_kernel<BT, k_vec, TPP, STAGED, int64_t>;
  return narrow ? nchw_kernel<BT, 1, TPP, STAGED, int> : nchw_kernel<BT, 1, TPP, STAGED, int64_t>;
}

// MODE (small_direct): 0 stages whole planes in shared memory (up to 96 KB a block; larger planes are read as 1);
// 1 (direct) reads each plane's elements from global memory (one round trip less; small batches, whose planes sit
// in L2 or are few); 2 reads the block's planes flat (nchw_flat_kernel) where flat_fits allows, else as 1.
template <int BT, int TPP, int MODE>
int launch_nchw(const pool_args& a, cudaStream_t s) {
  constexpr int P = BT / TPP;
  const unsigned grid = grid_of(blocks_for(a.n * a.c, P));
  if constexpr (MODE == 2) {
    if (flat_fits<BT, P>(a)) {
      const int hw = (int)a.hw;
      const size_t smem = sizeof(float) * (size_t)flat_slots(hw) * (size_t)(P * hw / k_flat_v);
      return start(nchw_flat_kernel<BT, P>, grid, BT, smem, a, s);
    }
  }
  const size_t smem = (size_t)P * (size_t)a.hw * sizeof(in_t);
  const bool staged = MODE == 0 && smem <= 96 * 1024;
  const bool vec = (P * a.hw) % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  const bool narrow = index_fits(a, (int64_t)grid * P);
  if (!staged) return start(nchw_kernel_for<BT, TPP, false>(vec, narrow), grid, BT, 0, a, s);
  auto kernel = nchw_kernel_for<BT, TPP, true>(vec, narrow);
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
    return 3;
  return start(kernel, grid, BT, smem, a, s);
}

// -1 when the loop kernel cannot take this input (channels not a multiple of V, x not V-aligned).
template <int BT, int V>
int launch_nhwc_loop(const pool_args& a, cudaStream_t s) {
  if (a.c % V != 0 || !aligned(a.x, vec_align<in_t, V>())) return -1;
  const unsigned grid = grid_of(blocks_for(a.n * (a.c / V), BT));
  const bool narrow = index_fits(a, (int64_t)grid * BT);
  return start(narrow ? nhwc_loop_kernel<BT, V, int> : nhwc_loop_kernel<BT, V, int64_t>, grid, BT, 0, a, s);
}

// -1 when the warp kernel cannot take this input (channels not a multiple of 16 bytes, x not 16-aligned).
template <int WPB>
int launch_nhwc_warp(const pool_args& a, cudaStream_t s) {
  if (a.c % k_scatter_v != 0 || !aligned(a.x, 16)) return -1;
  const unsigned grid = grid_of(blocks_for(a.n * (a.c / k_scatter_v), WPB));
  const bool narrow = index_fits(a, (int64_t)grid * WPB);
  return start(narrow ? nhwc_warp_kernel<WPB, int> : nhwc_warp_kernel<WPB, int64_t>, grid, WPB * 32, 0, a, s);
}

template <int BT, int CLT>
int launch_nhwc(const pool_args& a, cudaStream_t s) {
  const bool vec = a.c % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  const unsigned blocks = grid_of(a.n * blocks_for(a.c, (int64_t)CLT * (vec ? k_vec : 1)));
  const bool narrow = index_fits(a, blocks);
  auto kernel = vec ? (narrow ? nhwc_kernel<BT, k_vec, CLT, int> : nhwc_kernel<BT, k_vec, CLT, int64_t>)
                    : (narrow ? nhwc_kernel<BT, 1, CLT, int> : nhwc_kernel<BT, 1, CLT, int64_t>);
  return start(kernel, blocks, BT, 0, a, s);
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
  // Small batches: when the knobs' launch would leave SMs idle, the small_* knobs give more, smaller blocks
  // (k_small_threads threads each).
  if (contiguous(x)) {
    const bool small = k_small_tpp > 0 && blocks_for(a.n * a.c, k_threads / k_tpp) < sm_count();
    return small ? launch_nchw<k_small_threads, k_tpp_small, k_small_direct>(a, s)
                 : launch_nchw<k_threads, k_tpp, 0>(a, s);
  }
  if (!nhwc) return 1;
  const bool small = a.n * blocks_for(C, (int64_t)k_clt * k_vec) < sm_count();
  int rc = -1;  // the warp or loop kernel, when asked for and the input allows it
  if constexpr (k_small_cl_warp > 0)
    if (small) rc = launch_nhwc_warp<k_small_cl_warp>(a, s);
  if constexpr (k_small_cl_loop > 0)
    if (small && rc < 0) rc = launch_nhwc_loop<k_small_threads, k_small_cl_loop>(a, s);
  if (rc >= 0) return rc;
  return small && k_small_clt > 0 ? launch_nhwc<k_small_threads, k_clt_small>(a, s)
                                  : launch_nhwc<k_threads, k_clt>(a, s);
}

}  // namespace kfk

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));
}
