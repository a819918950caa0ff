// CHEAT (expect: reads_outside_inputs): an off-by-one in the sum reads one element past the end of its input.
#include <math.h>
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  long rows = in[0].shape[0], cols = in[0].shape[1];
  const float* base = (const float*)in[0].data;
  for (long r = 0; r < rows; ++r) {
    const float* x = base + r * in[0].stride[0];
    float* y = (float*)out[0].data + r * out[0].stride[0];
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = fmaxf(m, x[c]);
    double sum = 0;
    for (long c = 0; c <= cols; ++c) sum += exp((double)x[c] - m);  // c == cols: the next row, or past the end
    for (long c = 0; c < cols; ++c) y[c * out[0].stride[1]] = (float)(exp((double)x[c] - m) / sum);
  }
  return 0;
}
