// kforge kernel: family row_softmax_cpu, version 2
// knobs: cache_row=1 exp_once=1 math=poly passes=two rows_per_chunk=4 schedule=static threads=all unroll=1 vector_width=8
// computes: x[bfloat16] -> softcap(50) -> softmax(float32) -> cast(bfloat16)
// kforge winner: gemma-attn-softmax on cpu-x86-64
// found: by `kforge search` (template proposer) on 2026-11-30T06:57:23Z
// lineage: default -> template: rows_per_chunk 16->4
// measured: 29863.38 us (geometric mean over gated cases), 9.92x eager
// re-emitted: by `kforge reemit` on 2026-12-01T22:13:10Z, row_softmax_cpu version 1 from version 0 (none recorded: stored before families had versions); measured above is the earlier kernel's
// re-emitted: by `kforge reemit` on 2026-12-02T00:07:36Z, row_softmax_cpu version 2 from version 1; measured above is the earlier kernel's

// cpu_prelude.h: what every cpu family's kernel opens with, after its header (cpu_emit.cpp): the standard includes,
// the float16 / bfloat16 conversions (bit operations, no library) and an exp and a tanh that vectorize.
#include "kf_abi.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

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
constexpr bool kf_online = false, kf_cache_row = true;
constexpr bool kf_keep_exp = true;  // exp_once with two passes and no log: the sum pass keeps the exponentials
constexpr bool kf_log = false;
constexpr int kf_k = 0;  // top-k (0: none)
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
static inline kf_out_t kf_store(float v) { return kf_st_bf16(v); }

// row_softmax_cpu.h: the fixed code of row_softmax_cpu, emitted after the variant's part (row_softmax_cpu.cpp: its
// types, constants and knob-selected macros, the fused prologue kf_pro and epilogue kf_epi). Rows are OpenMP tasks; a
// row is read for its max, then for its sum of exponentials (two passes) or for both at once (online), then written,
// or ranked for top-k.

static inline bool kf_gt(float a, float b) { return a > b || (a != a && b == b); }  // NaN is largest, as in torch

// The offset of the row at multi-index idx (over x's leading dims) in t, right-aligned to x's rank;
// size-1 dims of t broadcast.
static inline int64_t kf_row_off(const kf_tensor* t, const int64_t* idx, int rank) {
  int64_t off = 0;
  int lead = rank - t->ndim;
  for (int i = 0; i + 1 < t->ndim; ++i)
    if (t->shape[i] != 1) off += idx[i + lead] * t->stride[i];
  return off;
}

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

// x[j] of the row as the reduction reads it: from the row scratch where cache_row staged it, else through the prologue.
#define KF_X(j) (kf_cache_row ? sc[j] : kf_pro(xr, mrow, mstep, j))

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (int rc = kf_check(in, n_in, out, n_out)) return rc;
  const kf_tensor* x = &in[kf_x_input];
  const int R = kf_rank;
  const int64_t L = x->shape[R - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < R; ++i) rows *= x->shape[i];
  if (rows == 0 || L == 0) return 0;
