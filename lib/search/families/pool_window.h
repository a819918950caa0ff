// pool_window.h: the windows of a pooling (adaptive_avg_pool2d's, avg_pool2d's, max_pool2d's), the one text that every
// pooling kernel needing them emits ahead of its fixed code (adaptive_pool_cpu, adaptive_pool_cuda, generic); on the
// host, spec/ops.h's pool_window sizes the same outputs for the graph's inference (the verifier checks both against
// torch). KF_POOL_FN qualifies the functions: host and device, forced inline, in a CUDA kernel; static inline on the
// cpu. Called with constants (a family's variant), they fold to the window arithmetic of that pooling alone.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp); kforge emits it without these lines.
#ifndef KF_POOL_FN  // a CUDA family's stub defines it first
#define KF_POOL_FN static inline
#endif
#endif  // KF_EMITTED
#include <math.h>
#include <stdint.h>

// Output index i's window along a dim: x's rows (or columns) [lo, hi), and span, the window's size counting its
// padding (avg_pool2d's count_include_pad divisor).
typedef struct {
  int64_t lo, hi, span;
} kf_pool_win;

// The output's length along a dim of x's `len`: n where the windows are adaptive; else torch's pooling_output_shape
// for avg_pool2d's kernel k, stride s and padding p (dilation 1): rounded down, or up with ceil_mode where the last
// window still starts inside x or its left padding; 0 where no window fits.
KF_POOL_FN int64_t kf_pool_out_len(bool fixed, int64_t n, int64_t len, int64_t k, int64_t s, int64_t p,
                                   bool ceil_mode) {
  if (!fixed) return n;
  const int64_t num = len + 2 * p - k + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && o > 0 && (o - 1) * s >= len + p) --o;
  return o > 0 ? o : 0;
}

// Output i's window (of n along a dim of x's `len`): adaptive [floor(i len / n), ceil((i + 1) len / n)); avg_pool2d's
// [i s - p, i s - p + k), its span ending at len + p at most, clipped to x.
KF_POOL_FN kf_pool_win kf_pool_window(bool fixed, int64_t i, int64_t len, int64_t n, int64_t k, int64_t s, int64_t p) {
  kf_pool_win w;
  if (!fixed) {
    w.lo = i * len / n, w.hi = ((i + 1) * len + n - 1) / n, w.span = w.hi - w.lo;
    return w;
  }
  const int64_t start = i * s - p, end = start + k < len + p ? start + k : len + p;
  w.lo = start > 0 ? start : 0, w.hi = end < len ? end : len, w.span = end - start;
  return w;
}

// What the sum over rows r and columns c is divided by: 1 for max pooling; divisor (divisor_override) where nonzero;
// else the window's size counting its padding (count_include_pad) or not.
KF_POOL_FN int64_t kf_pool_count(kf_pool_win r, kf_pool_win c, bool fixed, bool incl_pad, int64_t divisor, bool max) {
  if (max) return 1;
  if (divisor != 0) return divisor;
  if (fixed && incl_pad) return r.span * c.span;
  return (r.hi - r.lo) * (c.hi - c.lo);
}

// A window's running value from its start: the sum (0), or with max the largest value (-inf: the padding never wins),
// NaN once the window holds one, as torch's max_pool2d.
template <typename T>
KF_POOL_FN T kf_pool_start(bool max) {
  return max ? (T)-INFINITY : (T)0;
}
template <typename T>
KF_POOL_FN T kf_pool_step(T acc, T v, bool max) {
  return max ? (v > acc || v != v ? v : acc) : acc + v;
}
