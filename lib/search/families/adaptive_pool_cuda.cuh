// adaptive_pool_cuda.cuh: the fixed code of adaptive_pool_cuda, emitted after the variant's constants, types and
// casts (adaptive_pool_cuda.cpp): average pooling of x [N, C, H, W] (or [C, H, W]) to a contiguous [N, C, OH, OW]
// over torch's adaptive windows [floor(i H / OH), ceil((i + 1) H / OH)) (k_fixed false: OH x OW is k_oh x k_ow) or
// avg_pool2d's (k_fixed: k_kh x k_kw windows k_sh, k_sw apart from -k_ph, -k_pw, clipped to x; OH x OW follows x's
// size); with k_max, max_pool2d's (the windows' largest values). A thread an output value, any strides:
//  - channels_last x (a pixel's channels contiguous): consecutive threads take consecutive channels of one output
//    position, so each load of the window is coalesced across the warp; with k_ptile > 0 a block takes a tile of
//    positions by a chunk of channels and transposes its means through shared memory, so y's stores are
//    consecutive too (else they are OH x OW apart);
//  - a contiguous x with k_stage_kb > 0 (staged): a block copies a contiguous run of x into shared memory in
//    16-byte loads (several whole planes, or one plane's band of the rows some output rows' windows cover), then
//    its threads sum their windows there and store consecutive outputs (coalesced): x is read once, in whole
//    sectors (VGG's 2 x 2 windows over 14 x 14 planes of float16: a thread an output read 4-byte pairs 28 bytes
//    apart, at 0.35x torch.compile on an H100);
//  - otherwise: consecutive threads take consecutive outputs of a plane (neighbouring windows of a row).
// With `k_cvec` > 1 a channels_last thread owns that many neighbouring channels (one vector load a pixel).
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "adaptive_pool_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

// apool_div: an index (0 to 2^31 - 1) divided by a size fixed at launch, with the prelude's fast_div (a 64-bit
// division by a run-time value is some 70 instructions: DenseNet's 2 x 2 pooling spent more on its index arithmetic
// than on its bytes).
__host__ __device__ __forceinline__ int apool_div(const fast_div& f, int n) { return (int)div_of(f, (uint32_t)n); }

struct apool_args {
  const in_t* x;
  out_t* y;
  int64_t n, c, h, w;           // x's sizes (n = 1 for a 3-d x)
  int64_t sn, sc, sh, sw;       // x's strides, in elements
  int64_t oh, ow;               // y's pooled sizes (k_oh, k_ow where the windows are adaptive)
  int64_t planes;               // staged: n x c planes of h x w, one after another
  int pp, ob, bands;            // staged: planes a block, output rows a block (oh: whole planes), bands a plane
  bool fast;                    // every output's index below 2^30: 32-bit indices, divided by the fastdivs
  fast_div d_ow, d_ohw;         // by ow and oh x ow (set where oh x ow fits an int: staged and fast launches)
  fast_div d_c;                 // fast: by c
  fast_div d_ptiles, d_chunks;  // tiled: by the position tiles a plane and the channel chunks
};

// The output's length along dim D (0: rows, 1: columns) of x's `len`, output i's window there (of n) and a window's
// divisor: pool_window.h's, with this variant's constants.
template <int D>
__host__ __device__ __forceinline__ int64_t apool_out_len(int64_t len) {
  return kf_pool_out_len(k_fixed, D ? k_ow : k_oh, len, D ? k_kw : k_kh, D ? k_sw : k_sh, D ? k_pw : k_ph, k_ceil);
}
template <int D>
__host__ __device__ __forceinline__ kf_pool_win apool_window(int64_t i, int64_t len, int64_t n) {
  return kf_pool_window(k_fixed, i, len, n, D ? k_kw : k_kh, D ? k_sw : k_sh, D ? k_pw : k_ph);
}
__device__ __forceinline__ float apool_divisor(const kf_pool_win& r, const kf_pool_win& c) {
  return (float)kf_pool_count(r, c, k_fixed, k_incl_pad, k_divisor, k_max);
}

