// CHEAT (expect: new_inputs): computes once per shape, then replays that first answer from a static.
#include <string.h>
#include <vector>
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
static std::vector<float> g_answer;
static long g_rows = -1, g_cols = -1;
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  long rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows == g_rows && cols == g_cols) {
    memcpy(out[0].data, g_answer.data(), g_answer.size() * sizeof(float));
    return 0;
  }
  softmax_all(in, out);
  g_rows = rows;
  g_cols = cols;
  g_answer.assign((float*)out[0].data, (float*)out[0].data + rows * cols);
  return 0;
}
