// col_softmax_cuda.cuh: the fixed code of col_softmax_cuda, emitted after the variant's constants, types, prologue
// and finalize (col_softmax_cuda.cpp): softmax / log_softmax over a dim before the last, x read as [outer, n, inner]
// (a row's n values lie `inner` elements apart). A thread owns V neighbouring columns (inner positions: one 16-byte
// load of the contiguous inner dim, the block's TX threads side by side) and every TY-th value of the reduced dim;
// the TY partial statistics of a column meet in shared memory. The values stay in registers between the statistics
// and the write where n fits TY x k_chunks (cache=regs), or in shared memory as floats, the block's n x TX x V of
// them (cache=smem: longer dims, each exp taken once); otherwise each pass reads x again (from L2 where the columns
// in flight fit it).
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "col_softmax_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

constexpr int TY = k_ty;     // threads along the reduced dim
constexpr int TX = NT / TY;  // threads along the columns

struct cs_args {
  const in_t* x;
  out_t* y;
  int64_t outer, n, inner;  // x as [outer, n, inner]
  int64_t inner_v, cols;    // inner / V, and outer x inner / V column groups (one a thread)
};

// One column's running (max, sum of exp(x - max)). A -inf value adds nothing (a column may start with masked
// values); a NaN makes the sum NaN, and so every result of its column, as torch's softmax does.
__device__ __forceinline__ void online_add(float& m, float& s, float x) {
  if (x > m) {
    s *= exp_ftz(m - x);
    m = x;
  }
  if (x != -INFINITY) s += exp_ftz(x - m);
}

__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
  const float M = fmaxf(m, m2);
  if (M == -INFINITY) return;  // both empty so far
  s = s * __expf(m - M) + s2 * __expf(m2 - M);
  m = M;
}

// The block's TY partial values of each of its columns, in shared memory [ty][v][tx] (consecutive threads, consecutive
// banks); every thread of a column combines them in the same order, so they agree. One float each where TY = 1.
template <int V, int PV = (TY > 1 ? V : 1), int PX = (TY > 1 ? TX : 1)>
struct partials {
  float m[TY][PV][PX];
  float s[TY][PV][PX];
};

// MODE: m_stream (x read in every pass), m_regs (each thread's values in registers: n <= TY x k_chunks) or m_smem
// (the block's n x TX x V values in shared memory as floats, dynamic: read from DRAM once, each exp taken once).
constexpr int m_stream = 0, m_regs = 1, m_smem = 2;

template <int V, int MODE>
__global__ void __launch_bounds__(NT) col_kernel(cs_args a) {
  constexpr bool CACHE = MODE == m_regs;
  __shared__ partials<V> sh;
  extern __shared__ float4 cs_dyn[];                                                  // m_smem: [n][TX x V] floats
  float* const buf = reinterpret_cast<float*>(cs_dyn) + ((int)threadIdx.x % TX) * V;  // this thread's columns, row 0
  auto at = [&](int64_t j) { return buf + j * (TX * V); };
  wait_prior_grid<k_pdl>();
  const int tx = (int)threadIdx.x % TX, ty = (int)threadIdx.x / TX;
  const int64_t c = (int64_t)blockIdx.x * TX + tx;
  const bool live = c < a.cols;
  const int64_t cc = live ? c : a.cols - 1;  // a thread past the columns reads a real one, walks none, stores none
  const int64_t o = cc / a.inner_v;
  const int64_t base = o * a.n * a.inner + (cc - o * a.inner_v) * V;
  const in_t* __restrict__ x = a.x + base;
  out_t* __restrict__ y = a.y + base;
  const int64_t n = live ? a.n : 0;
  auto load = [&](int64_t j, float* v) {
    load_vec<in_t, V>(x + j * a.inner, v);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = prologue(v[k]);
  };
  auto share = [&](auto& part, const float* v) {
#pragma unroll
    for (int k = 0; k < V; ++k) part[ty][k][tx] = v[k];
  };
  float m[V], s[V];
#pragma unroll
  for (int k = 0; k < V; ++k) m[k] = -INFINITY, s[k] = 0.f;
  constexpr int CH = CACHE ? k_chunks : 1;
  float r[CH][V];
  if constexpr (CACHE) {
    // Every chunk's load issued at once, from a clamped index (in bounds), the values past n set to -inf after.
#pragma unroll
    for (int ch = 0; ch < CH; ++ch) {
      const int64_t j = ty + (int64_t)ch * TY;
      load(j < a.n ? j : a.n - 1, r[ch]);
#pragma unroll
      for (int k = 0; k < V; ++k) r[ch][k] = j < n ? r[ch][k] : -INFINITY;
    }
#pragma unroll
    for (int ch = 0; ch < CH; ++ch)
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if constexpr (k_online) online_add(m[k], s[k], r[ch][k]);
        else m[k] = fmaxf(m[k], r[ch][k]);
      }
  } else {
#pragma unroll 4
    for (int64_t j = ty; j < n; j += TY) {
      float v[V];
      load(j, v);
      if constexpr (MODE == m_smem)
#pragma unroll
        for (int k = 0; k < V; ++k) at(j)[k] = v[k];  // only this thread reads it back: no barrier
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if constexpr (k_online) online_add(m[k], s[k], v[k]);
        else m[k] = fmaxf(m[k], v[k]);
      }
    }
  }
  if constexpr (TY > 1) {
    share(sh.m, m);
    if constexpr (k_online) share(sh.s, s);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < V; ++k) {
      m[k] = sh.m[0][k][tx];
      if constexpr (k_online) {
        s[k] = sh.s[0][k][tx];
        for (int t = 1; t < TY; ++t) combine(m[k], s[k], sh.m[t][k][tx], sh.s[t][k][tx]);
      } else {
        for (int t = 1; t < TY; ++t) m[k] = fmaxf(m[k], sh.m[t][k][tx]);
      }
    }
  }
  if constexpr (!k_online) {
    // The sum around the column's max (a column of -inf only gives NaN, as torch's softmax). Cached: the
    // exponentials replace the values, and the write pass scales them.
    if constexpr (CACHE) {
#pragma unroll
      for (int ch = 0; ch < CH; ++ch)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float e = __expf(r[ch][k] - m[k]);
          if constexpr (!k_log) r[ch][k] = e;
          s[k] += ty + (int64_t)ch * TY < n ? e : 0.f;
        }
    } else if constexpr (MODE == m_smem) {
#pragma unroll 4
      for (int64_t j = ty; j < n; j += TY)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float e = __expf(at(j)[k] - m[k]);
          if constexpr (!k_log) at(j)[k] = e;
          s[k] += e;
        }
    } else {
#pragma unroll 4
      for (int64_t j = ty; j < n; j += TY) {
        float v[V];
        load(j, v);
#pragma unroll
        for (int k = 0; k < V; ++k) s[k] += __expf(v[k] - m[k]);
      }
    }
    if constexpr (TY > 1) {
      share(sh.s, s);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < V; ++k) {
        s[k] = sh.s[0][k][tx];
        for (int t = 1; t < TY; ++t) s[k] += sh.s[t][k][tx];
      }
    }
  }
  // log_softmax: (x - max) - log sum, in that order (x - (max + log sum) rounds max + log sum to max's ulp: 0 where
  // torch gives -6e-5, for a column's largest of values around 1000); softmax: exp(x - max) / sum.
  if constexpr (k_log)
