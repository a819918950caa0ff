// kforge kernel: family row_norm_cpu, version 6
// knobs: cache_row=0 f16_load=bits lanes=32 math=poly rows_per_task=4 schedule=static threads=all
// computes: add -> rms_norm: 1 prologue op(s) -> rms_norm(dims=1, eps=1e-06) * w -> 0 epilogue op(s), returns the norm's input too
// kforge winner: qwen3-32b-add-rmsnorm on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-12-02T03:28:59Z
// lineage: default
// measured: 15.25 us (geometric mean over gated cases), 2.13x compile, 13.89x eager
// re-emitted: by `kforge reemit` on 2026-12-02T04:54:52Z, row_norm_cpu version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T09:26:56Z, row_norm_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T11:00:51Z, row_norm_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T12:22:57Z, row_norm_cpu version 3 from version 2; knobs filled: f16_load=bits (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T15:47:53Z, row_norm_cpu version 4 from version 3; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:54Z, row_norm_cpu version 5 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T19:34:44Z, row_norm_cpu version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T14:23:43Z, row_norm_cpu version 6 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T15:50:13Z, row_norm_cpu version 6 from version 6; measured above is the earlier kernel's

// cpu_prelude.h: what every cpu family's kernel opens with, after its header (cpu_emit.cpp): the standard includes,
// the float16 / bfloat16 conversions (bit operations that vectorize; the float16 store by the hardware where the
// compiler has _Float16; the float16 load by the hardware too where the variant defines KF_F16_LOAD_HW, its
// `f16_load` knob), an exp and a tanh that vectorize, and the layout tests (kf_fold, kf_row_major).
#include "kf_abi.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

// ---- layout ----
// Folds dims [from, ndim) of t into one of stride *stride (size-1 dims ignored); false when they do not fold.
static inline bool kf_fold(const kf_tensor* t, int from, int64_t* stride) {
  int64_t expect = -1, first = 1;
  for (int i = t->ndim - 1; i >= from; --i) {
    if (t->shape[i] == 1) continue;
    if (expect < 0) first = t->stride[i];
    else if (t->stride[i] != expect) return false;
    expect = t->stride[i] * t->shape[i];
  }
  *stride = first;
  return true;
}

// Whether t's elements are laid out row-major without gaps (size-1 dims' strides do not count): all its dims fold
// into one of stride 1. The layout every output has (the ABI's) and the one a kernel's dense paths read.
static inline bool kf_row_major(const kf_tensor* t) {
  int64_t stride = 1;
  return kf_fold(t, 0, &stride) && stride == 1;
}

// ---- dtype conversions (bit operations; round to nearest even, NaN stays NaN) ----
static inline float kf_ld_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t kf_st_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
#if defined(KF_F16_LOAD_HW) && defined(__FLT16_MAX__) && (defined(__F16C__) || defined(__aarch64__))
// f16_load=hw: the hardware's conversion (x86's F16C vcvtph2ps, AArch64's fcvt), exact like the code below. One
// instruction where the loop around it is not vectorized anyway (a softmax's masked rows: 2.4x faster on an fp16
// ALiBi softmax); GCC 12 does not vectorize it without AVX512-FP16, so a loop the bit operations let vectorize (a
// channels_last pool: 687 us with them, 2240 with this) keeps f16_load=bits.
static inline float kf_ld_f16(uint16_t h) {
  _Float16 x;
  memcpy(&x, &h, 2);
  return (float)x;
}
#else
// Exact for every half (subnormals: the multiply by 2^112 is exact), branch-free so that loops vectorize.
static inline float kf_ld_f16(uint16_t h) {
  uint32_t u = (uint32_t)(h & 0x7fffu) << 13;
  float f;
  memcpy(&f, &u, 4);
  f *= 5.192296858534828e+33f;  // 2^112: rebias the exponent
  memcpy(&u, &f, 4);
  if (f >= 65536.0f) u |= 0x7f800000u;  // was Inf/NaN: keep it so
  u |= (uint32_t)(h & 0x8000u) << 16;
  memcpy(&f, &u, 4);
  return f;
}
#endif
#if defined(__FLT16_MAX__) && (defined(__F16C__) || defined(__aarch64__))
// The store by the hardware (x86's F16C vcvtps2ph under -march=native, AArch64's fcvt): the same bits as the code
// below for all 2^32 floats, NaN payloads aside, in 0.44x the time over 16M values (GCC 12), where the branches
// below keep a loop from vectorizing anyway. The load by the hardware is the f16_load knob's choice (above): it
// costs loops that vectorize with the bit operations.
static inline uint16_t kf_st_f16(float f) {
  const _Float16 x = (_Float16)f;
  uint16_t h;
  memcpy(&h, &x, 2);
  return h;
}
#else
static inline uint16_t kf_st_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);  // rounds to infinity
  if (a < 0x38800000u) {                                 // below 2^-14: subnormal or zero
    float af;
    memcpy(&af, &a, 4);
    return (uint16_t)(s | (uint32_t)lrintf(af * 16777216.0f));
  }
  a += 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(s | ((a - (112u << 23)) >> 13));
}
#endif

