// row_softmax_cpu_part.h: what one thread does with a part [lo, hi) of a row (the whole row when rows are dealt to
// threads; a segment when split=auto or within splits a row across the team): its statistics (max and sum of
// exponentials), the combination of several parts' statistics (log-sum-exp), and its results given the row's.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "row_softmax_cpu_stub.h"
#endif  // KF_EMITTED

// A row as a thread reads it: x's row, each mask's row and its step along the row (0: one value for the whole row),
// the output row, and the row's multi-index over x's leading dims (where top-k's indices go).
struct kf_row {
  const kf_in_t* x;
  const void* mrow[kf_n_masks > 0 ? kf_n_masks : 1];
  int64_t mstep[kf_n_masks > 0 ? kf_n_masks : 1];
  kf_out_t* out;
  int64_t idx[KF_MAX_DIMS];
};

// The offset of the row at multi-index idx (over x's leading dims) in t, right-aligned to x's rank;
// size-1 dims of t broadcast.
static inline int64_t kf_row_off(const kf_tensor* t, const int64_t* idx, int rank) {
  int64_t off = 0;
  int lead = rank - t->ndim;
  for (int i = 0; i + 1 < t->ndim; ++i)
    if (t->shape[i] != 1) off += idx[i + lead] * t->stride[i];
  return off;
}

// Row r of x (in row-major order over its leading dims) and of the masks and the output.
static inline kf_row kf_row_at(const kf_tensor* in, const kf_tensor* out, int64_t r) {
  const kf_tensor* x = &in[kf_x_input];
  const int R = kf_rank;
  kf_row rw;
  for (int i = 0; i < KF_MAX_DIMS; ++i) rw.idx[i] = 0;
  for (int i = R - 2; i >= 0; --i) {
    rw.idx[i] = r % x->shape[i];
    r /= x->shape[i];
  }
  rw.x = (const kf_in_t*)x->data + kf_row_off(x, rw.idx, R);
  for (int k = 0; k < kf_n_masks; ++k) {
    const kf_tensor* mt = &in[kf_mask_input[k]];
    rw.mrow[k] = (const char*)mt->data + kf_row_off(mt, rw.idx, R) * kf_mask_bytes[k];
    rw.mstep[k] = mt->ndim > 0 && mt->shape[mt->ndim - 1] > 1 ? 1 : 0;
  }
  rw.out = (kf_out_t*)out->data + kf_row_off(out, rw.idx, R);
  return rw;
}

// A part's statistics: its max m and the sum s of exp(x - m) over it. A part whose values are all -inf has m = -inf
// and s = 0 (NaN where it holds a NaN, so that the NaN reaches the whole row as it does in eager).
struct kf_stats {
  float m, s;
};

// x[j] of the row as the reduction reads it: from the part's scratch (sc[j - lo]) where cache_row staged it, else
// through the prologue.
#define KF_X(j) (kf_cache_row ? sc[j - lo] : kf_pro(xr, mrow, mstep, j))