// f(row, column) for every x value of the window rows r by columns q: avg_pool2d's and max_pool2d's k_kh x k_kw
// windows unrolled (a clipped window is no larger: the rows and columns past its end are skipped), adaptive windows
// (their sizes vary by output) in loops. (DenseNet's 2 x 2 windows looped: some 60 instructions an output around
// four loads.)
template <typename F>
__device__ __forceinline__ void apool_visit(const kf_pool_win& r, const kf_pool_win& q, F&& f) {
  if constexpr (k_fixed && k_kh * k_kw <= 64) {
#pragma unroll
    for (int dh = 0; dh < (int)k_kh; ++dh)
      if (r.lo + dh < r.hi) {
#pragma unroll
        for (int dw = 0; dw < (int)k_kw; ++dw)
          if (q.lo + dw < q.hi) f(r.lo + dh, q.lo + dw);
      }
  } else {
    for (int64_t hh = r.lo; hh < r.hi; ++hh)
      for (int64_t ww = q.lo; ww < q.hi; ++ww) f(hh, ww);
  }
}

// y's pooled sizes: constants where the windows are adaptive (divisions by them fold), else the launch's.
__device__ __forceinline__ int64_t apool_oh(const apool_args& a) { return k_fixed ? a.oh : k_oh; }
__device__ __forceinline__ int64_t apool_ow(const apool_args& a) { return k_fixed ? a.ow : k_ow; }

// Output (n, c .. c + V - 1, oi, oj)'s window means, each through the epilogue's casts (finalize), into m.
template <int V>
__device__ __forceinline__ void apool_means(const apool_args& a, int64_t n, int64_t c, int64_t oi, int64_t oj,
                                            float* m) {
  const kf_pool_win r = apool_window<0>(oi, a.h, apool_oh(a)), q = apool_window<1>(oj, a.w, apool_ow(a));
#pragma unroll
  for (int v = 0; v < V; ++v) m[v] = kf_pool_start<float>(k_max);
  const in_t* base = a.x + n * a.sn + c * a.sc;
  apool_visit(r, q, [&](int64_t hh, int64_t ww) {
    float xv[V];
    load_vec<in_t, V>(base + hh * a.sh + ww * a.sw, xv);
#pragma unroll
    for (int v = 0; v < V; ++v) m[v] = kf_pool_step(m[v], xv[v], k_max);
  });
  const float count = apool_divisor(r, q);
#pragma unroll
  for (int v = 0; v < V; ++v) m[v] = finalize(m[v] / count);
}

// Output (n, c .. c + V - 1, oi, oj): the window's mean, cast and stored.
template <int V>
__device__ __forceinline__ void apool_one(const apool_args& a, int64_t n, int64_t c, int64_t oi, int64_t oj) {
  float m[V];
  apool_means<V>(a, n, c, oi, oj, m);
#pragma unroll
  for (int v = 0; v < V; ++v) a.y[((n * a.c + c + v) * apool_oh(a) + oi) * apool_ow(a) + oj] = from_f<out_t>(m[v]);
}

template <int V>
__global__ void __launch_bounds__(k_threads) apool_cl_kernel(apool_args a) {
  wait_prior_grid<k_pdl>();
  const int64_t OH = apool_oh(a), OW = apool_ow(a), cv = a.c / V, total = a.n * OH * OW * cv;
  for (int64_t t = (int64_t)blockIdx.x * k_threads + threadIdx.x; t < total; t += (int64_t)gridDim.x * k_threads) {
    const int64_t c = t % cv * V, pos = t / cv;
    apool_one<V>(a, pos / (OH * OW), c, pos / OW % OH, pos % OW);
  }
}

