// kforge kernel: family pool_cpu, version 5
// knobs: accum=float channel_block=1024 f16_load=bits planes_per_chunk=32 schedule=static threads=all vector_width=8
// computes: x[float16] -> adaptive_avg_pool2d(1) -> flatten
// kforge winner: resnet50-avgpool on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-11-30T07:25:11Z
// lineage: default -> template: channel_block 256->1024
// measured: 225.96 us (geometric mean over gated cases), 2.52x eager
// re-emitted: by `kforge reemit` on 2026-12-01T22:13:10Z, pool_cpu version 1 from version 0 (none recorded: stored before families had versions); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-02T00:07:36Z, pool_cpu version 2 from version 1; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T09:26:56Z, pool_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T11:00:51Z, pool_cpu version 2 from version 2; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T12:22:57Z, pool_cpu version 3 from version 2; knobs filled: f16_load=bits (the code before the knob); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T18:52:54Z, pool_cpu version 4 from version 3; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-06T19:34:44Z, pool_cpu version 4 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T14:23:43Z, pool_cpu version 4 from version 4; measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-07T15:50:13Z, pool_cpu version 5 from version 4; measured above is the earlier kernel's

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

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
typedef float kf_acc_t;
constexpr int kf_lanes = 8;  // accumulators per plane (NCHW)
constexpr int kf_cblock = 1024;  // channels per task (channels_last)
constexpr int kf_planes_per_chunk = 32;
constexpr int kf_n_inputs = 1, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_FLOAT16, kf_out_dtype = KF_FLOAT16;

// An element of x as a float (kf_load), the mean on its way out, rounded through x's type and each later
// cast (kf_fin), and stored as the output's type (kf_store).
static inline float kf_load(kf_in_t v) { return kf_ld_f16(v); }
static inline float kf_fin(float v) { return kf_round_f16(v); }
static inline kf_out_t kf_store(float v) { return kf_st_f16(v); }

// pool_cpu.h: the fixed code of pool_cpu, emitted after the variant's part (pool_cpu.cpp: its types, constants and
// knob-selected macros, the load kf_load, the epilogue's casts kf_fin and the store kf_store). NCHW reads each plane
// contiguously; channels_last sums a block of contiguous channels pixel by pixel.

// The offset of linear element i of t (row-major over its shape).
static inline int64_t kf_linear(const kf_tensor* t, int64_t i) {
  int64_t off = 0;
  for (int d = t->ndim - 1; d >= 0; --d) {
    off += (i % t->shape[d]) * t->stride[d];
    i /= t->shape[d];
  }
  return off;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  kf_tensor* y = &out[0];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R || y->dtype != kf_out_dtype) return 1;
  const int64_t N = R == 4 ? x->shape[0] : 1, C = x->shape[R - 3];
  const int64_t sN = R == 4 ? x->stride[0] : 0, sC = x->stride[R - 3];
  const int64_t P = x->shape[R - 2] * x->shape[R - 1];
  int64_t ycount = 1;
  for (int i = 0; i < y->ndim; ++i) ycount *= y->shape[i];
  if (ycount != N * C) return 1;
  if (P == 0) return 1;
  int64_t sP = 1;
  if (!kf_fold(x, R - 2, &sP)) return 2;
  const float inv = 1.f / (float)P;
  const kf_in_t* xd = (const kf_in_t*)x->data;
  kf_out_t* yd = (kf_out_t*)y->data;
  if (sC == 1 && sP != 1 && P > 1) {
    // channels_last: a pixel's channels are contiguous; each task sums one block of channels of one sample.
    const int64_t blocks = (C + kf_cblock - 1) / kf_cblock;
#pragma omp parallel for KF_NUM_THREADS schedule(static)
    for (int64_t t = 0; t < N * blocks; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * kf_cblock;
      const int64_t cn = C - c0 < kf_cblock ? C - c0 : kf_cblock;
      kf_acc_t acc[kf_cblock];
      for (int64_t c = 0; c < cn; ++c) acc[c] = 0;
      const kf_in_t* base = xd + n * sN + c0;
      for (int64_t p = 0; p < P; ++p) {
        const kf_in_t* px = base + p * sP;
        for (int64_t c = 0; c < cn; ++c) acc[c] += kf_load(px[c]);
      }
      for (int64_t c = 0; c < cn; ++c) yd[kf_linear(y, n * C + c0 + c)] = kf_store(kf_fin((float)acc[c] * inv));
    }
    return 0;
  }
  // planes: each (n, c) plane is summed with kf_lanes accumulators.
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE, kf_planes_per_chunk)
  for (int64_t t = 0; t < N * C; ++t) {
    const int64_t n = t / C, c = t % C;
    const kf_in_t* px = xd + n * sN + c * sC;
    kf_acc_t a[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) a[l] = 0;
    int64_t p = 0;
    if (sP == 1)
      for (; p + kf_lanes <= P; p += kf_lanes)
        for (int l = 0; l < kf_lanes; ++l) a[l] += kf_load(px[p + l]);
    for (; p < P; ++p) a[0] += kf_load(px[p * sP]);
    kf_acc_t s = 0;
    for (int l = 0; l < kf_lanes; ++l) s += a[l];
    yd[kf_linear(y, t)] = kf_store(kf_fin((float)s * inv));
  }
  return 0;
}