#pragma unroll
    for (int k = 0; k < V; ++k) s[k] = logf(s[k]);
  auto result = [&](float v, int k, bool scaled) {
    if constexpr (k_log) return finalize((v - m[k]) - s[k]);
    return finalize((scaled ? v : __expf(v - m[k])) / s[k]);
  };
  if constexpr (CACHE) {
#pragma unroll
    for (int ch = 0; ch < CH; ++ch) {
      const int64_t j = ty + (int64_t)ch * TY;
      float out[V];
#pragma unroll
      for (int k = 0; k < V; ++k) out[k] = result(r[ch][k], k, !k_online);
      if (j < n) store_vec<out_t, V, false>(y + j * a.inner, out);
    }
  } else {
#pragma unroll 4
    for (int64_t j = ty; j < n; j += TY) {
      float v[V];
      if constexpr (MODE == m_smem) {
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = result(at(j)[k], k, !k_online);
      } else {
        load(j, v);
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = result(v[k], k, false);
      }
      store_vec<out_t, V, false>(y + j * a.inner, v);
    }
  }
}

template <int V, int MODE>
inline int cs_launch(const cs_args& a, cudaStream_t s, size_t smem = 0) {
  const int64_t blocks = (a.cols + TX - 1) / TX;
  if (blocks > 0x7fffffff) return 1;
  auto kernel = col_kernel<V, MODE>;
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
    return 3;
  return launch_kernel<k_pdl>(kernel, dim3((unsigned)blocks), NT, smem, s, a);
}

template <int V>
inline int cs_launch_at(cs_args a, cudaStream_t s) {
  a.inner_v = a.inner / V;
  a.cols = a.outer * a.inner_v;
  if constexpr (k_cache == m_regs)
    if (a.n <= (int64_t)TY * k_chunks) return cs_launch<V, m_regs>(a, s);
  if constexpr (k_cache == m_smem) {
    // The block's values and its partial statistics within an SM's shared memory (else streamed).
    const size_t smem = (size_t)a.n * TX * V * sizeof(float);
    if (smem + sizeof(partials<V>) <= k_smem_limit) return cs_launch<V, m_smem>(a, s, smem);
  }
  return cs_launch<V, m_stream>(a, s);
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  const kf_tensor& y = out[0];
  if (x.dtype != dtype_code<in_t>::value || x.ndim != k_rank || !contiguous(x)) return 1;
  if (y.dtype != dtype_code<out_t>::value || !contiguous(y) || numel(y) != numel(x)) return 1;
  cs_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.y = static_cast<out_t*>(y.data);
  a.outer = a.inner = 1;
  for (int d = 0; d < k_dim; ++d) a.outer *= x.shape[d];
  a.n = x.shape[k_dim];
  for (int d = k_dim + 1; d < k_rank; ++d) a.inner *= x.shape[d];
  if (numel(x) == 0) return 0;
  const bool vec =
      a.inner % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>()) && aligned(a.y, vec_align<out_t, k_vec>());
  return vec ? cs_launch_at<k_vec>(a, s) : cs_launch_at<1>(a, s);
}

}  // namespace kfk
