// adaptive_pool_cpu.h: the fixed code of adaptive_pool_cpu, emitted after the variant's part (adaptive_pool_cpu.cpp:
// its types, constants and knob-selected macros, the load kf_load, the epilogue's casts kf_fin and the store
// kf_store). Average pooling to an OH x OW output over torch's adaptive windows (kf_fixed 0: OH x OW is kf_oh x
// kf_ow) or avg_pool2d's (kf_fixed 1: kf_kh x kf_kw windows kf_sh, kf_sw apart from -kf_ph, -kf_pw, clipped to x; OH x
// OW follows x's size); NCHW walks each (n, c) plane, channels_last each output position with a block of contiguous
// channels at a time. y is contiguous [N, C, OH, OW].
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "adaptive_pool_cpu_stub.h"
#endif  // KF_EMITTED

// The output's length along dim d (0: rows, 1: columns) of x's `len`, as torch sizes it (avg_pool2d: rounded down,
// or up with ceil_mode where the last window still starts inside x or its left padding).
static inline int64_t kf_out_len(int d, int64_t len) {
  if (!kf_fixed) return d ? kf_ow : kf_oh;
  const int64_t k = d ? kf_kw : kf_kh, st = d ? kf_sw : kf_sh, p = d ? kf_pw : kf_ph;
  const int64_t num = len + 2 * p - k + (kf_ceil ? st - 1 : 0);
  int64_t n = (num >= 0 ? num / st : -((-num + st - 1) / st)) + 1;
  if (kf_ceil && n > 0 && (n - 1) * st >= len + p) --n;
  return n > 0 ? n : 0;
}

// Output index i of n along dim d of x's `len`: x's rows (or columns) [lo, hi) and the window's size counting its
// padding (span, avg_pool2d's count_include_pad divisor). Adaptive: [floor(i len / n), ceil((i + 1) len / n)).
typedef struct {
  int64_t lo, hi, span;
} kf_win;
static inline kf_win kf_window(int d, int64_t i, int64_t len, int64_t n) {
  kf_win r;
  if (!kf_fixed) {
    r.lo = i * len / n, r.hi = ((i + 1) * len + n - 1) / n, r.span = r.hi - r.lo;
    return r;
  }
  const int64_t k = d ? kf_kw : kf_kh, st = d ? kf_sw : kf_sh, p = d ? kf_pw : kf_ph;
  const int64_t start = i * st - p, end = start + k < len + p ? start + k : len + p;
  r.lo = start > 0 ? start : 0, r.hi = end < len ? end : len, r.span = end - start;
  return r;
}

// What a window's sum is divided by: divisor_override, or the window's size with or without its padding.
static inline float kf_divisor_of(kf_win r, kf_win c) {
  if (kf_divisor) return (float)kf_divisor;
  if (kf_fixed && kf_incl_pad) return (float)(r.span * c.span);
  return (float)((r.hi - r.lo) * (c.hi - c.lo));
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  kf_tensor* y = &out[0];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R || y->dtype != kf_out_dtype) return 1;
  const int64_t N = R == 4 ? x->shape[0] : 1, C = x->shape[R - 3], H = x->shape[R - 2], W = x->shape[R - 1];
  const int64_t sN = R == 4 ? x->stride[0] : 0, sC = x->stride[R - 3], sH = x->stride[R - 2], sW = x->stride[R - 1];
  const int64_t OH = kf_out_len(0, H), OW = kf_out_len(1, W);
  int64_t ycount = 1;
  for (int i = 0; i < y->ndim; ++i) ycount *= y->shape[i];
  if (OH < 1 || OW < 1 || ycount != N * C * OH * OW || !kf_row_major(y) || H == 0 || W == 0) return 1;
  const kf_in_t* xd = (const kf_in_t*)x->data;
  kf_out_t* yd = (kf_out_t*)y->data;
  if (sC == 1 && C > 1) {
    // channels_last: each task is one output position of one sample, its window's pixels summed a block of
    // contiguous channels at a time.
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE)
    for (int64_t t = 0; t < N * OH * OW; ++t) {
      const int64_t n = t / (OH * OW), oi = t / OW % OH, oj = t % OW;
      const kf_win r = kf_window(0, oi, H, OH), q = kf_window(1, oj, W, OW);
      const int64_t h0 = r.lo, h1 = r.hi, w0 = q.lo, w1 = q.hi;
      const float count = kf_divisor_of(r, q);
      for (int64_t c0 = 0; c0 < C; c0 += kf_cblock) {
        const int64_t cn = C - c0 < kf_cblock ? C - c0 : kf_cblock;
        kf_acc_t acc[kf_cblock];
        for (int64_t c = 0; c < cn; ++c) acc[c] = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const kf_in_t* px = xd + n * sN + h * sH + w * sW + c0;
            for (int64_t c = 0; c < cn; ++c) acc[c] += kf_load(px[c]);
          }
        for (int64_t c = 0; c < cn; ++c)
          yd[((n * C + c0 + c) * OH + oi) * OW + oj] = kf_store(kf_fin((float)acc[c] / count));
      }
    }
    return 0;
  }
  // planes: each (n, c) plane's OH x OW windows, a row of the window at a time.
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE)
  for (int64_t t = 0; t < N * C; ++t) {
    const int64_t n = t / C, c = t % C;
    const kf_in_t* px = xd + n * sN + c * sC;
    for (int64_t oi = 0; oi < OH; ++oi) {
      const kf_win r = kf_window(0, oi, H, OH);
      for (int64_t oj = 0; oj < OW; ++oj) {
        const kf_win q = kf_window(1, oj, W, OW);
        kf_acc_t s = 0;
        for (int64_t h = r.lo; h < r.hi; ++h)
          for (int64_t w = q.lo; w < q.hi; ++w) s += kf_load(px[h * sH + w * sW]);
        yd[(t * OH + oi) * OW + oj] = kf_store(kf_fin((float)s / kf_divisor_of(r, q)));
      }
    }
  }
  return 0;
}
