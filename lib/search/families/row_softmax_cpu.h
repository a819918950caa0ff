// row_softmax_cpu.h: the fixed code of row_softmax_cpu, emitted after the variant's part (row_softmax_cpu.cpp: its
// types, constants and knob-selected macros, the fused prologue kf_pro and epilogue kf_epi) and what a thread does
// with a part of a row (row_softmax_cpu_part.h, row_softmax_cpu_topk.h). Rows are dealt whole to OpenMP threads, or
// (split) each row is split across the team: every thread reduces its segment, the team combines the segments'
// statistics, and every thread writes its segment's results.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees what comes before it
// when emitted; kforge emits it without these lines.
#include "row_softmax_cpu_topk.h"
#endif  // KF_EMITTED

#include <omp.h>

// 0: handled; 1: arguments that do not match the spec; 2: a layout this kernel does not handle.
static int kf_check(const kf_tensor* in, int n_in, const kf_tensor* out, int n_out) {
  if (n_in != kf_n_inputs || n_out != (kf_k > 0 ? 2 : 1)) return 1;
  const kf_tensor* x = &in[kf_x_input];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R) return 1;
  const int64_t L = x->shape[R - 1];
  if (L > 1 && x->stride[R - 1] != 1) return 2;
  for (int k = 0; k < kf_n_masks; ++k) {
    const kf_tensor* m = &in[kf_mask_input[k]];
    if (m->ndim > R) return 1;
    for (int i = 0; i < m->ndim; ++i)
      if (m->shape[i] != 1 && m->shape[i] != x->shape[i + R - m->ndim]) return 1;
    if (m->ndim > 0 && m->shape[m->ndim - 1] > 1 && m->stride[m->ndim - 1] != 1) return 2;
  }
  for (int k = 0; k < kf_n_masks; ++k)
    if (in[kf_mask_input[k]].dtype != kf_mask_dtype[k]) return 1;
  const int64_t width = kf_k > 0 ? kf_k : L;
  if (kf_k > L) return 1;
  for (int o = 0; o < n_out; ++o) {
    const kf_tensor* t = &out[o];
    if (t->ndim != R || t->shape[R - 1] != width) return 1;
    for (int i = 0; i + 1 < R; ++i)
      if (t->shape[i] != x->shape[i]) return 1;
    if (width > 1 && t->stride[R - 1] != 1) return 2;
  }
  if (out[0].dtype != kf_out_dtype) return 1;
  if (n_out > 1 && out[1].dtype != KF_INT64 && out[1].dtype != KF_INT32) return 1;
  return 0;
}

// A part of a row costs about this many values' work beyond its values (a barrier, the combination, the team's start
// on the row): split=auto splits the rows only where that still leaves the slowest thread less to do.
constexpr int64_t kf_part_overhead = 4096;

// Whether a team of T threads splits each row across itself rather than dealing rows whole: split=within always;
// split=auto where the whole rows would leave the slowest thread more (ceil(rows / T) rows) than a segment of every
// row plus its overhead (one row of 151936 on 2 threads or more: split; 4096 rows of 256, or 5 of 257: dealt whole).
// Every thread of the team decides alike.
static inline bool kf_split_rows(int64_t rows, int64_t L, int T) {
  if (kf_split == 0 || T < 2) return false;
  if (kf_split == 2) return true;
  return rows * ((L + T - 1) / T + kf_part_overhead) < (rows + T - 1) / T * L;
}

// Rows dealt whole to the team's threads (rows_per_chunk rows a task).
static void kf_rows_whole(const kf_tensor* in, kf_tensor* out, int64_t rows, int64_t L) {
  std::vector<float> sc(kf_cache_row || kf_keep_exp || kf_k > 0 ? L : 0);
  float* res = sc.data();
  float tv[kf_k > 0 ? kf_k : 1];
  int64_t ti[kf_k > 0 ? kf_k : 1];
#pragma omp for schedule(KF_SCHEDULE, kf_rows_per_chunk)
  for (int64_t r = 0; r < rows; ++r) {
    const kf_row rw = kf_row_at(in, &out[0], r);
    if constexpr (kf_row_op != 0) {  // no statistics: the k best of the mapped values
      kf_part_mapped(rw, res, 0, L);
      kf_part_topk(res, 0, L, tv, ti);
      kf_topk_store(rw, &out[1], tv, ti);
      continue;
    }
    const kf_stats a = kf_part_stats(rw, res, 0, L);
    if constexpr (kf_k > 0) {
      // The row's results go to the scratch, then the k best of them to the outputs.
      kf_part_results(rw, res, 0, L, a, a, [&](int64_t j, float v) { res[j] = v; });
      kf_part_topk(res, 0, L, tv, ti);
      kf_topk_store(rw, &out[1], tv, ti);
    } else {
      kf_out_t* o = rw.out;
      kf_part_results(rw, res, 0, L, a, a, [&](int64_t j, float v) { o[j] = kf_store(v); });
    }
  }
}

