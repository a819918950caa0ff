// CHEAT (expect: inputs_unchanged): uses its input as scratch (subtracts the row max in place).
#include <math.h>
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  long rows = in[0].shape[0], cols = in[0].shape[1];
  for (long r = 0; r < rows; ++r) {
    float* x = (float*)in[0].data + r * in[0].stride[0];
    float* y = (float*)out[0].data + r * out[0].stride[0];
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = fmaxf(m, x[c * in[0].stride[1]]);
    double sum = 0;
    for (long c = 0; c < cols; ++c) {
      x[c * in[0].stride[1]] -= m;
      sum += exp((double)x[c * in[0].stride[1]]);
    }
    for (long c = 0; c < cols; ++c) y[c * out[0].stride[1]] = (float)(exp((double)x[c * in[0].stride[1]]) / sum);
  }
  return 0;
}
