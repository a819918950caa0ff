// group_norm_nhwc_cuda.cuh: the fixed code of group_norm_nhwc_cuda, emitted after the variant's constants, types,
// casts and activation (group_norm_nhwc_cuda.cpp): GroupNorm of a channels_last [N, C, H, W] x, read as [N, HW, C]
// (a group is a run of C / G channels at every position, never contiguous). A small image's blocks of whole groups
// in one fused kernel (gn_fused_kernel, below) where they fit `fuse_kb`; else two kernels, or three:
//  - stats: a block takes a tile of one image's positions; each thread owns V neighbouring channels (a 16-byte
//    load) at every `rows`-th position of the tile and sums them in registers, then leaves its sums in shared
//    memory, where a warp a group adds them up in double in a fixed order (reruns give the same bits) into a
//    partial of (image, group, tile) in global memory;
//  - with stats=twopass a second stats kernel sums the deviations from the mean the first one gave and their
//    squares, which correct that mean and give the variance (the corrected two-pass: float32's sums around a shift
//    lose precision in proportion to the shift's distance from the mean, in units of float32's tolerance);
//  - apply: a block takes k_ptile positions by k_chunk channels, reduces the partials of the groups those channels
//    fall in (in double) to their mean and rstd, and normalizes its tile with the affine, the activation and the
//    casts. kforge's outputs are contiguous [N, C, H, W] (the ABI): the tile is transposed through shared memory
//    and leaves a channel's run of positions at a time; a channels_last y is written as x is read.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "group_norm_nhwc_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

constexpr int k_part_cap = 1 << 17;  // partials (image, group, tile) in the workspace
constexpr int k_group_cap = 1024;    // groups a block keeps statistics for in shared memory
constexpr int k_slot_cap = 4;        // channel vectors a thread owns at most (C up to 4 x threads x vec)

// A block's totals, added in double and stored as floats: a float sum of a tile's values (140 a group here) carried its
// rounding into the mean (v6, float32 [2, 32, 5, 7]: 1.37x the verifier's tolerance at an output near 0); a total
// rounded once to float costs the mean half a float ulp of its distance from the shift.
__device__ float2 g_gn_part[k_part_cap];   // (sum, sum of squares) of x - shift
__device__ float2 g_gn_part2[k_part_cap];  // stats=twopass: (sum, sum of squares) of x - the first pass's mean

struct gn_args {
  const in_t* x;
  out_t* y;
  const w_t* w;
  const b_t* b;
  int64_t hw, c;     // positions an image, channels
  int groups, cpg;   // groups, channels a group
  int tiles;         // tiles an image
  int64_t per_tile;  // positions a tile
  double count;      // values a group: cpg x hw
  int y_nchw;        // y is contiguous [N, C, H, W] (else channels_last, as x)
  int fuse_c;        // the fused kernel: channels a block (whole groups)
};

// This thread's place in its block: `slot` k owns channel vector cv0 + k * cvt (cvt threads across the channel
// vectors), at every `rows`-th position from `row`; threads past rows x cvt own nothing.
template <int V>
struct gn_lane {
  int cv, cv0, cvt, row, rows, slots;
  __device__ gn_lane(const gn_args& a) {
    cv = (int)(a.c / V);
    cvt = cv < NT ? cv : NT;
    rows = NT / cvt;
    row = (int)threadIdx.x / cvt;
    cv0 = (int)threadIdx.x % cvt;
    slots = (cv + cvt - 1) / cvt;
    if (row >= rows) slots = 0;
  }
  // Whether slot k holds a channel vector (the last slot of a thread past the channels' end does not).
  __device__ bool has(int k) const { return k < slots && cv0 + k * cvt < cv; }
  __device__ int64_t channel(int k) const { return (int64_t)(cv0 + k * cvt) * V; }
};

