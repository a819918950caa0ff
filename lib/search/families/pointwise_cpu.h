// pointwise_cpu.h: the fixed code of pointwise_cpu (pointwise_cpu.cpp): any chain of elementwise ops as one pass over
// the output, one read of each operand element and one write of each result, computed in float. Emitted before it
// (pointwise_cpu_stub.h has typical values): the OpenMP knobs' macros (KF_NUM_THREADS, KF_SCHEDULE), the knobs'
// constants (kf_math_poly, kf_chunk), what kf_launch checks (kf_n_inputs, kf_out_rank, kf_out_dtype) and the chain's
// operands (kf_n_opnd, kf_opnd_input, kf_opnd_dtype, kf_const_set). Emitted after it: the chain, kf_elem<M>, declared
// below; it calls the math defined here (kf_exp, kf_tanh, kf_sigmoid, kf_gelu, ..., kf_round) and loads with kf_ld.
//
// Each operand is classified at launch against the output's shape (right-aligned, as broadcasting reads it):
//  - linear: a contiguous block of the output's trailing dims, element i at i % inner (the output's shape: full;
//    fewer dims, a [D] row: broadcast over the leading ones);
//  - constant along runs: a contiguous block of dims followed by broadcast ones (a [T, 1] column, a [C, 1, 1] channel
//    bias, a scalar), element i at (i / rep) % inner: one value for rep elements in a row;
//  - general: anything else (strides that do not fold: a channels_last or transposed input).
// With a contiguous output and no general operand, the output is cut into tasks of kf_chunk elements and each task
// into runs over which every operand is linear or constant (the modulo and division hoisted per run); a run is one
// loop that vectorizes, kf_elem<M> reading operand k at p[k][j], or at p[k][0] where bit k of M is set. Anything else
// takes the general path: the output's last dim as rows, each operand's offset computed once per row and stepped by
// its stride along it.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "pointwise_cpu_stub.h"
#include "cpu_elementwise.h"
#endif  // KF_EMITTED

typedef kf_type<kf_out_dtype> kf_out;
typedef kf_out::t kf_out_t;

// ---- stage=1: float16 runs converted by the hardware's vector instructions (x86's F16C) ----
// The vectorized loop's float16 operands are converted a block of kf_block at a time into float buffers and its
// results stored from one: vcvtph2ps / vcvtps2ph take 8 values an instruction where the bit operations take ~10
// (fp16 exact GELU over 1M values on 2 AVX-512 cores: 567 us against 750). Without F16C the knob changes nothing.
#if defined(__F16C__)
constexpr bool kf_stage_f16 = kf_stage;
#else
constexpr bool kf_stage_f16 = false;
#endif
constexpr int64_t kf_block = 256;  // values a staged block converts at once

// Whether operand K of a loop whose constant operands are M is read from a float buffer (a staged float16 run).
template <int K, int M>
constexpr bool kf_staged() {
  return kf_stage_f16 && kf_opnd_dtype[K] == KF_FLOAT16 && !((M >> K) & 1);
}

// Operand K of a run as a float: element j of its pointer (a float buffer where kf_staged), or element 0 where bit K
// of M says it is constant.
template <int K, int M>
static inline float kf_ld(const void* const* p, int64_t j) {
  if constexpr (kf_staged<K, M>()) return ((const float*)p[K])[j];
  typedef kf_type<kf_opnd_dtype[K]> T;
  const typename T::t* q = (const typename T::t*)p[K];
  return T::ld(((M >> K) & 1) ? q[0] : q[j]);
}

// The chain (emitted after this file): its result for element j of a run, operand k read by kf_ld<k, M>.
template <int M>
static inline float kf_elem(const void* const* p, int64_t j);

// ---- operands ----
enum { kf_linear = 0, kf_constant = 1, kf_general = 2 };
struct kf_pw_opnd {
  const char* p;
  int size;  // bytes per element
  int kind;
  int64_t inner, rep;           // linear: element i at i % inner; constant: at (i / rep) % inner
  int64_t stride[KF_MAX_DIMS];  // in elements, over the output's dims (0 where broadcast): the general path's
};

