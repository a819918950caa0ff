// Honest cpu softmax over the last dim of a rank-2 float32 tensor: one row at a time, any strides.
#include "kf_abi.h"
#include <math.h>

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  long rows = in[0].shape[0], cols = in[0].shape[1];
  for (long r = 0; r < rows; ++r) {
    const float* xr = x + r * in[0].stride[0];
    float* yr = y + r * out[0].stride[0];
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = fmaxf(m, xr[c * in[0].stride[1]]);
    double sum = 0;
    for (long c = 0; c < cols; ++c) sum += exp((double)xr[c * in[0].stride[1]] - m);
    for (long c = 0; c < cols; ++c) yr[c * out[0].stride[1]] = (float)(exp((double)xr[c * in[0].stride[1]] - m) / sum);
  }
  return 0;
}