// The one walk over positions [p0, p1) that every kernel makes: this thread's positions (every `rows`-th from `row`)
// and its channel vectors, each loaded with the prologue applied and handed to f(p, k, xv).
template <int V, int S, typename F>
__device__ __forceinline__ void gn_walk(const gn_args& a, const gn_lane<V>& l, const in_t* x, int64_t p0, int64_t p1,
                                        F&& f) {
#pragma unroll 4
  for (int64_t p = p0 + l.row; l.slots > 0 && p < p1; p += l.rows) {
#pragma unroll
    for (int k = 0; k < S; ++k) {
      if (!l.has(k)) continue;
      float xv[V];
      load_vec<in_t, V>(x + p * a.c + l.channel(k), xv);
      prologue_x<V>(xv);
      f(p, k, xv);
    }
  }
}

// The sums of a group's partials (one per tile) in every lane of the calling warp: the lanes add every 32nd tile's,
// then a butterfly over the lanes (a fixed order: the same bits on every run).
__device__ double2 gn_sum_parts(const float2* p, int tiles) {
  double s = 0, q = 0;
  for (int t = (int)(threadIdx.x & 31); t < tiles; t += 32) s += p[t].x, q += p[t].y;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  return make_double2(s, q);
}

// Group g's (mean, rstd) of image `n` from the partials, in every lane of the calling warp. The first pass's mean is
// the group's first value plus the mean of the deviations from it. With stats=twopass, once the second pass has run
// (`second_done`), its sums of the deviations from that mean (d) correct it and give the variance: mean + d / n and
// (sum d^2 - (sum d)^2 / n) / n. The mean the second pass took is the float the first one stored (gn_group_stats),
// so the correction starts from that float.
__device__ float2 gn_one_group(const gn_args& a, int n, int g, const in_t* x0, bool second_done) {
  const int64_t at = ((int64_t)n * a.groups + g) * a.tiles;
  const double2 s1 = gn_sum_parts(g_gn_part + at, a.tiles);
  const double shift = to_f(x0[(int64_t)g * a.cpg]);  // the group's first value (position 0)
  const double dm = s1.x / a.count;
  double mean = shift + dm, var = s1.y / a.count - dm * dm;
  if (k_twopass && second_done) {
    const double2 s2 = gn_sum_parts(g_gn_part2 + at, a.tiles);
    const double d = s2.x / a.count;
    mean = (double)(float)mean + d;
    var = s2.y / a.count - d * d;
  }
  return make_float2((float)mean, (float)(1.0 / sqrt((var > 0 ? var : 0) + (double)k_eps)));
}

// Every group's (mean, rstd) of image `n` into shared memory, a warp a group (the second stats pass's means).
__device__ void gn_group_stats(const gn_args& a, int n, const in_t* x0, float* s_mean, float* s_rstd) {
  for (int g = (int)(threadIdx.x >> 5); g < a.groups; g += NT / 32) {
    const float2 mr = gn_one_group(a, n, g, x0, false);
    if ((threadIdx.x & 31) == 0) s_mean[g] = mr.x, s_rstd[g] = mr.y;
  }
}

