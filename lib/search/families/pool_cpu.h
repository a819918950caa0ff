// pool_cpu.h: the fixed code of pool_cpu, emitted after the variant's part (pool_cpu.cpp: its types, constants and
// knob-selected macros, the load kf_load, the epilogue's casts kf_fin and the store kf_store). NCHW reads each plane
// contiguously; channels_last sums a block of contiguous channels pixel by pixel.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "pool_cpu_stub.h"
#endif  // KF_EMITTED

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
