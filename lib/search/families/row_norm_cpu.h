// row_norm_cpu.h: the fixed code of row_norm_cpu (row_norm_cpu.cpp): LayerNorm / RMSNorm over the trailing dims with
// a fused elementwise prologue and epilogue, computed in float. Emitted before it (row_norm_cpu_stub.h has typical
// values): the OpenMP knobs' macros (KF_NUM_THREADS, KF_SCHEDULE), the knobs' constants (kf_math_poly, kf_parallel,
// kf_lanes, kf_rows_per_task, kf_cache_row), the norm's (kf_layer, kf_eps, weight and bias), what kf_launch checks
// and the operands (kf_n_opnd, kf_n_pro, kf_opnd_input, kf_opnd_dtype). Emitted after it: the prologue kf_pro and the
// epilogue kf_epi, declared below; they call the math defined here (kf_exp, kf_tanh, kf_sigmoid, ..., kf_round) and
// load operands with kf_ld.
//
// A row is the n elements of the normalized dims; every tensor is contiguous, and each operand is either the value's
// shape (row r at r * n) or one row broadcast to all rows (a per-channel scale: at 0), so that every operand is read
// linearly along a row. Rows are dealt to threads in tasks of kf_rows_per_task. The norm's input is the prologue's
// value rounded through its stored type (as eager stores that intermediate); where the spec returns it (h) or the row
// is staged as floats (kf_cache_row), a first loop writes it there, and every read after takes it from the staged
// row, else from h, else computes it again. A row is read for its statistics (RMSNorm: the mean square; LayerNorm:
// the mean, then the squared deviations from it), as sums of kf_lanes float accumulators folded into double every
// kf_block elements, then again to write (x - mean) * rstd * w + b through the epilogue, kf_run results at a time.
// float16 rows, results and weights convert with F16C where the compiler targets it (cpu_elementwise.h's kf_ld_run,
// kf_st_run).
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "row_norm_cpu_stub.h"
#include "cpu_elementwise.h"
#endif  // KF_EMITTED

typedef kf_type<kf_in_dtype> kf_in;  // the norm's input, as h stores it
typedef kf_type<kf_out_dtype> kf_out;
// Weight and bias as the write reads them: float16 ones are staged as floats once per thread (kf_launch), since
// their conversion costs more than a pass over them.
constexpr bool kf_w_staged = kf_w_input >= 0 && kf_w_dtype == KF_FLOAT16;
constexpr bool kf_b_staged = kf_b_input >= 0 && kf_b_dtype == KF_FLOAT16;
typedef kf_type<kf_w_staged ? KF_FLOAT32 : kf_w_dtype> kf_w;
typedef kf_type<kf_b_staged ? KF_FLOAT32 : kf_b_dtype> kf_b;

// Operand K's element j of the row as a float: p[K] points at the operand's row.
template <int K>
static inline float kf_ld(const void* const* p, int64_t j) {
  typedef kf_type<kf_opnd_dtype[K]> T;
  return T::ld(((const typename T::t*)p[K])[j]);
}

// Emitted after this file: the prologue (the ops before the norm on operand 0's element j, before the rounding
// through the norm's input type) and the epilogue (the ops after it, on the affine step's value v at element j).
static inline float kf_pro(const void* const* p, int64_t j);
static inline float kf_epi(float v, const void* const* p, int64_t j);

// The norm's input at element j, rounded through its stored type (exactly what h holds).
static inline float kf_x(const void* const* p, int64_t j) {
  if constexpr (kf_has_prologue) return kf_in::ld(kf_in::st(kf_pro(p, j)));
  else return kf_ld<0>(p, j);
}

// The sum of f(j) over j in [0, n): kf_lanes float accumulators (a loop that vectorizes), folded into double every
// kf_block elements so that a long row loses no more than a block does.
constexpr int64_t kf_block = 1024;
template <class F>
static inline double kf_sum(int64_t n, F f) {
  double s = 0;
  for (int64_t start = 0; start < n; start += kf_block) {
    const int64_t end = n - start < kf_block ? n : start + kf_block;
    float a[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) a[l] = 0.f;
    int64_t j = start;
    for (; j + kf_lanes <= end; j += kf_lanes)
      for (int l = 0; l < kf_lanes; ++l) a[l] += f(j + l);
    float t = 0.f;
    for (; j < end; ++j) t += f(j);
    for (int l = 0; l < kf_lanes; ++l) s += a[l];
    s += t;
  }
  return s;
}