// Classifies operand t against the output y (y's size-1 dims do not count).
static kf_pw_opnd kf_pw_classify(const kf_tensor* t, const kf_tensor* y, int size) {
  kf_pw_opnd o;
  o.p = (const char*)t->data;
  o.size = size;
  const int lead = y->ndim - t->ndim;
  bool varies[KF_MAX_DIMS];
  for (int d = 0; d < y->ndim; ++d) {
    varies[d] = d >= lead && t->shape[d - lead] != 1;
    o.stride[d] = varies[d] ? t->stride[d - lead] : 0;
  }
  // From the last dim: broadcast dims (rep), then the varying block (inner, contiguous), then broadcast dims only.
  int64_t rep = 1, inner = 1;
  int state = 0;
  o.kind = kf_general;
  o.inner = o.rep = 1;
  for (int d = y->ndim - 1; d >= 0; --d) {
    if (y->shape[d] == 1) continue;
    if (varies[d]) {
      if (state == 2 || o.stride[d] != inner) return o;
      state = 1;
      inner *= y->shape[d];
    } else if (state == 0) {
      rep *= y->shape[d];
    } else {
      state = 2;
    }
  }
  o.kind = rep == 1 ? kf_linear : kf_constant;
  o.inner = inner;
  o.rep = rep;
  return o;
}

// ---- the vectorized path: M's operands constant along each run, the others linear ----
// One run of len outputs through float buffers (stage=1): per block, the staged operands converted, the chain's
// loop on floats, the results converted to float16 together (or stored one by one to another type).
template <int M, int K = 0>
static inline void kf_stage_opnds(const void* const* p, const void** q, float (*buf)[kf_block], int64_t j0, int64_t b) {
  if constexpr (K < kf_n_opnd) {
    if constexpr (kf_staged<K, M>()) {
      kf_ld_run<KF_FLOAT16>((const uint16_t*)p[K] + j0, buf[K], b);
      q[K] = buf[K];
    } else {
      q[K] = ((M >> K) & 1) ? p[K] : (const char*)p[K] + j0 * kf_size(kf_opnd_dtype[K]);
    }
    kf_stage_opnds<M, K + 1>(p, q, buf, j0, b);
  }
}
template <int M>
static void kf_pw_staged(const void* const* p, kf_out_t* yr, int64_t len) {
  float buf[kf_n_opnd][kf_block], o[kf_block];
  for (int64_t j0 = 0; j0 < len; j0 += kf_block) {
    const int64_t b = len - j0 < kf_block ? len - j0 : kf_block;
    const void* q[kf_n_opnd];
    kf_stage_opnds<M>(p, q, buf, j0, b);
    for (int64_t j = 0; j < b; ++j) o[j] = kf_elem<M>(q, j);
    kf_st_run<kf_out_dtype>(o, yr + j0, b);
  }
}

template <int M>
static void kf_pw_runs(const kf_pw_opnd* op, kf_out_t* y, int64_t n) {
  const int64_t tasks = (n + kf_chunk - 1) / kf_chunk;
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE) if (tasks > 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t end = n - task * kf_chunk < kf_chunk ? n : (task + 1) * kf_chunk;
    for (int64_t i = task * kf_chunk; i < end;) {
      // The run from i: as far as every operand reads on without wrapping (linear) or changing value (constant).
      int64_t stop = end;
      const void* p[kf_n_opnd];
      for (int k = 0; k < kf_n_opnd; ++k) {
        const kf_pw_opnd& o = op[k];
        int64_t at, next;
        if ((M >> k) & 1) {
          const int64_t b = i / o.rep;
          at = b % o.inner;
          next = (b + 1) * o.rep;
        } else {
          at = i % o.inner;
          next = i - at + o.inner;
        }
        p[k] = o.p + at * o.size;
        stop = next < stop ? next : stop;
      }
      kf_out_t* yr = y + i;
      const int64_t len = stop - i;
      if constexpr (kf_stage_f16) kf_pw_staged<M>(p, yr, len);
      else
        for (int64_t j = 0; j < len; ++j) yr[j] = kf_out::st(kf_elem<M>(p, j));
      i = stop;
    }
  }
}

