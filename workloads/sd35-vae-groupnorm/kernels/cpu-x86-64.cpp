// kforge kernel: family group_norm_cpu, version 5
// knobs: cache_unit=0 f16_load=bits math=poly schedule=static stats=two_pass threads=4 unroll=2 vector_width=16
// computes: x[bfloat16] -> group_norm(groups=32, eps=1e-06)
// kforge winner: sd35-vae-groupnorm on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-11-30T07:19:43Z
// lineage: stored:cpu-x86-64 -> template: cache_unit 1->0 -> template: unroll 1->2
// measured: 2694.63 us (geometric mean over gated cases), 2.01x eager
// re-emitted: by `kforge reemit` on 2026-12-01T22:13:10Z, group_norm_cpu version 1 from version 0 (none recorded: stored before families had versions); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-02T00:07:36Z, group_norm_cpu version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T09:26:56Z, group_norm_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T11:00:51Z, group_norm_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T12:22:57Z, group_norm_cpu version 3 from version 2; knobs filled: f16_load=bits (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:54Z, group_norm_cpu version 4 from version 3; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T19:34:44Z, group_norm_cpu version 4 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T14:23:43Z, group_norm_cpu version 4 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T15:50:13Z, group_norm_cpu version 5 from version 4; measured above is the earlier kernel's

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
#define KF_EXP kf_exp_poly
#define KF_TANH kf_tanh_poly
#define KF_NUM_THREADS num_threads(4)
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
typedef uint16_t kf_w_t;
typedef uint16_t kf_b_t;
constexpr int kf_lanes = 32;  // vector_width x unroll accumulators
constexpr int kf_stats_two_pass = 0, kf_stats_one_pass = 1, kf_stats_rms = 2;
constexpr int kf_stats_kind = kf_stats_two_pass;
constexpr bool kf_cache_unit = false;
constexpr int kf_n_inputs = 3, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;
constexpr int kf_w_input = 1, kf_w_dtype = KF_BFLOAT16, kf_b_input = 2, kf_b_dtype = KF_BFLOAT16;  // -1: none
constexpr bool kf_group = true;  // group_norm: a unit is a sample's group; else the last kf_norm_dims dims
constexpr int kf_groups = 32, kf_norm_dims = 1;
constexpr double kf_eps = 9.9999999999999995e-07;

// x's element i as the norm sees it: loaded and rounded through the casts before the norm.
static inline float kf_load_x(const kf_in_t* p, int64_t i) {
  float v = kf_ld_bf16(p[i]);
  return v;
}

// The affine's weight and bias at channel (or element) i: 1 and 0 where the graph has none.
static inline float kf_w(const kf_w_t* w, int64_t ws, int64_t i) { return kf_ld_bf16(w[i * ws]); }
static inline float kf_b(const kf_b_t* b, int64_t bs, int64_t i) { return kf_ld_bf16(b[i * bs]); }

// A normalized value on its way out: through the norm's type, the activation and the casts after it
// (kf_act), then stored as the output's type (kf_store).
static inline float kf_act(float y) { return kf_ld_bf16(kf_st_bf16(y)); }
static inline kf_out_t kf_store(float v) { return kf_st_bf16(v); }

// group_norm_cpu.h: the fixed code of group_norm_cpu, emitted after the variant's part (group_norm_cpu.cpp: its types,
// constants and knob-selected macros, the load with the fused casts kf_load_x, the affine's kf_w and kf_b, the fused
// activation kf_act and the store kf_store). A "unit" is what is normalized together (a sample's group, or a row);
// units are OpenMP tasks. Each unit is read as segments of contiguous elements (channels of a group in NCHW, pixels in
// channels_last, one row otherwise).

// Elements of a unit, as the norm sees them: straight from x, or from the staged float copy.
struct kf_src_x {
  const kf_in_t* p;
  float operator()(int64_t i) const { return kf_load_x(p, i); }
};
struct kf_src_f {
  const float* p;
  float operator()(int64_t i) const { return p[i]; }
};