// One stats pass over the block's tile. SECOND: squared deviations from the group means of the first pass. S: the
// channel vectors a thread owns at most (1 where they are no more than the threads).
template <int V, int S, bool SECOND>
__global__ void __launch_bounds__(NT) gn_stats_kernel(gn_args a) {
  __shared__ float s_mean[SECOND ? k_group_cap : 1], s_rstd[SECOND ? k_group_cap : 1];
  extern __shared__ float gn_dyn[];  // per row of threads and channel: sums, then sums of squares (gn_stats_smem)
  wait_prior_grid<k_pdl>();
  const int tile = blockIdx.x, n = blockIdx.y;
  const in_t* x = a.x + (int64_t)n * a.hw * a.c;
  if constexpr (SECOND) gn_group_stats(a, n, x, s_mean, s_rstd);
  __syncthreads();
  const gn_lane<V> l(a);
  float sum[S][V], sq[S][V], ref[S][V];
#pragma unroll
  for (int k = 0; k < S; ++k)
#pragma unroll
    for (int v = 0; v < V; ++v) {
      sum[k][v] = sq[k][v] = 0.f;
      // The value each sum is taken around: the group's first value (its mean where SECOND).
      const int g = l.has(k) ? (int)((l.channel(k) + v) / a.cpg) : 0;
      if constexpr (SECOND) ref[k][v] = s_mean[g];
      else ref[k][v] = l.has(k) ? to_f(x[(int64_t)g * a.cpg]) : 0.f;
    }
  const int64_t p0 = (int64_t)tile * a.per_tile;
  const int64_t p1 = p0 + a.per_tile < a.hw ? p0 + a.per_tile : a.hw;
  gn_walk<V, S>(a, l, x, p0, p1, [&](int64_t, int k, const float* xv) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const float d = xv[v] - ref[k][v];
      sum[k][v] += d;
      sq[k][v] += d * d;
    }
  });
  // Each thread's sums in its row's slot of each of its channels; then a warp a group adds its channels' slots in
  // double (lanes over the group's rows x channels, then a butterfly: a fixed order, so that the verifier's reruns
  // give the same bits, which float atomics would not).
  float* rs = gn_dyn;                          // [rows][c]
  float* rq = gn_dyn + (int64_t)l.rows * a.c;  // [rows][c]
#pragma unroll
  for (int k = 0; k < S; ++k) {
    if (!l.has(k)) continue;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      rs[(int64_t)l.row * a.c + l.channel(k) + v] = sum[k][v];
      rq[(int64_t)l.row * a.c + l.channel(k) + v] = sq[k][v];
    }
  }
  __syncthreads();
  float2* part = SECOND ? g_gn_part2 : g_gn_part;
  const int lane = (int)(threadIdx.x & 31), per = l.rows * a.cpg;
  for (int g = (int)(threadIdx.x >> 5); g < a.groups; g += NT / 32) {
    double ts = 0, tq = 0;
    for (int e = lane; e < per; e += 32) {
      const int r = e / a.cpg;
      const int64_t i = (int64_t)r * a.c + (int64_t)g * a.cpg + (e - r * a.cpg);
      ts += rs[i];
      tq += rq[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      ts += __shfl_xor_sync(0xffffffffu, ts, o);
      tq += __shfl_xor_sync(0xffffffffu, tq, o);
    }
    if (lane == 0) part[((int64_t)n * a.groups + g) * a.tiles + tile] = make_float2((float)ts, (float)tq);
  }
}

// Channels [c0, c0 + nc), from their groups' (mean, rstd) (gmean, grstd: c0's group first), as y = (x - mean) x
// scale + bias: each channel's mean, scale (rstd x w) and bias.
__device__ void gn_channel_affine(const gn_args& a, int64_t c0, int nc, const float* gmean, const float* grstd,
                                  float* mean, float* scale, float* bias) {
  const int64_t g0 = c0 / a.cpg;
  for (int i = threadIdx.x; i < nc; i += NT) {
    const int gi = (int)((c0 + i) / a.cpg - g0);
    mean[i] = gmean[gi];
    scale[i] = grstd[gi];
    bias[i] = 0.f;
    if constexpr (k_has_w) scale[i] *= to_f(a.w[c0 + i]);
    if constexpr (k_has_b) bias[i] = to_f(a.b[c0 + i]);
  }
}

// The stats kernel's dynamic shared memory: a sum and a sum of squares for every row of threads and channel.
template <int V>
inline size_t gn_stats_smem(const gn_args& a) {
  const int64_t cv = a.c / V, cvt = cv < NT ? cv : NT;
  return (size_t)2 * (size_t)(NT / cvt) * (size_t)a.c * sizeof(float);
}

// The apply kernel's staging of a contiguous y: k_ptile positions by k_chunk + 1 floats (the odd row length puts a
// channel's consecutive positions in distinct banks).
constexpr int k_ld = k_chunk + 1;
inline size_t gn_apply_smem(const gn_args& a) { return a.y_nchw ? (size_t)k_ptile * k_ld * sizeof(float) : 0; }

