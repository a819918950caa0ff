// col_softmax_cpu.h: the fixed code of col_softmax_cpu, emitted after the variant's part (col_softmax_cpu.cpp: its
// types, constants and knob-selected macros, the fused prologue kf_pro and epilogue kf_epi). x is read as
// [outer, n, inner]; a task is a tile of kf_tile neighbouring columns of one outer index, whose statistics are arrays
// over the tile: each pass walks the n values of the reduced dim, and each step a contiguous run of the tile's
// columns, a loop that vectorizes.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees what comes before it
// when emitted; kforge emits it without these lines.
#include "col_softmax_cpu_stub.h"
#endif  // KF_EMITTED

#include <omp.h>

#include <vector>

// 0: handled; 1: arguments that do not match the spec; 2: a layout this kernel does not handle.
static int kf_check(const kf_tensor* in, int n_in, const kf_tensor* out, int n_out) {
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  const kf_tensor* y = &out[0];
  if (x->dtype != kf_x_dtype || x->ndim != kf_rank || y->dtype != kf_out_dtype || y->ndim != kf_rank) return 1;
  for (int d = 0; d < kf_rank; ++d)
    if (y->shape[d] != x->shape[d]) return 1;
  return kf_row_major(x) && kf_row_major(y) ? 0 : 2;
}

// The tile of w columns starting at x (and y): statistics over the n values `inner` apart, then the results.
static void kf_col_tile(const kf_in_t* x, kf_out_t* y, int64_t n, int64_t inner, int w) {
  float m[kf_tile], s[kf_tile], t[kf_tile];
  for (int c = 0; c < w; ++c) m[c] = -INFINITY, s[c] = 0.f;
  if constexpr (kf_online) {
    // The max and the sum in one read: a -inf value adds nothing (nor rescales a column that is still empty), a
    // NaN makes its column's sum NaN, as torch's softmax does.
    for (int64_t j = 0; j < n; ++j) {
      const kf_in_t* r = x + j * inner;
      for (int c = 0; c < w; ++c) {
        const float v = kf_pro(r[c]);
        const float mn = v > m[c] ? v : m[c];
        const float keep = m[c] == mn ? 1.f : KF_EXP(m[c] - mn);
        const float add = v == -INFINITY ? 0.f : KF_EXP(v - mn);
        s[c] = s[c] * keep + add;
        m[c] = mn;
      }
    }
  } else {
    for (int64_t j = 0; j < n; ++j) {
      const kf_in_t* r = x + j * inner;
      for (int c = 0; c < w; ++c) {
        const float v = kf_pro(r[c]);
        m[c] = v > m[c] ? v : m[c];
      }
    }
    // A column of -inf only sums NaN (exp(-inf - -inf)), as torch's softmax gives.
    for (int64_t j = 0; j < n; ++j) {
      const kf_in_t* r = x + j * inner;
      for (int c = 0; c < w; ++c) s[c] += KF_EXP(kf_pro(r[c]) - m[c]);
    }
  }
  if constexpr (kf_log)
    for (int c = 0; c < w; ++c) s[c] = logf(s[c]);  // (x - max) - log sum: x - (max + log sum) loses log sum
  for (int64_t j = 0; j < n; ++j) {
    const kf_in_t* r = x + j * inner;
    kf_out_t* o = y + j * inner;
    // Computed as floats, then stored: one loop doing both stayed scalar (GCC 12: float16 out, 2.6 ms for
    // [1, 150, 64, 64] on 2 cores; split, 0.31 ms).
    for (int c = 0; c < w; ++c) {
      const float v = kf_pro(r[c]);
      t[c] = kf_epi(kf_log ? (v - m[c]) - s[c] : KF_EXP(v - m[c]) / s[c]);
    }
    for (int c = 0; c < w; ++c) o[c] = kf_store(t[c]);
  }
}

// Floats a thread stages at most (n x kf_tile): about its share of a cache level; longer dims take kf_col_tile.
constexpr int64_t kf_stage_floats = 256 * 1024;

// kf_col_tile with the tile's n x w values after the prologue staged once in `st` (as floats, kf_tile apart): the
// max reads them, the sum replaces them by their exponentials (softmax), the write scales those, so x is read and
// converted once and each value's exp taken once.
static void kf_col_tile_staged(const kf_in_t* x, kf_out_t* y, int64_t n, int64_t inner, int w, float* st) {
  float m[kf_tile], s[kf_tile];
  for (int c = 0; c < w; ++c) m[c] = -INFINITY, s[c] = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    const kf_in_t* r = x + j * inner;
    float* row = st + j * kf_tile;
    for (int c = 0; c < w; ++c) row[c] = kf_pro(r[c]);
    for (int c = 0; c < w; ++c) m[c] = row[c] > m[c] ? row[c] : m[c];
  }
  for (int64_t j = 0; j < n; ++j) {
    float* row = st + j * kf_tile;
    if constexpr (kf_log) {
      for (int c = 0; c < w; ++c) s[c] += KF_EXP(row[c] - m[c]);
    } else {
      for (int c = 0; c < w; ++c) {
        const float e = KF_EXP(row[c] - m[c]);
        row[c] = e;
        s[c] += e;
      }
    }
  }
  if constexpr (kf_log)
    for (int c = 0; c < w; ++c) s[c] = logf(s[c]);
  for (int64_t j = 0; j < n; ++j) {
    float* row = st + j * kf_tile;
    kf_out_t* o = y + j * inner;
    for (int c = 0; c < w; ++c) row[c] = kf_epi(kf_log ? (row[c] - m[c]) - s[c] : row[c] / s[c]);
    for (int c = 0; c < w; ++c) o[c] = kf_store(row[c]);
  }
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (int rc = kf_check(in, n_in, out, n_out)) return rc;
  const kf_tensor* x = &in[kf_x_input];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < kf_dim; ++d) outer *= x->shape[d];
  const int64_t n = x->shape[kf_dim];
  for (int d = kf_dim + 1; d < kf_rank; ++d) inner *= x->shape[d];
  if (outer == 0 || n == 0 || inner == 0) return 0;
  const kf_in_t* xp = (const kf_in_t*)x->data;
  kf_out_t* yp = (kf_out_t*)out[0].data;
  const int64_t tiles = (inner + kf_tile - 1) / kf_tile;
  const bool staged = kf_stage && n * kf_tile <= kf_stage_floats;
#pragma omp parallel KF_NUM_THREADS
  {
    std::vector<float> st(staged ? n * kf_tile : 0);
#pragma omp for schedule(KF_SCHEDULE)
    for (int64_t t = 0; t < outer * tiles; ++t) {
      const int64_t o = t / tiles, i0 = (t - o * tiles) * kf_tile;
      const int w = (int)(inner - i0 < kf_tile ? inner - i0 : kf_tile);
      const int64_t at = o * n * inner + i0;
      if (staged) kf_col_tile_staged(xp + at, yp + at, n, inner, w, st.data());
      else kf_col_tile(xp + at, yp + at, n, inner, w);
    }
  }
  return 0;
}
