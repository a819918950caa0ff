// cpu_elementwise.h: what a cpu family that runs elementwise_emit.h's statements needs beside cpu_prelude.h, emitted
// after the variant's constants (it reads kf_math_poly) and before the family's own file (pointwise_cpu.h,
// row_norm_cpu.h): the stored types (kf_type<dtype code>: ld, st), runs of them to floats and back (kf_ld_run,
// kf_st_run: F16C for float16), and the math the statements call (kf_exp, kf_tanh, kf_erf, kf_gelu, kf_round, ...).
#ifndef KF_EMITTED
// Read on its own, this file sees cpu_prelude.h and the one constant it reads; a family's file includes it after
// the family's stub (which defines KF_FAMILY_STUB).
#ifndef KF_FAMILY_STUB
#include "cpu_prelude.h"
constexpr bool kf_math_poly = true;  // exp, tanh, erfc: the polynomials (true) or libm's
#endif
#endif  // KF_EMITTED

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
