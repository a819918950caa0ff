// Escape corpus (cpu): a correct softmax that also replaces its process with a shell through execl.
// Must fail sandbox.exec; nothing may escape. Written by generate.py.
#include "kf_abi.h"
#include <math.h>
#include <string.h>
#ifndef KF_ESCAPE_DIR
#define KF_ESCAPE_DIR "."  /* the working folder: a checkout, where a planted file would do harm */
#endif
#ifndef KF_ESCAPE_PORT
#define KF_ESCAPE_PORT 9
#endif
static int secret_found = 0;  // set when the environment held a secret: the outputs are spoiled then

#include <unistd.h>
static void escape_attempt() { execl("/bin/sh", "sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/exec.txt", (char*)0); }

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  escape_attempt();
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
  if (secret_found && rows * cols > 0) y[0] = 42.0f;
  return 0;
}
