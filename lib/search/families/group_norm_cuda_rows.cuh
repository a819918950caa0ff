// group_norm_cuda_rows.cuh: the first of group_norm_cuda's fixed files, emitted after the variant's constants, types,
// prologue casts and activation (group_norm_cuda.cpp): the arguments, the affine step, statistics, the per-row
// algorithm for each strategy and the split pair (a statistics pass, then an apply pass). Then come
// group_norm_cuda_grid.cuh, group_norm_cuda_ring.cuh and group_norm_cuda_launch.cuh.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "group_norm_cuda_stub.cuh"
#endif  // KF_EMITTED

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