// channels_last, tiled (k_ptile > 0): block b takes k_ptile consecutive output positions of one image by a chunk of
// (k_threads / k_ptile) x V channels, a thread a position's vector of V channels (consecutive threads on consecutive
// channels: the window's loads coalesce), the means transposed through shared memory so that each channel's run of
// positions leaves in consecutive stores (y is [N, C, OH, OW]: a thread storing its V channels directly writes V
// values OH x OW apart, a sector each; Inception's 3 x 3 pooling of a [32, 288, 35, 35] bfloat16 map ran at 8 % of
// the floor that way, on an H100).
template <int V>
__global__ void __launch_bounds__(k_threads) apool_cl_tiled_kernel(apool_args a) {
  constexpr int P = k_ptile > 0 ? k_ptile : 1, VS = k_threads / P, CC = VS * V;
  extern __shared__ float apool_tile[];  // [CC][P + 1]
  wait_prior_grid<k_pdl>();
  const int64_t OW = apool_ow(a), ohw = apool_oh(a) * OW;  // the launch checked ohw < 2^30
  const int b = (int)blockIdx.x, rest = apool_div(a.d_ptiles, b), n = apool_div(a.d_chunks, rest);
  const int pt = b - rest * (int)a.d_ptiles.d;
  const int64_t c0 = (int64_t)(rest - n * (int)a.d_chunks.d) * CC;
  const int vs = threadIdx.x % VS, pl = threadIdx.x / VS;
  const int pos = pt * P + pl;
  const int64_t c = c0 + (int64_t)vs * V;
  if (pos < ohw && c < a.c) {
    float m[V];
    const int oi = apool_div(a.d_ow, pos);
    apool_means<V>(a, n, c, oi, pos - oi * (int)OW, m);
#pragma unroll
    for (int v = 0; v < V; ++v) apool_tile[(vs * V + v) * (P + 1) + pl] = m[v];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < CC * P; i += k_threads) {
    const int cl = i / P, p = i % P;
    const int64_t ch = c0 + cl, po = (int64_t)pt * P + p;
    if (ch < a.c && po < ohw) a.y[((int64_t)n * a.c + ch) * ohw + po] = from_f<out_t>(apool_tile[cl * (P + 1) + p]);
  }
}

__global__ void __launch_bounds__(k_threads) apool_planes_kernel(apool_args a) {
  wait_prior_grid<k_pdl>();
  const int64_t OH = apool_oh(a), OW = apool_ow(a), total = a.n * a.c * OH * OW;
  if (a.fast) {
    for (int t = blockIdx.x * k_threads + threadIdx.x; t < (int)total; t += gridDim.x * k_threads) {
      const int plane = apool_div(a.d_ohw, t), o = t - plane * (int)(OH * OW), oi = apool_div(a.d_ow, o);
      const int n = apool_div(a.d_c, plane);
      apool_one<1>(a, n, plane - n * (int)a.c, oi, o - oi * (int)OW);
    }
    return;
  }
  for (int64_t t = (int64_t)blockIdx.x * k_threads + threadIdx.x; t < total; t += (int64_t)gridDim.x * k_threads) {
    const int64_t plane = t / (OH * OW);
    apool_one<1>(a, plane / a.c, plane % a.c, t / OW % OH, t % OW);
  }
}

inline int apool_sms() {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 1;
  }();
  return sms;
}

// Staged (a contiguous x): block b takes planes [p0, p0 + np) and output rows [r0, r1) of each (whole planes where
// a.ob == oh, else one plane's band of a.ob rows). The input rows their windows cover, [hs, he) of each plane (all
// of them for whole planes), are one contiguous run of x, copied to shared memory as x's type in 16-byte vectors: the
// run's element at address e lands at e's offset from the 16-byte boundary below the run's start, so the vectors line
// up on both sides, and the run's ragged ends are copied an element at a time (nothing outside x is read).
__global__ void __launch_bounds__(k_threads) apool_staged_kernel(apool_args a) {
  extern __shared__ __align__(16) unsigned char apool_smem[];
  in_t* sx = reinterpret_cast<in_t*>(apool_smem);
  wait_prior_grid<k_pdl>();
  const int h = (int)a.h, w = (int)a.w, OH = (int)apool_oh(a), OW = (int)apool_ow(a);
  int64_t p0;
  int np, r0, r1, hs, he;
  if (a.ob == OH) {
    p0 = (int64_t)blockIdx.x * a.pp;
    np = (int)(a.planes - p0 < a.pp ? a.planes - p0 : a.pp);
    r0 = 0, r1 = OH, hs = 0, he = h;
  } else {
    p0 = blockIdx.x / a.bands;
    np = 1;
    r0 = (int)(blockIdx.x % a.bands) * a.ob;
    r1 = r0 + a.ob < OH ? r0 + a.ob : OH;
    hs = (int)apool_window<0>(r0, h, OH).lo, he = (int)apool_window<0>(r1 - 1, h, OH).hi;
  }
  const int rows = he - hs;
  const int64_t len = (int64_t)np * rows * w;  // whole planes: rows = h, so the planes' runs are one run
  const in_t* run = a.x + p0 * h * w + (int64_t)hs * w;
  constexpr int E = 16 / (int)sizeof(in_t);  // elements a 16-byte vector
  const int pad = (int)((reinterpret_cast<uintptr_t>(run) & 15) / sizeof(in_t));
  const int head = (int)((E - pad) % E < len ? (E - pad) % E : len);
  const int64_t nv = (len - head) / E;
  // Unrolled: a thread's loads of the run in flight together (a plane of DenseNet's 56 x 56 float16 is two a thread).
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < nv; i += k_threads)
    reinterpret_cast<uint4*>(sx + pad + head)[i] = reinterpret_cast<const uint4*>(run + head)[i];
  const int64_t tail0 = head + nv * E;
  for (int64_t i = threadIdx.x; i < head + (len - tail0); i += k_threads) {
    const int64_t e = i < head ? i : tail0 + (i - head);
    sx[pad + e] = run[e];
  }
  __syncthreads();
  // The block's outputs are one run of y: whole planes, or one plane's rows [r0, r1).
  const int orows = r1 - r0, per_plane = orows * OW;
  out_t* yb = a.y + (p0 * OH + r0) * OW;
  for (int o = threadIdx.x; o < np * per_plane; o += k_threads) {
    const int pl = np == 1 ? 0 : apool_div(a.d_ohw, o), ro = apool_div(a.d_ow, o - pl * per_plane);
    const int oi = r0 + ro, oj = o - pl * per_plane - ro * OW;
    const kf_pool_win r = apool_window<0>(oi, h, OH), q = apool_window<1>(oj, w, OW);
    const in_t* px = sx + pad + pl * rows * w;
    float sum = kf_pool_start<float>(k_max);
    apool_visit(
        r, q, [&](int64_t hh, int64_t ww) { sum = kf_pool_step(sum, to_f(px[((int)hh - hs) * w + (int)ww]), k_max); });
    yb[o] = from_f<out_t>(finalize(sum / apool_divisor(r, q)));
  }
}

