// group_norm_nhwc_cuda.cuh: the fixed code of group_norm_nhwc_cuda, emitted after the variant's constants, types,
// casts and activation (group_norm_nhwc_cuda.cpp): GroupNorm of a channels_last [N, C, H, W] x, read as [N, HW, C]
// (a group is a run of C / G channels at every position, never contiguous). Two kernels, or three:
//  - stats: a block takes a tile of one image's positions; each thread owns V neighbouring channels (a 16-byte
//    load) at every `rows`-th position of the tile and sums them in registers, then leaves its sums in shared
//    memory, where one thread a group adds them up in a fixed order (reruns give the same bits) into a partial of
//    (image, group, tile) in global memory;
//  - with stats=twopass a second stats kernel sums the squared deviations from the mean the first one gave
//    (float32: a sum of squares around a shift loses precision to cancellation where the shift is far from the
//    mean, in units of float32's tolerance);
//  - apply: a block reduces its image's partials to every group's mean and rstd (in double), then normalizes its
//    tile with the affine, the activation and the casts. kforge's outputs are contiguous [N, C, H, W] (the ABI): the
//    tile's results go through shared memory, `q` positions at a time by every channel, and leave a channel's run of
//    q positions at a time (consecutive threads, consecutive positions); a channels_last y is written as x is read.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "group_norm_nhwc_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

constexpr int k_part_cap = 1 << 17;  // partials (image, group, tile) in the workspace
constexpr int k_group_cap = 1024;    // groups a block keeps statistics for in shared memory
constexpr int k_slot_cap = 4;        // channel vectors a thread owns at most (C up to 4 x threads x vec)

__device__ float2 g_gn_part[k_part_cap];   // (sum, sum of squares) of x - shift, or of x - mean (twopass)
__device__ float2 g_gn_part2[k_part_cap];  // stats=twopass: (0, sum of (x - mean)^2)

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
  int q;             // y_nchw: positions staged in shared memory at a time
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

// Every group's (mean, rstd) of image `n` from the partials, into shared memory; with stats=twopass the variance
// from the second pass's partials once it has run (`second_done`). A warp a group: its lanes add every 32nd tile's
// partial, then a butterfly over the lanes (a fixed order: lane 0 gets the same bits on every run). A thread a group
// adding all the tiles made this the apply kernel's cost where tiles are many (H100, stop 33: 445 us at 16 blocks
// an SM on SD-UNet's [2, 640, 64, 64], against 44 at 2).
__device__ void gn_group_stats(const gn_args& a, int n, const in_t* x0, float* s_mean, float* s_rstd,
                               bool second_done) {
  const int lane = (int)(threadIdx.x & 31);
  for (int g = (int)(threadIdx.x >> 5); g < a.groups; g += NT / 32) {
    const float2* p = g_gn_part + ((int64_t)n * a.groups + g) * a.tiles;
    double s = 0, q = 0;
    for (int t = lane; t < a.tiles; t += 32) s += p[t].x, q += p[t].y;
    if (k_twopass && second_done) {
      const float2* p2 = g_gn_part2 + ((int64_t)n * a.groups + g) * a.tiles;
      q = 0;
      for (int t = lane; t < a.tiles; t += 32) q += p2[t].y;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      s += __shfl_xor_sync(0xffffffffu, s, o);
      q += __shfl_xor_sync(0xffffffffu, q, o);
    }
    if (lane != 0) continue;
    const double shift = to_f(x0[(int64_t)g * a.cpg]);  // the group's first value (position 0)
    const double dm = s / a.count;
    double var = q / a.count - dm * dm;
    if (k_twopass && second_done) var = q / a.count;
    s_mean[g] = (float)(shift + dm);
    s_rstd[g] = (float)(1.0 / sqrt((var > 0 ? var : 0) + (double)k_eps));
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
  if constexpr (SECOND) gn_group_stats(a, n, x, s_mean, s_rstd, false);
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
  // Each thread's sums in its row's slot of each of its channels; then one thread a group adds its channels' slots
  // in a fixed order (the verifier's reruns must give the same bits: atomics would add in any order).
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
  for (int g = threadIdx.x; g < a.groups; g += NT) {
    float ts = 0.f, tq = 0.f;
    for (int r = 0; r < l.rows; ++r)
      for (int64_t ch = (int64_t)g * a.cpg; ch < (int64_t)(g + 1) * a.cpg; ++ch) {
        ts += rs[(int64_t)r * a.c + ch];
        tq += rq[(int64_t)r * a.c + ch];
      }
    part[((int64_t)n * a.groups + g) * a.tiles + tile] = make_float2(ts, tq);
  }
}

// The stats kernel's dynamic shared memory: a sum and a sum of squares for every row of threads and channel.
template <int V>
inline size_t gn_stats_smem(const gn_args& a) {
  const int64_t cv = a.c / V, cvt = cv < NT ? cv : NT;
  return (size_t)2 * (size_t)(NT / cvt) * (size_t)a.c * sizeof(float);
}

// The apply kernel's staging of a contiguous y: q positions by (c | 1) floats.
inline size_t gn_apply_smem(const gn_args& a) { return (size_t)a.q * (size_t)(a.c | 1) * sizeof(float); }

template <int V, int S>
__global__ void __launch_bounds__(NT) gn_apply_kernel(gn_args a) {
  __shared__ float s_mean[k_group_cap], s_rstd[k_group_cap];
  wait_prior_grid<k_pdl>();
  const int tile = blockIdx.x, n = blockIdx.y;
  const in_t* x = a.x + (int64_t)n * a.hw * a.c;
  out_t* y = a.y + (int64_t)n * a.hw * a.c;
  gn_group_stats(a, n, x, s_mean, s_rstd, true);
  __syncthreads();
  const gn_lane<V> l(a);
  // Per owned channel: y = (x - mean) * (rstd * w) + b.
  float mean[S][V], scale[S][V], bias[S][V];
#pragma unroll
  for (int k = 0; k < S; ++k)
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t ch = l.has(k) ? l.channel(k) + v : 0;
      const int g = (int)(ch / a.cpg);
      mean[k][v] = s_mean[g];
      scale[k][v] = s_rstd[g];
      bias[k][v] = 0.f;
      if constexpr (k_has_w) scale[k][v] *= to_f(a.w[ch]);
      if constexpr (k_has_b) bias[k][v] = to_f(a.b[ch]);
    }
  const int64_t p0 = (int64_t)tile * a.per_tile;
  const int64_t p1 = p0 + a.per_tile < a.hw ? p0 + a.per_tile : a.hw;
  // x's vector k normalized, with the affine, the activation and the casts.
  auto apply = [&](int k, const float* xv, float* o) {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = finalize((xv[v] - mean[k][v]) * scale[k][v] + bias[k][v]);
  };
  if (!a.y_nchw) {
    gn_walk<V, S>(a, l, x, p0, p1, [&](int64_t p, int k, const float* xv) {
      float o[V];
      apply(k, xv, o);
      store_vec<out_t, V, false>(y + p * a.c + l.channel(k), o);
    });
    return;
  }
  // Contiguous y: q positions at a time into shared memory as [q][ld] floats (ld odd, so that a channel's
  // consecutive positions fall in distinct banks), then out by channel, consecutive threads on consecutive positions.
  extern __shared__ float gn_dyn[];
  const int64_t ld = a.c | 1;
  for (int64_t pb = p0; pb < p1; pb += a.q) {
    const int q = (int)(pb + a.q < p1 ? a.q : p1 - pb);
    gn_walk<V, S>(a, l, x, pb, pb + q, [&](int64_t p, int k, const float* xv) {
      float o[V];
      apply(k, xv, o);
#pragma unroll
      for (int v = 0; v < V; ++v) gn_dyn[(p - pb) * ld + l.channel(k) + v] = o[v];
    });
    __syncthreads();
    for (int64_t i = threadIdx.x; i < a.c * q; i += NT) {
      const int64_t ch = i / q;
      const int j = (int)(i - ch * q);
      float v = gn_dyn[j * ld + ch];
      store_vec<out_t, 1, false>(y + ch * a.hw + pb + j, &v);
    }
    __syncthreads();
  }
}

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