// The apply kernel: a block normalizes k_ptile positions (blockIdx.x) of k_chunk channels (blockIdx.y) of one image
// (blockIdx.z). It first turns the partials of the groups its channels fall in (a warp a group) into each channel's
// mean, scale (rstd x w) and bias; then each thread reads V neighbouring channels at every `prow`-th position (the
// chunk's k_chunk / V threads across a position: 16-byte loads, the position's run of the chunk in one or two
// segments). A channels_last y is written as x is read. A contiguous y (kforge's outputs, the ABI) goes through
// shared memory as a [k_ptile][k_ld] tile and leaves by channel: k_ptile / OW threads a channel's run of positions,
// OW consecutive positions a thread (16-byte stores where the image's positions are a whole number of them).
template <int V, int OW>
__global__ void __launch_bounds__(NT) gn_apply_kernel(gn_args a) {
  __shared__ float s_gmean[k_chunk], s_grstd[k_chunk];                  // groups of the chunk (at most a channel each)
  __shared__ float s_mean[k_chunk], s_scale[k_chunk], s_bias[k_chunk];  // the chunk's channels
  extern __shared__ float gn_tile[];
  wait_prior_grid<k_pdl>();
  const int n = blockIdx.z;
  const int64_t c0 = (int64_t)blockIdx.y * k_chunk, c1 = c0 + k_chunk < a.c ? c0 + k_chunk : a.c;
  const int64_t p0 = (int64_t)blockIdx.x * k_ptile, p1 = p0 + k_ptile < a.hw ? p0 + k_ptile : a.hw;
  const in_t* x = a.x + (int64_t)n * a.hw * a.c;
  out_t* y = a.y + (int64_t)n * a.hw * a.c;
  const int g0 = (int)(c0 / a.cpg), ng = (int)((c1 - 1) / a.cpg) - g0 + 1;
  for (int i = (int)(threadIdx.x >> 5); i < ng; i += NT / 32) {
    const float2 mr = gn_one_group(a, n, g0 + i, x, true);
    if ((threadIdx.x & 31) == 0) s_gmean[i] = mr.x, s_grstd[i] = mr.y;
  }
  __syncthreads();
  gn_channel_affine(a, c0, (int)(c1 - c0), s_gmean, s_grstd, s_mean, s_scale, s_bias);
  __syncthreads();
  constexpr int tv = k_chunk / V, prow = NT / tv;  // threads across a position's chunk; positions at a time
  const int cv = (int)threadIdx.x % tv, pr = (int)threadIdx.x / tv;
  const int64_t ch = c0 + (int64_t)cv * V;  // V > 1 only where the channels are a whole number of vectors
  if (pr < prow && ch < c1) {
    float mean[V], scale[V], bias[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      mean[v] = s_mean[cv * V + v], scale[v] = s_scale[cv * V + v], bias[v] = s_bias[cv * V + v];
#pragma unroll 4
    for (int64_t p = p0 + pr; p < p1; p += prow) {
      float o[V];
      load_vec<in_t, V>(x + p * a.c + ch, o);
      prologue_x<V>(o);
#pragma unroll
      for (int v = 0; v < V; ++v) o[v] = finalize((o[v] - mean[v]) * scale[v] + bias[v]);
      if (!a.y_nchw) {
        store_vec<out_t, V, false>(y + p * a.c + ch, o);
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v) gn_tile[(p - p0) * k_ld + cv * V + v] = o[v];
      }
    }
  }
  if (!a.y_nchw) return;
  __syncthreads();
  constexpr int tw = k_ptile / OW, crow = NT / tw;  // threads along a channel's run; channels at a time
  const int j = ((int)threadIdx.x % tw) * OW, cr = (int)threadIdx.x / tw;
  if (cr >= crow || p0 + j >= p1) return;  // OW > 1 only where a tile's positions are a whole number of OW
  for (int c = cr; c < c1 - c0; c += crow) {
    float o[OW];
#pragma unroll
    for (int i = 0; i < OW; ++i) o[i] = gn_tile[(j + i) * k_ld + c];
    store_vec<out_t, OW, false>(y + (c0 + c) * a.hw + p0 + j, o);
  }
}

