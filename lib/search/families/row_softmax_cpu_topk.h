// row_softmax_cpu_topk.h: top-k of a row's results (values rounded by the epilogue, ties: the lower index first, NaN
// largest, as in torch). A part ranks its own results; a row split across threads merges its parts' lists in the
// parts' order, which keeps that order: a part's indices all precede the next part's.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees what comes before it
// when emitted; kforge emits it without these lines.
#include "row_softmax_cpu_part.h"
#endif  // KF_EMITTED

static inline bool kf_gt(float a, float b) { return a > b || (a != a && b == b); }  // NaN is largest, as in torch

// Inserts (v, j) into the n best so far (tv, ti: at most kf_k, best first); an equal value goes after those held,
// which came earlier in the row.
static inline void kf_topk_insert(float v, int64_t j, float* tv, int64_t* ti, int& n) {
  if (n == kf_k && !kf_gt(v, tv[kf_k - 1])) return;
  int p = n < kf_k ? n++ : kf_k - 1;
  while (p > 0 && kf_gt(v, tv[p - 1])) {
    tv[p] = tv[p - 1];
    ti[p] = ti[p - 1];
    --p;
  }
  tv[p] = v;
  ti[p] = j;
}

// The k best of a part's results res[0, hi - lo) (x[lo, hi)); returns how many it holds (fewer than k for a short
// part).
static inline int kf_part_topk(const float* res, int64_t lo, int64_t hi, float* tv, int64_t* ti) {
  int n = 0;
  for (int64_t j = lo; j < hi; ++j) kf_topk_insert(res[j - lo], j, tv, ti, n);
  return n;
}

// The row's k best from its parts' lists (part i: pn[i] entries at pv, pi + i * kf_k), taken in the parts' order.
static inline void kf_topk_merge(const float* pv, const int64_t* pi, const int* pn, int parts, float* tv, int64_t* ti) {
  int n = 0;
  for (int i = 0; i < parts; ++i)
    for (int q = 0; q < pn[i]; ++q) kf_topk_insert(pv[i * kf_k + q], pi[i * kf_k + q], tv, ti, n);
}

// kf_row_op != 0 (no softmax, a top-k of the row's values or of their sigmoid): a part's values x[lo, hi) after the
// prologue, mapped (kf_map) and rounded by the epilogue, into res[0, hi - lo).
static inline void kf_part_mapped(const kf_row& rw, float* res, int64_t lo, int64_t hi) {
  for (int64_t j = lo; j < hi; ++j) res[j - lo] = kf_epi(kf_map(kf_pro(rw.x, rw.mrow, rw.mstep, j)));
}

// Stores the row's k best: the values in its output row, the indices in out[1] (int64 or int32) at the row's index.
static inline void kf_topk_store(const kf_row& rw, const kf_tensor* idx_out, const float* tv, const int64_t* ti) {
  for (int q = 0; q < kf_k; ++q) rw.out[q] = kf_store(tv[q]);
  char* ib = (char*)idx_out->data;
  const int64_t ioff = kf_row_off(idx_out, rw.idx, kf_rank), is = idx_out->stride[kf_rank - 1];
  for (int q = 0; q < kf_k; ++q) {
    if (idx_out->dtype == KF_INT64) ((int64_t*)ib)[ioff + q * is] = ti[q];
    else ((int32_t*)ib)[ioff + q * is] = (int32_t)ti[q];
  }
}

// A row split across a team of T threads (this one is t): each ranks its part's results res[0, hi - lo) into its
// list (pv, pi, pn at t), and after a barrier thread 0 merges the lists and stores the row's k best. Every thread of
// the team calls it.
static inline void kf_team_topk(const kf_row& rw, const kf_tensor* idx_out, const float* res, int64_t lo, int64_t hi,
                                float* pv, int64_t* pi, int* pn, int T, int t) {
  pn[t] = kf_part_topk(res, lo, hi, pv + t * kf_k, pi + t * kf_k);
#pragma omp barrier
  if (t == 0) {
    float tv[kf_k > 0 ? kf_k : 1];
    int64_t ti[kf_k > 0 ? kf_k : 1];
    kf_topk_merge(pv, pi, pn, T, tv, ti);
    kf_topk_store(rw, idx_out, tv, ti);
  }
}