constexpr int64_t kf_run = 256;  // results computed as floats before they are stored together (kf_st_run)

// One row: p[k] is operand k's row, h the returned norm's input's (null when the spec does not return it), y the
// result's, sc a float row of n (kf_cache_row).
static void kf_row(const void* const* p, typename kf_in::t* h, typename kf_out::t* y, const typename kf_w::t* w,
                   const typename kf_b::t* b, int64_t n, float* sc) {
  (void)h, (void)w, (void)b, (void)sc;
  // Where the first read writes (h, the staged row), it is a loop of its own: a reduction that also stores
  // vectorizes worse. Without a prologue the staged row is x's row, converted at once.
  if constexpr (kf_cache_row && !kf_has_prologue) {
    kf_ld_run<kf_in_dtype>((const typename kf_in::t*)p[0], sc, n);
  } else if constexpr (kf_has_prologue && (kf_cache_row || kf_h_output >= 0)) {
    for (int64_t j = 0; j < n; ++j) {
      const typename kf_in::t s = kf_in::st(kf_pro(p, j));
      if constexpr (kf_h_output >= 0) h[j] = s;
      if constexpr (kf_cache_row) sc[j] = kf_in::ld(s);
    }
  }
  // The norm's input at j on every read: the staged row, else h, else computed (kf_x).
  auto at = [&](int64_t j) -> float {
    if constexpr (kf_cache_row) return sc[j];
    else if constexpr (kf_h_output >= 0) return kf_in::ld(h[j]);
    else return kf_x(p, j);
  };
  const double count = (double)n;
  float mean = 0.f, rstd;
  if constexpr (kf_layer) {
    // The mean of x - x[0] (a row of one value sums to exactly 0, so its mean is exact and x - mean is 0, as eager
    // has it: 1/sqrt(eps) would magnify a mean off by an ulp), then the squared deviations from it.
    const float sh = kf_x(p, 0);
    const double s1 = kf_sum(n, [&](int64_t j) { return at(j) - sh; });
    mean = (float)(sh + s1 / count);
    const double s2 = kf_sum(n, [&](int64_t j) {
      const float d = at(j) - mean;
      return d * d;
    });
    rstd = (float)(1.0 / sqrt(s2 / count + kf_eps));
  } else {
    const double s2 = kf_sum(n, [&](int64_t j) {
      const float v = at(j);
      return v * v;
    });
    rstd = (float)(1.0 / sqrt(s2 / count + kf_eps));
  }
  // The write, kf_run elements at a time: computed as floats, then stored together.
  for (int64_t start = 0; start < n; start += kf_run) {
    const int64_t len = n - start < kf_run ? n - start : kf_run;
    float o[kf_run];
    for (int64_t i = 0; i < len; ++i) {
      const int64_t j = start + i;
      float v;
      if constexpr (kf_layer) v = (at(j) - mean) * rstd;
      else v = at(j) * rstd;
      if constexpr (kf_w_input >= 0) v = v * kf_w::ld(w[j]);
      if constexpr (kf_b_input >= 0) v = v + kf_b::ld(b[j]);
      o[i] = kf_epi(v, p, j);
    }
    kf_st_run<kf_out_dtype>(o, y + start, len);
  }
}

// Whether t, right-aligned to y's dims, has y's dims from `from` on and size 1 before (from 0: y's shape; from the
// first normalized dim: one row).
static bool kf_shaped(const kf_tensor* t, const kf_tensor* y, int from) {
  if (t->ndim > y->ndim) return false;
  const int lead = y->ndim - t->ndim;
  for (int d = 0; d < y->ndim; ++d) {
    const int64_t have = d < lead ? 1 : t->shape[d - lead];
    if (have != (d < from ? 1 : y->shape[d])) return false;
  }
  return true;
}

// A weight or bias of stored type D as the write reads it: staged as floats in f (S), else as stored.
template <int D, bool S>
static inline const typename kf_type<S ? KF_FLOAT32 : D>::t* kf_as_read(const void* src, float* f, int64_t n) {
  if constexpr (S) {
    kf_ld_run<D>((const typename kf_type<D>::t*)src, f, n);
    return f;
  } else {
    (void)f, (void)n;
    return (const typename kf_type<D>::t*)src;
  }
}

