// adaptive_pool_cpu.h: the fixed code of adaptive_pool_cpu, emitted after the variant's part (adaptive_pool_cpu.cpp:
// its types, constants and knob-selected macros, the load kf_load, the epilogue's casts kf_fin and the store
// kf_store). Average pooling to an OH x OW output over torch's adaptive windows (kf_fixed 0: OH x OW is kf_oh x
// kf_ow) or avg_pool2d's (kf_fixed 1: kf_kh x kf_kw windows kf_sh, kf_sw apart from -kf_ph, -kf_pw, clipped to x; OH x
// OW follows x's size; kf_max: max_pool2d's largest values); NCHW walks each (n, c) plane, channels_last each output
// position with a block of contiguous channels at a time. y is contiguous [N, C, OH, OW].
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "adaptive_pool_cpu_stub.h"
#endif  // KF_EMITTED

// The output's length along dim d (0: rows, 1: columns) of x's `len`, output i's window there (of n) and a window's
// divisor: pool_window.h's, with this variant's constants.
static inline int64_t kf_out_len(int d, int64_t len) {
  return kf_pool_out_len(kf_fixed, d ? kf_ow : kf_oh, len, d ? kf_kw : kf_kh, d ? kf_sw : kf_sh, d ? kf_pw : kf_ph,
                         kf_ceil);
}
static inline kf_pool_win kf_window(int d, int64_t i, int64_t len, int64_t n) {
  return kf_pool_window(kf_fixed, i, len, n, d ? kf_kw : kf_kh, d ? kf_sw : kf_sh, d ? kf_pw : kf_ph);
}
static inline float kf_divisor_of(kf_pool_win r, kf_pool_win c) {
  return (float)kf_pool_count(r, c, kf_fixed, kf_incl_pad, kf_divisor, kf_max);
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  kf_tensor* y = &out[0];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R || y->dtype != kf_out_dtype) return 1;
  const int64_t N = R == 4 ? x->shape[0] : 1, C = x->shape[R - 3], H = x->shape[R - 2], W = x->shape[R - 1];
  const int64_t sN = R == 4 ? x->stride[0] : 0, sC = x->stride[R - 3], sH = x->stride[R - 2], sW = x->stride[R - 1];
  const int64_t OH = kf_out_len(0, H), OW = kf_out_len(1, W);
  int64_t ycount = 1;
  for (int i = 0; i < y->ndim; ++i) ycount *= y->shape[i];
  if (OH < 1 || OW < 1 || ycount != N * C * OH * OW || !kf_row_major(y) || H == 0 || W == 0) return 1;
  const kf_in_t* xd = (const kf_in_t*)x->data;
  kf_out_t* yd = (kf_out_t*)y->data;
  if (sC == 1 && C > 1) {
    // channels_last: each task is one output position of one sample, its window's pixels summed a block of
    // contiguous channels at a time.
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE)
    for (int64_t t = 0; t < N * OH * OW; ++t) {
      const int64_t n = t / (OH * OW), oi = t / OW % OH, oj = t % OW;
      const kf_pool_win r = kf_window(0, oi, H, OH), q = kf_window(1, oj, W, OW);
      const int64_t h0 = r.lo, h1 = r.hi, w0 = q.lo, w1 = q.hi;
      const float count = kf_divisor_of(r, q);
      for (int64_t c0 = 0; c0 < C; c0 += kf_cblock) {
        const int64_t cn = C - c0 < kf_cblock ? C - c0 : kf_cblock;
        kf_acc_t acc[kf_cblock];
        for (int64_t c = 0; c < cn; ++c) acc[c] = kf_pool_start<kf_acc_t>(kf_max);
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const kf_in_t* px = xd + n * sN + h * sH + w * sW + c0;
            for (int64_t c = 0; c < cn; ++c) acc[c] = kf_pool_step<kf_acc_t>(acc[c], kf_load(px[c]), kf_max);
          }
        for (int64_t c = 0; c < cn; ++c)
          yd[((n * C + c0 + c) * OH + oi) * OW + oj] = kf_store(kf_fin((float)acc[c] / count));
      }
    }
    return 0;
  }
  // planes: each (n, c) plane's OH x OW windows, a row of the window at a time.
#pragma omp parallel for KF_NUM_THREADS schedule(KF_SCHEDULE)
  for (int64_t t = 0; t < N * C; ++t) {
    const int64_t n = t / C, c = t % C;
    const kf_in_t* px = xd + n * sN + c * sC;
    for (int64_t oi = 0; oi < OH; ++oi) {
      const kf_pool_win r = kf_window(0, oi, H, OH);
      for (int64_t oj = 0; oj < OW; ++oj) {
        const kf_pool_win q = kf_window(1, oj, W, OW);
        kf_acc_t s = kf_pool_start<kf_acc_t>(kf_max);
        for (int64_t h = r.lo; h < r.hi; ++h)
          for (int64_t w = q.lo; w < q.hi; ++w) s = kf_pool_step<kf_acc_t>(s, kf_load(px[h * sH + w * sW]), kf_max);
        yd[(t * OH + oi) * OW + oj] = kf_store(kf_fin((float)s / kf_divisor_of(r, q)));
      }
    }
  }
  return 0;
}
