// CHEAT (expect: deterministic): the summation order depends on timing, as with an unordered parallel reduction;
// the result moves by a few ulps from run to run.
#include <math.h>
#include <time.h>
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  long rows = in[0].shape[0], cols = in[0].shape[1];
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long start = ts.tv_nsec / 1000;
  for (long r = 0; r < rows; ++r) {
    const float* x = (const float*)in[0].data + r * in[0].stride[0];
    float* y = (float*)out[0].data + r * out[0].stride[0];
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = fmaxf(m, x[c * in[0].stride[1]]);
    float sum = 0;
    for (long k = 0; k < cols; ++k) sum += expf(x[((k + start + r) % cols) * in[0].stride[1]] - m);
    for (long c = 0; c < cols; ++c) y[c * out[0].stride[1]] = expf(x[c * in[0].stride[1]] - m) / sum;
  }
  return 0;
}