// The fused kernel (a small image: a block's channels at every position fit in shared memory): a block takes whole
// groups of one image (blockIdx.x: `fuse_c` channels; blockIdx.y: the image), stages those channels at every
// position as floats with the prologue applied (V channels a thread's load), takes each group's statistics there
// (every warp: the sum, then the deviations from that mean, which correct it, and their squares) and
// writes the normalized values: one read of x and one launch, where the two-kernel path's stats and apply launches
// cost a small image more than its bytes (SD-UNet [2, 640, 16, 16], H100: 7.29 us against torch.compile's 4.82).
// Dynamic shared memory: hw x (fuse_c + 1) staged floats (an odd row length: a channel's consecutive positions in
// distinct banks), then per channel its mean, scale and bias, then per group its mean and rstd (gn_fused_smem).
template <int V>
__global__ void __launch_bounds__(NT) gn_fused_kernel(gn_args a) {
  extern __shared__ float gn_stage[];
  wait_prior_grid<k_pdl>();
  const int n = blockIdx.y, cb = a.fuse_c, ld = cb + 1, hw = (int)a.hw;
  const int64_t c0 = (int64_t)blockIdx.x * cb;
  const int nc = (int)(a.c - c0 < cb ? a.c - c0 : cb);  // whole groups: c0 and C are multiples of cpg
  float* s_cmean = gn_stage + (int64_t)hw * ld;
  float* s_cscale = s_cmean + cb;
  float* s_cbias = s_cscale + cb;
  float* s_gmean = s_cbias + cb;
  float* s_grstd = s_gmean + cb;
  const in_t* x = a.x + (int64_t)n * a.hw * a.c + c0;
  const int tv = cb / V, prow = NT / tv;  // threads across a position's channels; positions at a time
  const int cv = (int)threadIdx.x % tv, pr = (int)threadIdx.x / tv;
  if (pr < prow && cv * V < nc)
#pragma unroll 4
    for (int p = pr; p < hw; p += prow) {
      float o[V];
      load_vec<in_t, V>(x + (int64_t)p * a.c + cv * V, o);
      prologue_x<V>(o);
#pragma unroll
      for (int v = 0; v < V; ++v) gn_stage[p * ld + cv * V + v] = o[v];
    }
  __syncthreads();
  // Each group's statistics from every warp: the warps split among the groups (wpg warps a group where the block has
  // fewer groups than warps, else a warp a group, in rounds), a lane a position at a time (rows of an odd ld words:
  // the lanes in distinct banks), its group's channels in two float sums; a warp's lanes added in double, then the
  // group's warps through shared memory. The first pass's mean is corrected by the second's deviations from it.
  // (A warp a group left the other warps idle while each lane summed hw / 32 positions twice: SD-UNet's
  // [2, 640, 16, 16] fused kernel ran slower than the two-kernel path, on an H100.)
  __shared__ double gn_wsum[2][NT / 32];
  const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5), nw = NT / 32, ng = nc / a.cpg;
  const int wpg = ng < nw ? nw / ng : 1, per_round = nw / wpg, gw = warp / wpg, k = warp - gw * wpg;
  const int tpg = wpg * 32, first = k * 32 + lane;  // a group's threads; this thread's first position
  for (int g0 = 0; g0 < ng; g0 += per_round) {      // every thread takes every round (the barriers)
    const int gi = g0 + gw;
    const bool mine = gw < per_round && gi < ng;
    const float* t = gn_stage + (mine ? gi : 0) * a.cpg;
    float s0 = 0.f, s1 = 0.f;
    for (int p = first; mine && p < hw; p += tpg) {
      const float* r = t + p * ld;
      int c = 0;
      for (; c + 1 < a.cpg; c += 2) s0 += r[c], s1 += r[c + 1];
      if (c < a.cpg) s0 += r[c];
    }
    double s = (double)s0 + (double)s1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) gn_wsum[0][warp] = s;
    __syncthreads();
    if (mine && k == 0 && lane == 0) {
      double tot = 0;
      for (int j = 0; j < wpg; ++j) tot += gn_wsum[0][warp + j];
      s_gmean[gi] = (float)(tot / a.count);
    }
    __syncthreads();
    const float m = mine ? s_gmean[gi] : 0.f;
    float d0 = 0.f, d1 = 0.f, q0 = 0.f, q1 = 0.f;
    for (int p = first; mine && p < hw; p += tpg) {
      const float* r = t + p * ld;
      int c = 0;
      for (; c + 1 < a.cpg; c += 2) {
        const float u = r[c] - m, v = r[c + 1] - m;
        d0 += u, q0 += u * u, d1 += v, q1 += v * v;
      }
      if (c < a.cpg) {
        const float u = r[c] - m;
        d0 += u, q0 += u * u;
      }
    }
    double t1 = (double)d0 + (double)d1, t2 = (double)q0 + (double)q1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      t1 += __shfl_xor_sync(0xffffffffu, t1, o);
      t2 += __shfl_xor_sync(0xffffffffu, t2, o);
    }
    if (lane == 0) gn_wsum[0][warp] = t1, gn_wsum[1][warp] = t2;
    __syncthreads();
    if (mine && k == 0 && lane == 0) {
      double u1 = 0, u2 = 0;
      for (int j = 0; j < wpg; ++j) u1 += gn_wsum[0][warp + j], u2 += gn_wsum[1][warp + j];
      const double dm = u1 / a.count, var = u2 / a.count - dm * dm;
      s_gmean[gi] = (float)((double)m + dm), s_grstd[gi] = (float)(1.0 / sqrt((var > 0 ? var : 0) + (double)k_eps));
    }
    __syncthreads();
  }
  gn_channel_affine(a, c0, nc, s_gmean, s_grstd, s_cmean, s_cscale, s_cbias);
  __syncthreads();
  // A contiguous y a channel's run of positions at a time (consecutive threads on consecutive positions); a
  // channels_last y as x is read.
  out_t* y = a.y + (int64_t)n * a.hw * a.c;
  for (int i = threadIdx.x; i < nc * hw; i += NT) {
    int c, p;
    if (a.y_nchw) c = i / hw, p = i - c * hw;
    else p = i / nc, c = i - p * nc;
    const float v = finalize((gn_stage[p * ld + c] - s_cmean[c]) * s_cscale[c] + s_cbias[c]);
    if (a.y_nchw) y[(c0 + c) * a.hw + p] = from_f<out_t>(v);
    else y[(int64_t)p * a.c + c0 + c] = from_f<out_t>(v);
  }
}