template <int V, int S>
inline int gn_launch_as(const gn_args& a, dim3 grid, cudaStream_t s) {
  const size_t smem = gn_stats_smem<V>(a);
  if (smem + 2 * k_group_cap * sizeof(float) > k_smem_limit) return 1;  // channels beyond a block's shared memory
  if (int rc = gn_stats_launch<V, S, false>(a, grid, smem, s)) return rc;
  if constexpr (k_twopass)
    if (int rc = gn_stats_launch<V, S, true>(a, grid, smem, s)) return rc;
  const size_t apply_smem = a.y_nchw ? gn_apply_smem(a) : 0;
  if (!gn_smem_opt_in(gn_apply_kernel<V, S>, apply_smem, 2 * k_group_cap * sizeof(float))) return 3;
  return launch_kernel<k_pdl>(gn_apply_kernel<V, S>, grid, NT, apply_smem, s, a);
}

template <int V>
inline int gn_launch(gn_args a, int64_t images, cudaStream_t s) {
  const int64_t cv = a.c / V;
  if (cv > (int64_t)k_slot_cap * NT) return 1;  // more channel vectors than the threads' slots
  // Tiles: about k_blocks blocks an SM over the batch, within the workspace.
  int64_t tiles = ((int64_t)k_blocks * gn_sms() + images - 1) / images;
  if (tiles > a.hw) tiles = a.hw;
  const int64_t cap = k_part_cap / (images * a.groups);
  if (cap < 1 || images > 65535) return 1;
  if (tiles > cap) tiles = cap;
  if (tiles < 1) tiles = 1;
  a.per_tile = (a.hw + tiles - 1) / tiles;
  a.tiles = (int)((a.hw + a.per_tile - 1) / a.per_tile);
  const dim3 grid((unsigned)a.tiles, (unsigned)images);
  return cv <= NT ? gn_launch_as<V, 1>(a, grid, s) : gn_launch_as<V, k_slot_cap>(a, grid, s);
}

inline bool gn_channels_last(const kf_tensor& t) {
  if (t.ndim != 4) return false;
  const int64_t C = t.shape[1], H = t.shape[2], W = t.shape[3];
  return (C == 1 || t.stride[1] == 1) && (W == 1 || t.stride[3] == C) && (H == 1 || t.stride[2] == W * C) &&
         (t.shape[0] == 1 || t.stride[0] == H * W * C);
}

// Positions staged at a time for a contiguous y: up to 32 (64 bytes of float16 a channel's run), within 96 KB.
inline int gn_stage_positions(int64_t c) {
  const int64_t fit = (int64_t)(96 * 1024) / ((c | 1) * (int64_t)sizeof(float));
  return (int)(fit < 1 ? 1 : fit > 32 ? 32 : fit);
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
  a.q = gn_stage_positions(a.c);
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
