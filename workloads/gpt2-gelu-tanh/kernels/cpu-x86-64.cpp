// kforge kernel: family pointwise_cpu, version 7
// knobs: chunk=16384 f16_load=bits math=poly schedule=static stage=0 threads=all
// computes: gelu (one pass)
// kforge winner: gpt2-gelu-tanh on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-12-02T01:21:47Z
// lineage: default
// measured: 149.13 us (geometric mean over gated cases), 2.23x eager
// re-emitted: by `kforge reemit` on 2026-12-02T04:54:52Z, pointwise_cpu version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T09:26:56Z, pointwise_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T11:00:51Z, pointwise_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T12:22:57Z, pointwise_cpu version 3 from version 2; knobs filled: f16_load=bits (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T14:57:22Z, pointwise_cpu version 4 from version 3; knobs filled: stage=0 (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T15:47:53Z, pointwise_cpu version 5 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:54Z, pointwise_cpu version 6 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T19:34:44Z, pointwise_cpu version 6 from version 6; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T14:23:43Z, pointwise_cpu version 7 from version 6; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T15:50:13Z, pointwise_cpu version 7 from version 7; measured above is the earlier kernel's

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
constexpr int64_t kf_chunk = 16384;  // output elements per OpenMP task
constexpr bool kf_stage = false;  // float16 runs through float buffers (F16C)
constexpr int kf_n_inputs = 1, kf_out_rank = 2, kf_out_dtype = KF_FLOAT16;
constexpr int kf_n_opnd = 1;  // the chain's operands: the first op's input, then each op's tensor operand
constexpr int kf_opnd_input[kf_n_opnd] = {0};
constexpr int kf_opnd_dtype[kf_n_opnd] = {KF_FLOAT16};
constexpr int kf_const_set = 0;  // operands that may be constant along runs (a vectorized loop per subset)

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


// ---- this variant ----
// The chain: the result for element j of a run (operand k read by kf_ld<k, M>).
template <int M>
static inline float kf_elem(const void* const* p, int64_t j) {
  float v = kf_ld<0, M>(p, j);
  v = kf_gelu_tanh(v);
  return v;
}