inline size_t gn_fused_smem(int64_t hw, int64_t cb) { return (size_t)(hw * (cb + 1) + 5 * cb) * sizeof(float); }

inline int gn_sms() {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 1;
  }();
  return sms;
}

// Opts `kernel` in to `smem` bytes of dynamic shared memory where they and its `fixed` static bytes pass the 48 KB
// a launch gets without asking (SD-UNet's 320 channels: 41 KB staged beside 8 KB of group statistics).
template <typename K>
inline bool gn_smem_opt_in(K kernel, size_t smem, size_t fixed) {
  return smem + fixed <= 48 * 1024 ||
         cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) == cudaSuccess;
}

// The stats kernel with `smem` bytes of dynamic shared memory.
template <int V, int S, bool SECOND>
inline int gn_stats_launch(const gn_args& a, dim3 grid, size_t smem, cudaStream_t s) {
  auto kernel = gn_stats_kernel<V, S, SECOND>;
  if (!gn_smem_opt_in(kernel, smem, SECOND ? 2 * k_group_cap * sizeof(float) : 0)) return 3;
  return launch_kernel<k_pdl>(kernel, grid, NT, smem, s, a);
}

// The apply kernel over (position tiles, channel chunks, images), OW positions a thread's store.
template <int V, int OW>
inline int gn_apply_launch(const gn_args& a, int64_t images, cudaStream_t s) {
  const dim3 grid((unsigned)((a.hw + k_ptile - 1) / k_ptile), (unsigned)((a.c + k_chunk - 1) / k_chunk),
                  (unsigned)images);
  const size_t smem = gn_apply_smem(a);
  if (!gn_smem_opt_in(gn_apply_kernel<V, OW>, smem, 5 * k_chunk * sizeof(float))) return 3;
  return launch_kernel<k_pdl>(gn_apply_kernel<V, OW>, grid, NT, smem, s, a);
}

