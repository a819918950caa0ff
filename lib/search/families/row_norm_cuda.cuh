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
#ifndef KF_EMITTED
#include "row_norm_cuda_stub.cuh"
#endif  // KF_EMITTED

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