// 0: done; 1: arguments this kernel does not take (count, dtype, rank, shapes, a tensor that is not contiguous).
extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != kf_n_outputs) return 1;
  const kf_tensor* y = &out[kf_y_output];
  const int R = kf_rank, lead = kf_rank - kf_norm_dims;
  if (y->dtype != kf_out_dtype || y->ndim != R || !kf_row_major(y)) return 1;
  int64_t rows = 1, n = 1;
  for (int d = 0; d < R; ++d) (d < lead ? rows : n) *= y->shape[d];
  typename kf_in::t* hd = 0;
  if constexpr (kf_h_output >= 0) {
    const kf_tensor* h = &out[kf_h_output];
    if (h->dtype != kf_in_dtype || h->ndim != R || !kf_shaped(h, y, 0) || !kf_row_major(h)) return 1;
    hd = (typename kf_in::t*)h->data;
  }
  // Each operand: the value's shape (full) or one row of the normalized dims.
  const char* base[kf_n_opnd];
  int64_t row_bytes[kf_n_opnd];  // from one row to the next: 0 for a broadcast row
  for (int k = 0; k < kf_n_opnd; ++k) {
    const kf_tensor* t = &in[kf_opnd_input[k]];
    if (t->dtype != kf_opnd_dtype[k] || !kf_row_major(t)) return 1;
    if (kf_shaped(t, y, 0)) row_bytes[k] = n * kf_size(kf_opnd_dtype[k]);
    else if (k > 0 && kf_shaped(t, y, lead)) row_bytes[k] = 0;
    else return 1;
    base[k] = (const char*)t->data;
  }
  const void* wsrc = 0;
  const void* bsrc = 0;
  if constexpr (kf_w_input >= 0) {
    const kf_tensor* t = &in[kf_w_input];
    if (t->dtype != kf_w_dtype || !kf_shaped(t, y, lead) || !kf_row_major(t)) return 1;
    wsrc = t->data;
  }
  if constexpr (kf_b_input >= 0) {
    const kf_tensor* t = &in[kf_b_input];
    if (t->dtype != kf_b_dtype || !kf_shaped(t, y, lead) || !kf_row_major(t)) return 1;
    bsrc = t->data;
  }
  if (rows == 0 || n == 0) return 0;
  typename kf_out::t* yd = (typename kf_out::t*)y->data;
  const int64_t tasks = (rows + kf_rows_per_task - 1) / kf_rows_per_task;
#pragma omp parallel KF_NUM_THREADS if (kf_parallel && tasks > 1)
  {
    std::vector<float> sc(kf_cache_row ? n : 0), wf(kf_w_staged ? n : 0), bf(kf_b_staged ? n : 0);
    const typename kf_w::t* w = kf_as_read<kf_w_dtype, kf_w_staged>(wsrc, wf.data(), n);
    const typename kf_b::t* b = kf_as_read<kf_b_dtype, kf_b_staged>(bsrc, bf.data(), n);
#pragma omp for schedule(KF_SCHEDULE)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t end = rows - task * kf_rows_per_task < kf_rows_per_task ? rows : (task + 1) * kf_rows_per_task;
      for (int64_t r = task * kf_rows_per_task; r < end; ++r) {
        const void* p[kf_n_opnd];
        for (int k = 0; k < kf_n_opnd; ++k) p[k] = base[k] + r * row_bytes[k];
        kf_row(p, hd ? hd + r * n : hd, yd + r * n, w, b, n, sc.data());
      }
    }
  }
  return 0;
}

#ifndef KF_EMITTED
// Read on its own: the stub's prologue, x + r, and its empty epilogue, as row_norm_cpu.cpp emits them after this file.
static inline float kf_pro(const void* const* p, int64_t j) {
  float v = kf_ld<0>(p, j);
  const float x1 = kf_ld<1>(p, j);
  v = v + x1;
  return v;
}
static inline float kf_epi(float v, const void* const* p, int64_t j) {
  (void)p, (void)j;
  return v;
}
#endif  // KF_EMITTED
