// pool_cuda.cuh: the fixed code of pool_cuda, emitted after the variant's constants, types and casts
// (pool_cuda.cpp): the NCHW and channels_last kernels, the small-batch launches, and kf_launch's checks.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "pool_cuda_stub.cuh"
#endif  // KF_EMITTED

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