template <int V, int S>
inline int gn_launch_as(const gn_args& a, int64_t images, dim3 grid, cudaStream_t s) {
  const size_t smem = gn_stats_smem<V>(a);
  if (smem + 2 * k_group_cap * sizeof(float) > k_smem_limit) return 1;  // channels beyond a block's shared memory
  if (int rc = gn_stats_launch<V, S, false>(a, grid, smem, s)) return rc;
  if constexpr (k_twopass)
    if (int rc = gn_stats_launch<V, S, true>(a, grid, smem, s)) return rc;
  // 16-byte stores of a contiguous y where every tile's positions are a whole number of them.
  constexpr int ow = 16 / (int)sizeof(out_t) < k_ptile ? 16 / (int)sizeof(out_t) : k_ptile;
  const bool wide = a.y_nchw && ow > 1 && a.hw % ow == 0 && aligned(a.y, 16);
  return wide ? gn_apply_launch<V, ow>(a, images, s) : gn_apply_launch<V, 1>(a, images, s);
}

// The fused kernel where a block's whole groups fit in k_fuse_kb of shared memory at every position: k_chunk
// channels' worth of groups a block (at least one), fewer where the blocks would not fill the SMs (a small image is
// latency-bound: SD-UNet's [2, 640, 16, 16] had 16 blocks of four groups); loads of V channels where the block's
// channels are a whole number of them, else of V / 2 or V / 4, else of V with the groups a block rounded up to make
// them so, else of one. 1 where it does not fit (the two kernels run).
template <int V>
inline int gn_try_fused(gn_args& a, int64_t images, cudaStream_t s) {
  if (k_fuse_kb == 0 || a.hw > INT32_MAX) return 1;
  const int64_t fill = (a.c / a.cpg) * images / gn_sms();
  int64_t gpb = k_chunk / a.cpg > 1 ? k_chunk / a.cpg : 1;
  if (fill < gpb) gpb = fill > 1 ? fill : 1;
  const int64_t limit = (int64_t)k_fuse_kb * 1024;
  auto go = [&](auto kernel, int64_t cb) {
    a.fuse_c = (int)cb;
    const dim3 grid((unsigned)((a.c + cb - 1) / cb), (unsigned)images);
    const size_t smem = gn_fused_smem(a.hw, cb);
    if (!gn_smem_opt_in(kernel, smem, 2 * (NT / 32) * sizeof(double))) return 3;
    return launch_kernel<k_pdl>(kernel, grid, NT, smem, s, a);
  };
  auto fits = [&](int64_t cb, int v) {
    return cb % v == 0 && cb / v <= NT && (int64_t)gn_fused_smem(a.hw, cb) <= limit && (a.c + cb - 1) / cb <= 65535;
  };
  const int64_t cb = gpb * a.cpg;
  if constexpr (V > 1)
    if (fits(cb, V)) return go(gn_fused_kernel<V>, cb);
  if constexpr (V > 2)
    if (fits(cb, V / 2)) return go(gn_fused_kernel<V / 2>, cb);
  if constexpr (V > 4)
    if (fits(cb, V / 4)) return go(gn_fused_kernel<V / 4>, cb);
  if constexpr (V > 1) {
    int64_t vgpb = gpb;
    while (vgpb < gpb * V && (vgpb * a.cpg) % V != 0) ++vgpb;
    if (fits(vgpb * a.cpg, V)) return go(gn_fused_kernel<V>, vgpb * a.cpg);
  }
  if (fits(cb, 1)) return go(gn_fused_kernel<1>, cb);
  return 1;
}