// Every row split across the team, the rows in turn. Thread t's segment is [t * seg, (t + 1) * seg) of the row, seg
// being L / T rounded up to 64 values (whole cache lines of output, whole lane groups), so the last threads may have
// none. Per row: each thread reduces its segment and leaves its statistics in `parts`; one barrier; each combines
// them (log-sum-exp) and writes its segment's results, or ranks them (top-k) for thread 0 to merge after a second
// barrier. Row r's statistics go to half r % 2 of `parts`: a thread combining row r's is done before any thread can
// write row r + 2's, which waits on row r + 1's barrier; top-k's lists are rewritten only after the next row's first
// barrier, which thread 0 reaches after its merge.
static void kf_rows_split(const kf_tensor* in, kf_tensor* out, int64_t rows, int64_t L, kf_stats* parts, float* pv,
                          int64_t* pi, int* pn) {
  const int T = omp_get_num_threads(), t = omp_get_thread_num();
  const int64_t seg = ((L + T - 1) / T + 63) / 64 * 64;
  const int64_t lo = t * seg < L ? t * seg : L, hi = lo + seg < L ? lo + seg : L;
  std::vector<float> sc(kf_cache_row || kf_keep_exp || kf_k > 0 ? hi - lo : 0);
  float* res = sc.data();
  for (int64_t r = 0; r < rows; ++r) {
    const kf_row rw = kf_row_at(in, &out[0], r);
    if constexpr (kf_row_op != 0) {
      // No statistics: each thread ranks its mapped segment, thread 0 merges after a barrier, and a second barrier
      // keeps the lists until it has (there is no statistics barrier on the next row to wait on).
      kf_part_mapped(rw, res, lo, hi);
      kf_team_topk(rw, &out[1], res, lo, hi, pv, pi, pn, T, t);
#pragma omp barrier
      continue;
    }
    kf_stats* half = parts + (r & 1) * T;
    const kf_stats p = kf_part_stats(rw, res, lo, hi);
    half[t] = p;
#pragma omp barrier
    const kf_stats a = kf_combine(half, T);
    if constexpr (kf_k > 0) {
      kf_part_results(rw, res, lo, hi, a, p, [&](int64_t j, float v) { res[j - lo] = v; });
      kf_team_topk(rw, &out[1], res, lo, hi, pv, pi, pn, T, t);
    } else {
      kf_out_t* o = rw.out;
      kf_part_results(rw, res, lo, hi, a, p, [&](int64_t j, float v) { o[j] = kf_store(v); });
    }
  }
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (int rc = kf_check(in, n_in, out, n_out)) return rc;
  const kf_tensor* x = &in[kf_x_input];
  const int64_t L = x->shape[kf_rank - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < kf_rank; ++i) rows *= x->shape[i];
  if (rows == 0 || L == 0) return 0;
  // What the threads of a split row share, sized inside the team (its size is known only there).
  std::vector<kf_stats> parts;
  std::vector<float> pv;
  std::vector<int64_t> pi;
  std::vector<int> pn;
#pragma omp parallel KF_NUM_THREADS
  {
    const int T = omp_get_num_threads();
    if (kf_split_rows(rows, L, T)) {
#pragma omp single
      {
        parts.resize(2 * T);
        pv.resize(kf_k > 0 ? T * kf_k : 0);
        pi.resize(kf_k > 0 ? T * kf_k : 0);
        pn.resize(kf_k > 0 ? T : 0);
      }
      kf_rows_split(in, out, rows, L, parts.data(), pv.data(), pi.data(), pn.data());
    } else {
      kf_rows_whole(in, out, rows, L);
    }
  }
  return 0;
}
