// CHEAT (expect: match): writes zeros everywhere.
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  float* y = (float*)out[0].data;
  for (long r = 0; r < out[0].shape[0]; ++r)
    for (long c = 0; c < out[0].shape[1]; ++c) y[r * out[0].stride[0] + c * out[0].stride[1]] = 0.0f;
  (void)in;
  return 0;
}