template <int V>
inline int gn_launch(gn_args a, int64_t images, cudaStream_t s) {
  if (images <= 65535) {
    const int rc = gn_try_fused<V>(a, images, s);
    if (rc != 1) return rc;
  }
  const int64_t cv = a.c / V;
  if (cv > (int64_t)k_slot_cap * NT) return 1;  // more channel vectors than the threads' slots
  if (images > 65535 || (a.c + k_chunk - 1) / k_chunk > 65535) return 1;
  // Stats tiles: about k_blocks blocks an SM over the batch, within the workspace, each thread reading at least 4
  // positions (a tile of a few positions costs its block's fixed work, and its partial costs every apply block).
  const int64_t rows = NT / (cv < NT ? cv : NT);
  int64_t tiles = ((int64_t)k_blocks * gn_sms() + images - 1) / images;
  const int64_t most = (a.hw + 4 * rows - 1) / (4 * rows);
  if (tiles > most) tiles = most;
  const int64_t cap = k_part_cap / (images * a.groups);
  if (cap < 1) return 1;
  if (tiles > cap) tiles = cap;
  if (tiles < 1) tiles = 1;
  a.per_tile = (a.hw + tiles - 1) / tiles;
  a.tiles = (int)((a.hw + a.per_tile - 1) / a.per_tile);
  const dim3 grid((unsigned)a.tiles, (unsigned)images);
  return cv <= NT ? gn_launch_as<V, 1>(a, images, grid, s) : gn_launch_as<V, k_slot_cap>(a, images, grid, s);
}

inline bool gn_channels_last(const kf_tensor& t) {
  if (t.ndim != 4) return false;
  const int64_t C = t.shape[1], H = t.shape[2], W = t.shape[3];
  return (C == 1 || t.stride[1] == 1) && (W == 1 || t.stride[3] == C) && (H == 1 || t.stride[2] == W * C) &&
         (t.shape[0] == 1 || t.stride[0] == H * W * C);
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  const kf_tensor& y = out[0];
  if (x.dtype != dtype_code<in_t>::value || y.dtype != dtype_code<out_t>::value) return 1;
  if (!gn_channels_last(x) || (!gn_channels_last(y) && !contiguous(y))) return 1;
  for (int d = 0; d < 4; ++d)
    if (x.shape[d] != y.shape[d]) return 1;
  gn_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.y = static_cast<out_t*>(y.data);
  a.c = x.shape[1];
  a.hw = x.shape[2] * x.shape[3];
  a.groups = k_num_groups;
  if (a.c % a.groups != 0 || a.groups > k_group_cap) return 1;
  a.cpg = (int)(a.c / a.groups);
  a.y_nchw = contiguous(y) ? 1 : 0;  // where both hold (H = W = 1, or C = 1) the two layouts are one
  if constexpr (k_has_w) {
    const kf_tensor& w = in[k_w_input];
    if (w.dtype != dtype_code<w_t>::value || numel(w) != a.c || !contiguous(w)) return 1;
    a.w = static_cast<const w_t*>(w.data);
  }
  if constexpr (k_has_b) {
    const kf_tensor& b = in[k_b_input];
    if (b.dtype != dtype_code<b_t>::value || numel(b) != a.c || !contiguous(b)) return 1;
    a.b = static_cast<const b_t*>(b.data);
  }
  const int64_t images = x.shape[0];
  if (images == 0 || a.hw == 0 || a.c == 0) return 0;
  a.count = (double)a.cpg * (double)a.hw;
  const bool vec = a.c % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>()) &&
                   (a.y_nchw || aligned(a.y, vec_align<out_t, k_vec>()));
  return vec ? gn_launch<k_vec>(a, images, s) : gn_launch<1>(a, images, s);
}

}  // namespace kfk