// ---- a float16 store that vectorizes: kf_st_f16's bits (the bit operations'; the hardware's, NaN payloads aside) with
// selects for its branches. A loop storing through kf_st_f16 (either one) stays scalar; through this one it vectorizes
// (a GroupNorm + SiLU to float16 on an AVX-512 host: 1627 -> 321 us, with the polynomial exp) ----
static inline uint16_t kf_st_f16_sel(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  const uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u) - (112u << 23)) >> 13;
  float af;
  memcpy(&af, &a, 4);
  af += 0.5f;  // below 2^-14 (a subnormal half): rounds |f| to a multiple of 2^-24, to nearest even
  uint32_t sub;
  memcpy(&sub, &af, 4);
  sub -= 0x3f000000u;
  uint32_t h = a < 0x38800000u ? sub : normal;
  h = a >= 0x477ff000u ? 0x7c00u : h;  // rounds to infinity
  h = a > 0x7f800000u ? 0x7e00u : h;   // NaN
  return (uint16_t)(s | h);
}

// A float rounded to the nearest float16 value, as a float: the bits of kf_ld_f16(kf_st_f16(f)) for every finite and
// infinite float (all 2^32 checked against F16C's conversions), NaN stays NaN, in float arithmetic and selects that
// vectorize whatever f16_load is (the conversions there and back do not: 3x the time over 1M values on an
// AVX-512 host). Normal halves: the mantissa rounded to 10 bits, ties to even; past 65504: infinity; below 2^-14
// (subnormal halves): a multiple of 2^-24, which adding and subtracting 0.75 rounds to (its float ulp is 2^-24).
static inline float kf_round_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t s = u & 0x80000000u, a = u & 0x7fffffffu;
  uint32_t n = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
  n = a >= 0x477ff000u ? 0x7f800000u : n;
  float af;
  memcpy(&af, &a, 4);
  const float sub = (af + 0.75f) - 0.75f;
  uint32_t su;
  memcpy(&su, &sub, 4);
  uint32_t r = a < 0x38800000u ? su : n;
  r = a > 0x7f800000u ? ((a | 0x400000u) & 0xffffe000u) : r;  // NaN: quieted, as F16C's round trip leaves it
  r |= s;
  memcpy(&f, &r, 4);
  return f;
}

// ---- exp / tanh that vectorize (libm's do not without -ffast-math): Cephes' expf polynomial, ~1 ulp ----
static inline float kf_exp_poly(float x) {
  float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float n = nearbyintf(xc * 1.44269504088896341f);
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, 4);
  float y = e * scale;
  y = x < -87.0f ? 0.0f : y;
  y = x > 88.0f ? INFINITY : y;
  return x != x ? x : y;
}
static inline float kf_tanh_poly(float x) { return 1.0f - 2.0f / (kf_exp_poly(2.0f * x) + 1.0f); }

// ---- this variant ----
#define KF_NUM_THREADS
#define KF_SCHEDULE static

constexpr bool kf_math_poly = true;  // exp, tanh, erfc: the polynomials (true) or libm's
constexpr bool kf_parallel = true;  // false: one thread, no OpenMP region
constexpr int kf_lanes = 32;  // float accumulators per reduction (SIMD lanes)
constexpr int64_t kf_rows_per_task = 4;  // rows per OpenMP task
constexpr bool kf_cache_row = false;  // the norm's input staged as floats between the row's reads
constexpr bool kf_layer = false;  // LayerNorm (mean, then squared deviations); else RMSNorm (mean square)
constexpr double kf_eps = 9.9999999999999995e-07;
constexpr int kf_n_inputs = 3, kf_rank = 2, kf_norm_dims = 1;
constexpr int kf_n_outputs = 2, kf_y_output = 0, kf_h_output = 1;  // kf_h_output -1: the norm's input is not returned
constexpr int kf_in_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;  // the norm's input (h) and the result
constexpr int kf_w_input = 2, kf_w_dtype = KF_BFLOAT16, kf_b_input = -1, kf_b_dtype = KF_FLOAT32;  // -1: none
constexpr bool kf_has_prologue = true;  // ops before the norm; else its input is operand 0 as stored
constexpr int kf_n_opnd = 2, kf_n_pro = 2;  // the operands: the first op's input, then each op's tensor operand; [0, kf_n_pro) are the prologue's
constexpr int kf_opnd_input[kf_n_opnd] = {0, 1};
constexpr int kf_opnd_dtype[kf_n_opnd] = {KF_BFLOAT16, KF_BFLOAT16};

// cpu_elementwise.h: what a cpu family that runs elementwise_emit.h's statements needs beside cpu_prelude.h, emitted
// after the variant's constants (it reads kf_math_poly) and before the family's own file (pointwise_cpu.h,
// row_norm_cpu.h): the stored types (kf_type<dtype code>: ld, st), runs of them to floats and back (kf_ld_run,
// kf_st_run: F16C for float16), and the math the statements call (kf_exp, kf_tanh, kf_erf, kf_gelu, kf_round, ...).

