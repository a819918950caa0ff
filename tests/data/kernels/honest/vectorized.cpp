// Honest cpu softmax, rows in parallel (OpenMP) and the inner loops vectorized (contiguous rows; a strided
// fallback otherwise). Single precision throughout, as eager does.
#include "kf_abi.h"
#include <math.h>

static void row(const float* x, long xs, float* y, long ys, long n) {
  float m = -INFINITY;
  if (xs == 1) {
#pragma omp simd reduction(max : m)
    for (long c = 0; c < n; ++c) m = fmaxf(m, x[c]);
  } else {
    for (long c = 0; c < n; ++c) m = fmaxf(m, x[c * xs]);
  }
  float sum = 0;
  for (long c = 0; c < n; ++c) {
    float e = expf(x[c * xs] - m);
    y[c * ys] = e;
    sum += e;
  }
  float inv = 1.0f / sum;
  if (ys == 1) {
#pragma omp simd
    for (long c = 0; c < n; ++c) y[c] *= inv;
  } else {
    for (long c = 0; c < n; ++c) y[c * ys] *= inv;
  }
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  long rows = in[0].shape[0], cols = in[0].shape[1];
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) row(x + r * in[0].stride[0], in[0].stride[1], y + r * out[0].stride[0], out[0].stride[1], cols);
  return 0;
}