// The most input rows a band of ob output rows' windows cover: ceil(ob h / oh) + 1 for adaptive windows (each
// window's rows overlap its neighbour's by at most one), (ob - 1) stride + kernel for avg_pool2d's.
inline int64_t apool_band_rows(int64_t ob, int64_t h, int64_t oh) {
  if constexpr (k_fixed) return (ob - 1) * k_sh + k_kh < h ? (ob - 1) * k_sh + k_kh : h;
  return (ob * h + oh - 1) / oh + 1;
}

// The staged launch's plan: whole planes a block where one fits in k_stage_kb (as many as fit, but no fewer
// blocks than two an SM), else bands of output rows whose input rows fit; false where not even one output row's rows
// fit (the thread-an-output kernel runs).
inline bool apool_stage_plan(apool_args& a, int sms) {
  constexpr int E = 16 / (int)sizeof(in_t);
  const int64_t cap = (int64_t)k_stage_kb * 1024 / (int64_t)sizeof(in_t) - E, hw = a.h * a.w;
  if (a.oh < 1 || a.ow < 1 || a.h > INT32_MAX / a.oh || a.w > INT32_MAX / a.ow || hw > INT32_MAX ||
      a.oh * a.ow > INT32_MAX)
    return false;
  if (hw <= cap) {
    const int64_t fit = cap / hw, spread = (a.planes + 2 * (int64_t)sms - 1) / (2 * (int64_t)sms);
    a.pp = (int)(fit < spread ? fit : (spread > 0 ? spread : 1));
    a.ob = (int)a.oh, a.bands = 1;
    return (a.planes + a.pp - 1) / a.pp <= INT32_MAX;
  }
  for (int64_t ob = a.oh - 1; ob >= 1; --ob)
    if (apool_band_rows(ob, a.h, a.oh) * a.w <= cap) {
      a.ob = (int)ob, a.pp = 1, a.bands = (int)((a.oh + ob - 1) / ob);
      return a.planes * a.bands <= INT32_MAX;
    }
  return false;
}