// One read of nseg segments of len elements (segment q, element k at q*ss + k*es) with kf_lanes accumulators a[l] and
// c[l] per segment (a contiguous segment in lanes, the rest in lane 0): step(a, c, l, v) for each element v, then
// fold(a, c, l) for each lane.
template <class S, class Step, class Fold>
static inline void kf_lanes_loop(S src, int64_t nseg, int64_t len, int64_t ss, int64_t es, Step step, Fold fold) {
  for (int64_t q = 0; q < nseg; ++q) {
    float a[kf_lanes], c[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) {
      a[l] = 0.f;
      c[l] = 0.f;
    }
    const int64_t o = q * ss;
    int64_t k = 0;
    if (es == 1)
      for (; k + kf_lanes <= len; k += kf_lanes)
        for (int l = 0; l < kf_lanes; ++l) step(a, c, l, src(o + k + l));
    for (; k < len; ++k) step(a, c, 0, src(o + k * es));
    for (int l = 0; l < kf_lanes; ++l) fold(a, c, l);
  }
}

// Mean and reciprocal standard deviation of nseg segments of len elements. Sums are of v - sh, sh the unit's first
// element (close to the mean in practice): a unit of one value sums to exactly 0, so its mean is exact and x - mean is
// 0, as eager has it (its 1/sqrt(eps) would magnify a mean off by an ulp); the variance does not change with the shift.
template <class S>
static void kf_stats(S src, int64_t nseg, int64_t len, int64_t ss, int64_t es, float* mean, float* rstd) {
  const double n = (double)nseg * (double)len;
  double s1 = 0, s2 = 0;
  const float sh = src(0);
  (void)sh;
  if constexpr (kf_stats_kind == kf_stats_rms) {
    // rms_norm: the sum of squares alone.
    kf_lanes_loop(
        src, nseg, len, ss, es, [](float*, float* c, int l, float v) { c[l] += v * v; },
        [&](const float*, const float* c, int l) { s2 += c[l]; });
    *mean = 0.f;
    *rstd = (float)(1.0 / sqrt(s2 / n + kf_eps));
  } else if constexpr (kf_stats_kind == kf_stats_one_pass) {
    // The sum and the sum of squares in one read.
    kf_lanes_loop(
        src, nseg, len, ss, es,
        [&](float* a, float* c, int l, float v) {
          const float d = v - sh;
          a[l] += d;
          c[l] += d * d;
        },
        [&](const float* a, const float* c, int l) {
          s1 += a[l];
          s2 += c[l];
        });
    const double mu = s1 / n, var = s2 / n - mu * mu;
    *mean = (float)(sh + mu);
    *rstd = (float)(1.0 / sqrt((var > 0 ? var : 0) + kf_eps));
  } else {
    // Two reads: the mean, then the squared distances from it.
    kf_lanes_loop(
        src, nseg, len, ss, es, [&](float* a, float*, int l, float v) { a[l] += v - sh; },
        [&](const float* a, const float*, int l) { s1 += a[l]; });
    const float mu = (float)(sh + s1 / n);
    kf_lanes_loop(
        src, nseg, len, ss, es, [&](float*, float* c, int l, float v) { c[l] += (v - mu) * (v - mu); },
        [&](const float*, const float* c, int l) { s2 += c[l]; });
    *mean = mu;
    *rstd = (float)(1.0 / sqrt(s2 / n + kf_eps));
  }
}