#if defined(__F16C__)
#include <immintrin.h>
#endif

// ---- the stored types: kf_type<dtype code>::t, ld (to float), st (from float, rounded to nearest even) ----
template <int D>
struct kf_type;
template <>
struct kf_type<KF_FLOAT32> {
  typedef float t;
  static float ld(float v) { return v; }
  static float st(float v) { return v; }
};
template <>
struct kf_type<KF_BFLOAT16> {
  typedef uint16_t t;
  static float ld(uint16_t v) { return kf_ld_bf16(v); }
  static uint16_t st(float v) { return kf_st_bf16(v); }
};
template <>
struct kf_type<KF_FLOAT16> {
  typedef uint16_t t;
  static float ld(uint16_t v) { return kf_ld_f16(v); }
  static uint16_t st(float v) { return kf_st_f16_sel(v); }
};
static constexpr int kf_size(int dtype) { return dtype == KF_FLOAT32 ? 4 : 2; }

// n stored values to floats and back. float16 takes F16C's conversions where the compiler targets them (one
// instruction for 8 values, where the bit operations' vectorized code takes about 20; both round to nearest even);
// the rest are element loops, which vectorize.
template <int D>
static inline void kf_ld_run(const typename kf_type<D>::t* s, float* d, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (D == KF_FLOAT16)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(s + i))));
#endif
  for (; i < n; ++i) d[i] = kf_type<D>::ld(s[i]);
}
template <int D>
static inline void kf_st_run(const float* s, typename kf_type<D>::t* d, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (D == KF_FLOAT16)
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128((__m128i*)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) d[i] = kf_type<D>::st(s[i]);
}

// ---- the math elementwise_emit.h's statements call, in float ----
// libm's (kf_math_poly false), or branch-free approximations that vectorize: cpu_prelude.h's exp, a tanh that is an
// odd polynomial below 0.625 (Cephes' tanhf; 1 - 2 / (e^2x + 1) alone loses the relative accuracy near 0) and an erfc
// with a relative error below 1.2e-7 (Numerical Recipes' erfcc).
static inline float kf_exp(float x) {
  if constexpr (kf_math_poly) return kf_exp_poly(x);
  else return expf(x);
}
static inline float kf_tanh(float x) {
  if constexpr (kf_math_poly) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = x + x * z * p;
    const float large = 1.0f - 2.0f / (kf_exp_poly(2.0f * fabsf(x)) + 1.0f);
    return fabsf(x) < 0.625f ? small : (x < 0.0f ? -large : large);
  } else {
    return tanhf(x);
  }
}
static inline float kf_erfc(float x) {
  if constexpr (kf_math_poly) {
    const float a = fabsf(x), t = 1.0f / (1.0f + 0.5f * a);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    const float e = t * kf_exp_poly(-a * a - 1.26551223f + t * p);
    return x < 0.0f ? 2.0f - e : e;
  } else {
    return erfcf(x);
  }
}
static inline float kf_erf(float x) {  // the statements reach erf through kf_gelu, which takes erfc
  if constexpr (kf_math_poly) return 1.0f - kf_erfc(x);
  else return erff(x);
}
// libm's sqrtf sets errno for a negative x: a chain with rsqrt does not vectorize.
static inline float kf_sqrt(float x) { return sqrtf(x); }
static inline float kf_sigmoid(float x) { return 1.0f / (1.0f + kf_exp(-x)); }
static inline float kf_relu(float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }  // NaN stays NaN
// GELU as x Phi(x) through erfc: 1 + erf(x / sqrt 2) cancels on the negative tail, erfc(-x / sqrt 2) does not.
static inline float kf_gelu(float x) { return 0.5f * x * kf_erfc(x * -0.70710678118654752f); }
// The tanh GELU as x sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3): 0.5 (1 + tanh u) cancels on the negative tail.
static inline float kf_gelu_tanh(float x) {
  return x / (1.0f + kf_exp(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
}
// A value rounded through a stored type (a cast in the chain; the family's chains hold floating types only).
static inline float kf_round(int dtype, float x) {
  if (dtype == KF_FLOAT16) return kf_round_f16(x);
  if (dtype == KF_BFLOAT16) return kf_ld_bf16(kf_st_bf16(x));
  return x;
}

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


// ---- this variant ----
// The prologue: the norm's input at element j of the row, before its rounding (operand k read by kf_ld<k>).
static inline float kf_pro(const void* const* p, int64_t j) {
  float v = kf_ld<0>(p, j);
  const float x1 = kf_ld<1>(p, j);
  v = v + x1;
  return v;
}
// The epilogue: the result at element j, from the affine step's value v.
static inline float kf_epi(float v, const void* const* p, int64_t j) {
  (void)p, (void)j;
  return v;
}