inline int apool_blocks(int64_t items) {
  const int64_t want = (items + k_threads - 1) / k_threads, cap = (int64_t)apool_sms() * k_waves * (2048 / k_threads);
  return (int)(want < cap ? (want > 0 ? want : 1) : cap);
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  const kf_tensor& y = out[0];
  if (x.dtype != dtype_code<in_t>::value || (x.ndim != 3 && x.ndim != 4) || y.dtype != dtype_code<out_t>::value)
    return 1;
  const int d0 = x.ndim - 3;  // index of C
  apool_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.y = static_cast<out_t*>(y.data);
  a.n = x.ndim == 4 ? x.shape[0] : 1;
  a.c = x.shape[d0], a.h = x.shape[d0 + 1], a.w = x.shape[d0 + 2];
  a.sn = x.ndim == 4 ? x.stride[0] : 0;
  a.sc = x.stride[d0], a.sh = x.stride[d0 + 1], a.sw = x.stride[d0 + 2];
  a.oh = apool_out_len<0>(a.h), a.ow = apool_out_len<1>(a.w);
  if (a.oh < 1 || a.ow < 1) return 1;  // torch refuses an input smaller than one window
  if (!contiguous(y) || numel(y) != a.n * a.c * a.oh * a.ow) return 1;
  if (a.n * a.c == 0) return 0;
  if (a.h == 0 || a.w == 0) return 1;  // torch refuses an empty window
  if (a.oh * a.ow <= INT32_MAX)
    a.d_ow = make_fast_div((uint32_t)a.ow), a.d_ohw = make_fast_div((uint32_t)(a.oh * a.ow));
  a.fast = a.n * a.c * a.oh * a.ow < (int64_t(1) << 30);
  if (a.fast) a.d_c = make_fast_div((uint32_t)a.c);
  if (a.sc == 1 && a.c > 1) {
    // channels_last: vectors of k_cvec channels where the channels and every pixel's address allow them.
    const bool vec = k_cvec > 1 && a.c % k_cvec == 0 && a.sh % k_cvec == 0 && a.sw % k_cvec == 0 &&
                     a.sn % k_cvec == 0 && aligned(a.x, vec_align<in_t, k_cvec>());
    if (k_ptile > 0 && a.fast) {
      // Tiled: a block a tile of positions by a chunk of channels (the smaller chunk where vectors do not fit).
      constexpr int P = k_ptile > 0 ? k_ptile : 1;
      const int64_t cc = (int64_t)(k_threads / P) * (vec ? k_cvec : 1), chunks = (a.c + cc - 1) / cc;
      const int64_t ptiles = (a.oh * a.ow + P - 1) / P, blocks = a.n * chunks * ptiles;
      const size_t smem = (size_t)cc * (P + 1) * sizeof(float);
      if (blocks < (int64_t(1) << 30)) {
        a.d_ptiles = make_fast_div((uint32_t)ptiles), a.d_chunks = make_fast_div((uint32_t)chunks);
        if (vec)
          return launch_kernel<k_pdl>(apool_cl_tiled_kernel<k_cvec>, dim3((unsigned)blocks), k_threads, smem, s, a);
        return launch_kernel<k_pdl>(apool_cl_tiled_kernel<1>, dim3((unsigned)blocks), k_threads, smem, s, a);
      }
    }
    if (vec)
      return launch_kernel<k_pdl>(apool_cl_kernel<k_cvec>, dim3(apool_blocks(a.n * a.oh * a.ow * a.c / k_cvec)),
                                  k_threads, 0, s, a);
    return launch_kernel<k_pdl>(apool_cl_kernel<1>, dim3(apool_blocks(a.n * a.oh * a.ow * a.c)), k_threads, 0, s, a);
  }
  // Staged where x is a contiguous [N, C, H, W] (or [C, H, W]): its planes one after another.
  a.planes = a.n * a.c;
  const bool dense = (a.w == 1 || a.sw == 1) && (a.h == 1 || a.sh == a.w) && (a.c == 1 || a.sc == a.h * a.w) &&
                     (a.n == 1 || a.sn == a.c * a.h * a.w);
  if (k_stage_kb > 0 && dense && apool_stage_plan(a, apool_sms())) {
    const unsigned blocks = (unsigned)(a.ob == a.oh ? (a.planes + a.pp - 1) / a.pp : a.planes * a.bands);
    return launch_kernel<k_pdl>(apool_staged_kernel, dim3(blocks), k_threads, (size_t)k_stage_kb * 1024, s, a);
  }
  return launch_kernel<k_pdl>(apool_planes_kernel, dim3(apool_blocks(a.n * a.c * a.oh * a.ow)), k_threads, 0, s, a);
}

}  // namespace kfk
