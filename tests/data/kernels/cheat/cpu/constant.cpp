// CHEAT (expect: match): a plausible constant, 1/C everywhere (rows do sum to one).
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  float* y = (float*)out[0].data;
  long cols = in[0].shape[1];
  for (long r = 0; r < out[0].shape[0]; ++r)
    for (long c = 0; c < cols; ++c) y[r * out[0].stride[0] + c * out[0].stride[1]] = 1.0f / (float)cols;
  return 0;
}