// Runs the vectorized path for the operands' constant set m when its loop was compiled (the subsets of kf_const_set,
// walked down from it); false when it was not.
template <int M>
static bool kf_pw_dispatch(int m, const kf_pw_opnd* op, kf_out_t* y, int64_t n) {
  if (m == M) {
    kf_pw_runs<M>(op, y, n);
    return true;
  }
  if constexpr (M == 0) return false;
  else return kf_pw_dispatch<(M - 1) & kf_const_set>(m, op, y, n);
}

// ---- the general path: any strides (a non-contiguous output too), one element at a time along each row ----
static void kf_pw_general(const kf_pw_opnd* op, const kf_tensor* y, int64_t n) {
  constexpr int all = (1 << kf_n_opnd) - 1;  // every operand read at its pointer
  const int R = y->ndim;
  const int64_t L = R > 0 ? y->shape[R - 1] : 1, rows = n / L, ys = R > 0 ? y->stride[R - 1] : 0;
  const int64_t per = kf_chunk / L > 0 ? kf_chunk / L : 1;  // rows per task
  kf_out_t* yd = (kf_out_t*)y->data;
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE, per) if (rows > per)
  for (int64_t r = 0; r < rows; ++r) {
    const char* base[kf_n_opnd];
    int64_t step[kf_n_opnd];
    for (int k = 0; k < kf_n_opnd; ++k) {
      base[k] = op[k].p;
      step[k] = R > 0 ? op[k].stride[R - 1] * op[k].size : 0;
    }
    int64_t yoff = 0, rest = r;
    for (int d = R - 2; d >= 0; --d) {
      const int64_t idx = rest % y->shape[d];
      rest /= y->shape[d];
      yoff += idx * y->stride[d];
      for (int k = 0; k < kf_n_opnd; ++k) base[k] += idx * op[k].stride[d] * op[k].size;
    }
    for (int64_t j = 0; j < L; ++j) {
      const void* p[kf_n_opnd];
      for (int k = 0; k < kf_n_opnd; ++k) p[k] = base[k] + j * step[k];
      yd[yoff + j * ys] = kf_out::st(kf_elem<all>(p, 0));
    }
  }
}

// 0: done; 1: arguments that do not match the spec (count, dtype, rank, shapes that do not broadcast to the output's).
extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* y = &out[0];
  if (y->dtype != kf_out_dtype || y->ndim != kf_out_rank) return 1;
  int64_t n = 1;
  for (int d = 0; d < y->ndim; ++d) n *= y->shape[d];
  bool covered[KF_MAX_DIMS] = {false};  // each of y's dims is some operand's (y is their broadcast shape)
  kf_pw_opnd op[kf_n_opnd];
  bool vectorized = kf_row_major(y);
  int m = 0;
  for (int k = 0; k < kf_n_opnd; ++k) {
    const kf_tensor* t = &in[kf_opnd_input[k]];
    if (t->dtype != kf_opnd_dtype[k] || t->ndim > y->ndim) return 1;
    const int lead = y->ndim - t->ndim;
    for (int d = 0; d < t->ndim; ++d) {
      if (t->shape[d] != 1 && t->shape[d] != y->shape[d + lead]) return 1;
      covered[d + lead] = covered[d + lead] || t->shape[d] == y->shape[d + lead];
    }
    op[k] = kf_pw_classify(t, y, kf_size(kf_opnd_dtype[k]));
    if (op[k].kind == kf_general) vectorized = false;
    if (op[k].kind == kf_constant) m |= 1 << k;
  }
  for (int d = 0; d < y->ndim; ++d)
    if (y->shape[d] != 1 && !covered[d]) return 1;
  if (n == 0) return 0;
  if (!vectorized || !kf_pw_dispatch<kf_const_set>(m, op, (kf_out_t*)y->data, n)) kf_pw_general(op, y, n);
  return 0;
}

#ifndef KF_EMITTED
// Read on its own: the stub's chain, silu(gate) * up, as pointwise_cpu.cpp emits it after this file.
template <int M>
static inline float kf_elem(const void* const* p, int64_t j) {
  float v = kf_ld<0, M>(p, j);
  const float x1 = kf_ld<1, M>(p, j);
  v = v * kf_sigmoid(v);
  v = v * x1;
  return v;
}
#endif  // KF_EMITTED