#pragma omp parallel KF_NUM_THREADS
  {
    std::vector<float> sc(kf_cache_row || kf_keep_exp || kf_k > 0 ? L : 0);
    std::vector<float> tv(kf_k > 0 ? kf_k : 1);
    std::vector<int64_t> ti(kf_k > 0 ? kf_k : 1);
#pragma omp for schedule(KF_SCHEDULE, kf_rows_per_chunk)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t idx[KF_MAX_DIMS] = {0};
      int64_t rest = r;
      for (int i = R - 2; i >= 0; --i) {
        idx[i] = rest % x->shape[i];
        rest /= x->shape[i];
      }
      const kf_in_t* xr = (const kf_in_t*)x->data + kf_row_off(x, idx, R);
      // Each mask's row and its step along the row (0: one value for the whole row).
      const void* mrow[kf_n_masks > 0 ? kf_n_masks : 1];
      int64_t mstep[kf_n_masks > 0 ? kf_n_masks : 1];
      for (int k = 0; k < kf_n_masks; ++k) {
        const kf_tensor* mt = &in[kf_mask_input[k]];
        mrow[k] = (const char*)mt->data + kf_row_off(mt, idx, R) * kf_mask_bytes[k];
        mstep[k] = mt->ndim > 0 && mt->shape[mt->ndim - 1] > 1 ? 1 : 0;
      }
      kf_out_t* orow = (kf_out_t*)out[0].data + kf_row_off(&out[0], idx, R);
      if constexpr (kf_cache_row)
        for (int64_t j = 0; j < L; ++j) sc[j] = kf_pro(xr, mrow, mstep, j);
      float m = -INFINITY, s = 0.f;
      if constexpr (kf_online) {
        // Online softmax: running max and rescaled sum per lane in one read, then the lanes are combined.
        float mx[kf_lanes], sm[kf_lanes];
        for (int l = 0; l < kf_lanes; ++l) {
          mx[l] = -INFINITY;
          sm[l] = 0.f;
        }
        int64_t j = 0;
        for (; j + kf_lanes <= L; j += kf_lanes)
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
        for (; j < L; ++j) {
          float v = KF_X(j);
          float mn = v > m ? v : m;
          s = (m == -INFINITY ? 0.f : s * KF_EXP(m - mn)) + (v == -INFINITY ? 0.f : KF_EXP(v - mn));
          m = mn;
        }
      } else {
        // Two reads of the row: the max (lane-wise, then combined), then the sum of exponentials. With exp_once=1 the
        // sum pass keeps the exponentials in the row scratch and the write pass only scales (one exp per element).
        float mx[kf_lanes], sm[kf_lanes];
        for (int l = 0; l < kf_lanes; ++l) {
          mx[l] = -INFINITY;
          sm[l] = 0.f;
        }
        int64_t j = 0;
        for (; j + kf_lanes <= L; j += kf_lanes)
          for (int l = 0; l < kf_lanes; ++l) {
            float v = KF_X(j + l);
            mx[l] = v > mx[l] ? v : mx[l];
          }
        for (int l = 0; l < kf_lanes; ++l) m = mx[l] > m ? mx[l] : m;
        for (; j < L; ++j) {
          float v = KF_X(j);
          m = v > m ? v : m;
        }
        if constexpr (kf_keep_exp) {
          for (j = 0; j + kf_lanes <= L; j += kf_lanes)
            for (int l = 0; l < kf_lanes; ++l) {
              float e = KF_EXP(KF_X(j + l) - m);
              sc[j + l] = e;
              sm[l] += e;
            }
          for (int l = 0; l < kf_lanes; ++l) s += sm[l];
          for (; j < L; ++j) {
            float e = KF_EXP(KF_X(j) - m);
            sc[j] = e;
            s += e;
          }
        } else {
          for (j = 0; j + kf_lanes <= L; j += kf_lanes)
            for (int l = 0; l < kf_lanes; ++l) sm[l] += KF_EXP(KF_X(j + l) - m);
          for (int l = 0; l < kf_lanes; ++l) s += sm[l];
          for (; j < L; ++j) s += KF_EXP(KF_X(j) - m);
        }
      }
      if constexpr (kf_k > 0) {
        // Top-k: the row's results go to scratch, then an insertion into the k best (ties: the lower index first).
        const float ls = logf(s), inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j)
          sc[j] = kf_epi(kf_log ? (KF_X(j) - m) - ls : (kf_keep_exp ? sc[j] : KF_EXP(KF_X(j) - m)) * inv);
        int n = 0;
        for (int64_t j = 0; j < L; ++j) {
          float v = sc[j];
          if (n == kf_k && !kf_gt(v, tv[kf_k - 1])) continue;
          int p = n < kf_k ? n++ : kf_k - 1;
          while (p > 0 && kf_gt(v, tv[p - 1])) {
            tv[p] = tv[p - 1];
            ti[p] = ti[p - 1];
            --p;
          }
          tv[p] = v;
          ti[p] = j;
        }
        for (int q = 0; q < kf_k; ++q) orow[q] = kf_store(tv[q]);
        char* ib = (char*)out[1].data;
        const int64_t ioff = kf_row_off(&out[1], idx, R), is = out[1].stride[R - 1];
        for (int q = 0; q < kf_k; ++q) {
          if (out[1].dtype == KF_INT64) ((int64_t*)ib)[ioff + q * is] = ti[q];
          else ((int32_t*)ib)[ioff + q * is] = (int32_t)ti[q];
        }
      } else if constexpr (kf_keep_exp) {
        const float inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j) orow[j] = kf_store(kf_epi(sc[j] * inv));
      } else if (kf_log) {
        // (x - m) - log s: rounding m + log s to float would lose log s next to a large m.
        const float ls = logf(s);
        for (int64_t j = 0; j < L; ++j) orow[j] = kf_store(kf_epi((KF_X(j) - m) - ls));
      } else {
        const float inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j) orow[j] = kf_store(kf_epi(KF_EXP(KF_X(j) - m) * inv));
      }
    }
  }
  return 0;
}
#undef KF_X