// The statistics of x[lo, hi): read for its max, then for its sum of exponentials (two passes), or for both at once
// (online). sc holds the part: cache_row stages the prologue's results there first, exp_once keeps the exponentials.
static inline kf_stats kf_part_stats(const kf_row& rw, float* sc, int64_t lo, int64_t hi) {
  const kf_in_t* xr = rw.x;
  const void* const* mrow = rw.mrow;
  const int64_t* mstep = rw.mstep;
  (void)mrow, (void)mstep;
  if constexpr (kf_cache_row)
    for (int64_t j = lo; j < hi; ++j) sc[j - lo] = kf_pro(xr, mrow, mstep, j);
  float m = -INFINITY, s = 0.f;
  float mx[kf_lanes], sm[kf_lanes];
  for (int l = 0; l < kf_lanes; ++l) {
    mx[l] = -INFINITY;
    sm[l] = 0.f;
  }
  int64_t j = lo;
  if constexpr (kf_online) {
    // Online softmax: running max and rescaled sum per lane in one read, then the lanes are combined.
    for (; j + kf_lanes <= hi; j += kf_lanes)
      for (int l = 0; l < kf_lanes; ++l) {
        float v = KF_X(j + l);
        float mn = v > mx[l] ? v : mx[l];
        float a = mx[l] == -INFINITY ? 0.f : sm[l] * KF_EXP(mx[l] - mn);
        float b = v == -INFINITY ? 0.f : KF_EXP(v - mn);
        sm[l] = a + b;
        mx[l] = mn;
      }
    for (int l = 0; l < kf_lanes; ++l) m = mx[l] > m ? mx[l] : m;
    for (int l = 0; l < kf_lanes; ++l)
      if (mx[l] != -INFINITY) s += sm[l] * KF_EXP(mx[l] - m);
    for (; j < hi; ++j) {
      float v = KF_X(j);
      float mn = v > m ? v : m;
      s = (m == -INFINITY ? 0.f : s * KF_EXP(m - mn)) + (v == -INFINITY ? 0.f : KF_EXP(v - mn));
      m = mn;
    }
    return {m, s};
  }
  // Two reads of the part: the max (lane-wise, then combined), then the sum of exponentials. With exp_once=1 the sum
  // pass keeps the exponentials in the scratch and the write pass only scales (one exp per element).
  for (; j + kf_lanes <= hi; j += kf_lanes)
    for (int l = 0; l < kf_lanes; ++l) {
      float v = KF_X(j + l);
      mx[l] = v > mx[l] ? v : mx[l];
    }
  for (int l = 0; l < kf_lanes; ++l) m = mx[l] > m ? mx[l] : m;
  for (; j < hi; ++j) {
    float v = KF_X(j);
    m = v > m ? v : m;
  }
  if (m == -INFINITY) {
    // Only -inf (or NaN): nothing to add but a NaN; exp(x - m) would be NaN for every -inf. The kept exponentials
    // are 0 (NaN for a NaN).
    for (j = lo; j < hi; ++j) {
      float v = KF_X(j), e = v == -INFINITY ? 0.f : v;
      if constexpr (kf_keep_exp) sc[j - lo] = e;
      s += e;
    }
    return {m, s};
  }
  if constexpr (kf_keep_exp) {
    for (j = lo; j + kf_lanes <= hi; j += kf_lanes)
      for (int l = 0; l < kf_lanes; ++l) {
        float e = KF_EXP(KF_X(j + l) - m);
        sc[j + l - lo] = e;
        sm[l] += e;
      }
    for (int l = 0; l < kf_lanes; ++l) s += sm[l];
    for (; j < hi; ++j) {
      float e = KF_EXP(KF_X(j) - m);
      sc[j - lo] = e;
      s += e;
    }
  } else {
    for (j = lo; j + kf_lanes <= hi; j += kf_lanes)
      for (int l = 0; l < kf_lanes; ++l) sm[l] += KF_EXP(KF_X(j + l) - m);
    for (int l = 0; l < kf_lanes; ++l) s += sm[l];
    for (; j < hi; ++j) s += KF_EXP(KF_X(j) - m);
  }
  return {m, s};
}

// The row's statistics from its n parts' (log-sum-exp). A part of only -inf adds its s (0, or NaN) times 0.
static inline kf_stats kf_combine(const kf_stats* p, int n) {
  float m = -INFINITY, s = 0.f;
  for (int i = 0; i < n; ++i) m = p[i].m > m ? p[i].m : m;
  for (int i = 0; i < n; ++i) s += p[i].s * (p[i].m == -INFINITY ? 0.f : KF_EXP(p[i].m - m));
  return {m, s};
}

// Hands each result of x[lo, hi), rounded by the epilogue and not yet stored, to put(j, value): a holds the row's
// statistics, p the part's own (exp_once kept the part's exp(x - p.m) in sc; put may overwrite sc[j - lo]).
template <class F>
static inline void kf_part_results(const kf_row& rw, float* sc, int64_t lo, int64_t hi, kf_stats a, kf_stats p, F put) {
  const kf_in_t* xr = rw.x;
  const void* const* mrow = rw.mrow;
  const int64_t* mstep = rw.mstep;
  (void)xr, (void)mrow, (void)mstep, (void)p;
  if constexpr (kf_log) {
    // (x - m) - log s: rounding m + log s to float would lose log s next to a large m.
    const float ls = logf(a.s);
    for (int64_t j = lo; j < hi; ++j) put(j, kf_epi((KF_X(j) - a.m) - ls));
  } else if constexpr (kf_keep_exp) {
    // The kept exp(x - p.m), rescaled to the row's max (a part of only -inf kept zeros: times 0, or NaN for a row of
    // only -inf, as eager gives).
    const float f = (p.m == a.m ? 1.f : KF_EXP(p.m - a.m)) / a.s;
    for (int64_t j = lo; j < hi; ++j) put(j, kf_epi(sc[j - lo] * f));
  } else {
    const float inv = 1.f / a.s;
    for (int64_t j = lo; j < hi; ++j) put(j, kf_epi(KF_EXP(KF_X(j) - a.m) * inv));
  }
}
#undef KF_X
