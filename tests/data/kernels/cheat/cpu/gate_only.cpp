// CHEAT (expect: handles_input on the non-gate cases): specialized for the gate case's shape only.
#include "kf_abi.h"
// A correct softmax of one row (this kernel cheats elsewhere).
#include <math.h>
static inline void softmax_row(const float* x, long xs, float* y, long ys, long n) {
  float m = -INFINITY;
  for (long c = 0; c < n; ++c) m = fmaxf(m, x[c * xs]);
  double sum = 0;
  for (long c = 0; c < n; ++c) sum += exp((double)x[c * xs] - m);
  for (long c = 0; c < n; ++c) y[c * ys] = (float)(exp((double)x[c * xs] - m) / sum);
}
static inline void softmax_all(const kf_tensor* in, kf_tensor* out) {
  for (long r = 0; r < in[0].shape[0]; ++r)
    softmax_row((const float*)in[0].data + r * in[0].stride[0], in[0].stride[1],
                (float*)out[0].data + r * out[0].stride[0], out[0].stride[1], in[0].shape[1]);
}
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  if (in[0].shape[0] != 64 || in[0].shape[1] != 128) return 1;
  softmax_all(in, out);
  return 0;
}
