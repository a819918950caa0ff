// kforge kernel: family row_softmax_cpu, version 6
// knobs: cache_row=1 exp_once=1 f16_load=bits math=poly passes=two rows_per_chunk=4 schedule=static split=rows threads=all unroll=1 vector_width=8
// computes: x[bfloat16] -> softcap(50) -> softmax(float32) -> cast(bfloat16)
// kforge winner: gemma-attn-softmax on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-11-30T06:57:23Z
// lineage: default -> template: rows_per_chunk 16->4
// measured: 29863.38 us (geometric mean over gated cases), 9.92x eager
// re-emitted: by `kforge reemit` on 2026-12-01T22:13:10Z, row_softmax_cpu version 1 from version 0 (none recorded: stored before families had versions); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-02T00:07:36Z, row_softmax_cpu version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T06:24:09Z, row_softmax_cpu version 3 from version 2; knobs filled: split=rows (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T09:26:56Z, row_softmax_cpu version 3 from version 3; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T11:00:51Z, row_softmax_cpu version 3 from version 3; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T12:22:57Z, row_softmax_cpu version 4 from version 3; knobs filled: f16_load=bits (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:54Z, row_softmax_cpu version 5 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T19:34:44Z, row_softmax_cpu version 5 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T12:30:24Z, row_softmax_cpu version 6 from version 5; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T12:42:12Z, row_softmax_cpu version 6 from version 6; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T14:23:43Z, row_softmax_cpu version 6 from version 6; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T15:50:13Z, row_softmax_cpu version 6 from version 6; measured above is the earlier kernel's

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
#define KF_NUM_THREADS
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
constexpr int kf_lanes = 8;  // vector_width x unroll accumulators
constexpr int kf_rows_per_chunk = 4;
constexpr int kf_split = 0;  // rows dealt whole to threads (0), split across the team at launch (1: auto) or always (2)
constexpr bool kf_online = false, kf_cache_row = true;
constexpr bool kf_keep_exp = true;  // exp_once with two passes and no log: the sum pass keeps the exponentials
constexpr bool kf_log = false;
constexpr int kf_k = 0;  // top-k (0: none)
constexpr int kf_row_op = 0;  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)
constexpr int kf_n_inputs = 1, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;
constexpr int kf_n_masks = 0;
constexpr int kf_mask_input[] = {-1}, kf_mask_dtype[] = {-1};
constexpr int64_t kf_mask_bytes[] = {0};

// x[j] after the fused prologue: what the reduction sees (mask k's row at mrow[k], its j-th value at
// j * mstep[k]).
static inline float kf_pro(const kf_in_t* x, const void* const*, const int64_t*, int64_t j) {
  float v = kf_ld_bf16(x[j]);
  v = KF_TANH(v * 0.02f) * 50.0f;
  v = kf_ld_bf16(kf_st_bf16(v));
  return v;
}

// A result on its way out: rounded through the softmax's type and each later cast (kf_epi), then stored as
// the output's type (kf_store).
static inline float kf_epi(float v) { return kf_ld_bf16(kf_st_bf16(v)); }
// kf_row_op != 0: what the top-k ranks, before the epilogue's rounding.
static inline float kf_map(float v) { return v; }
static inline kf_out_t kf_store(float v) { return kf_st_bf16(v); }

// row_softmax_cpu_part.h: what one thread does with a part [lo, hi) of a row (the whole row when rows are dealt to
// threads; a segment when split=auto or within splits a row across the team): its statistics (max and sum of
// exponentials), the combination of several parts' statistics (log-sum-exp), and its results given the row's.

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

// row_softmax_cpu_topk.h: top-k of a row's results (values rounded by the epilogue, ties: the lower index first, NaN
// largest, as in torch). A part ranks its own results; a row split across threads merges its parts' lists in the
// parts' order, which keeps that order: a part's indices all precede the next part's.

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

// row_softmax_cpu.h: the fixed code of row_softmax_cpu, emitted after the variant's part (row_softmax_cpu.cpp: its
// types, constants and knob-selected macros, the fused prologue kf_pro and epilogue kf_epi) and what a thread does
// with a part of a row (row_softmax_cpu_part.h, row_softmax_cpu_topk.h). Rows are dealt whole to OpenMP threads, or
// (split) each row is split across the team: every thread reduces its segment, the team combines the segments'
// statistics, and every thread writes its segment's results.

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