template <class S>
static void kf_apply(S src, kf_out_t* o, int64_t nseg, int64_t len, int64_t ss, int64_t es, int64_t oss, int64_t oes,
                     const kf_w_t* w, int64_t ws, const kf_b_t* b, int64_t bs, int64_t wbase, bool per_seg, float mean,
                     float rstd) {
  for (int64_t q = 0; q < nseg; ++q) {
    const int64_t xo = q * ss, oo = q * oss;
    if (per_seg) {
      const float wq = kf_w(w, ws, wbase + q), bq = kf_b(b, bs, wbase + q);
      if (es == 1 && oes == 1) {
        for (int64_t k = 0; k < len; ++k) o[oo + k] = kf_store(kf_act((src(xo + k) - mean) * rstd * wq + bq));
      } else {
        for (int64_t k = 0; k < len; ++k)
          o[oo + k * oes] = kf_store(kf_act((src(xo + k * es) - mean) * rstd * wq + bq));
      }
    } else {
      for (int64_t k = 0; k < len; ++k)
        o[oo + k * oes] =
            kf_store(kf_act((src(xo + k * es) - mean) * rstd * kf_w(w, ws, wbase + k) + kf_b(b, bs, wbase + k)));
    }
  }
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  kf_tensor* y = &out[0];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R || y->dtype != kf_out_dtype || y->ndim != R) return 1;
  for (int i = 0; i < R; ++i)
    if (y->shape[i] != x->shape[i]) return 1;
  // Weight and bias, each read as one folded dim; wn: the weight's element count (the bias's without a weight).
  const kf_w_t* w = 0;
  const kf_b_t* b = 0;
  int64_t ws = 0, bs = 0, wn = 0;
  if constexpr (kf_w_input >= 0) {
    if (in[kf_w_input].dtype != kf_w_dtype) return 1;
    w = (const kf_w_t*)in[kf_w_input].data;
    if (!kf_fold(&in[kf_w_input], 0, &ws)) return 2;
    wn = 1;
    for (int i = 0; i < in[kf_w_input].ndim; ++i) wn *= in[kf_w_input].shape[i];
  }
  if constexpr (kf_b_input >= 0) {
    if (in[kf_b_input].dtype != kf_b_dtype) return 1;
    b = (const kf_b_t*)in[kf_b_input].data;
    if (!kf_fold(&in[kf_b_input], 0, &bs)) return 2;
    if constexpr (kf_w_input < 0) {
      wn = 1;
      for (int i = 0; i < in[kf_b_input].ndim; ++i) wn *= in[kf_b_input].shape[i];
    }
  }
  int64_t units, nseg, len, ss, es, oss, oes;
  bool per_seg;
  const int G = kf_groups, D = kf_norm_dims;
  int64_t C = 1, sN = 0, osN = 0, sC = 0, osC = 0, cpg = 1;
  if (kf_group) {
    C = x->shape[1];
    if (C % G != 0) return 1;
    cpg = C / G;
    int64_t P = 1, sP = 1, osP = 1;
    for (int i = 2; i < R; ++i) P *= x->shape[i];
    if (!kf_fold(x, 2, &sP) || !kf_fold(y, 2, &osP)) return 2;
    sN = x->stride[0];
    osN = y->stride[0];
    sC = x->stride[1];
    osC = y->stride[1];
    units = x->shape[0] * G;
    per_seg = !(sC == 1 && sP != 1 && P > 1);  // channels_last: a pixel's channels are contiguous
    if (per_seg) {
      nseg = cpg;
      len = P;
      ss = sC;
      es = sP;
      oss = osC;
      oes = osP;
    } else {
      nseg = P;
      len = cpg;
      ss = sP;
      es = sC;
      oss = osP;
      oes = osC;
    }
    if (wn && wn != C) return 1;
  } else {
    if (D > R) return 1;
    len = 1;
    for (int i = R - D; i < R; ++i) len *= x->shape[i];
    if (!kf_fold(x, R - D, &es) || !kf_fold(y, R - D, &oes)) return 2;
    if (wn && wn != len) return 1;
    units = 1;
    for (int i = 0; i < R - D; ++i) units *= x->shape[i];
    nseg = 1;
    ss = 0;
    oss = 0;
    per_seg = false;
  }
  if (units == 0 || nseg * len == 0) return 0;
#pragma omp parallel KF_NUM_THREADS
  {
    std::vector<float> sc(kf_cache_unit ? nseg * len : 0);
#pragma omp for schedule(KF_SCHEDULE, 1)
    for (int64_t u = 0; u < units; ++u) {
      int64_t xo = 0, yo = 0, wbase = 0;
      if (kf_group) {
        const int64_t n = u / G, g = u % G;
        xo = n * sN + g * cpg * sC;
        yo = n * osN + g * cpg * osC;
        wbase = g * cpg;
      } else {
        int64_t rest = u;
        for (int i = R - D - 1; i >= 0; --i) {
          const int64_t k = rest % x->shape[i];
          rest /= x->shape[i];
          xo += k * x->stride[i];
          yo += k * y->stride[i];
        }
      }
      kf_src_x sx{(const kf_in_t*)x->data + xo};
      kf_out_t* yb = (kf_out_t*)y->data + yo;
      float mean, rstd;
      if (kf_cache_unit) {
        for (int64_t q = 0; q < nseg; ++q)
          for (int64_t k = 0; k < len; ++k) sc[q * len + k] = sx(q * ss + k * es);
        kf_src_f sf{sc.data()};
        kf_stats(sf, nseg, len, len, 1, &mean, &rstd);
        kf_apply(sf, yb, nseg, len, len, 1, oss, oes, w, ws, b, bs, wbase, per_seg, mean, rstd);
      } else {
        kf_stats(sx, nseg, len, ss, es, &mean, &rstd);
        kf_apply(sx, yb, nseg, len, ss, es, oss, oes, w, ws, b, bs, wbase, per_seg, mean, rstd);
      }
    }
  }
  return 0;
}
