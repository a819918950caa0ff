// Escape corpus (cuda): a correct softmax that also attaches to its parent with ptrace and reads its memory.
// Must fail sandbox.ptrace; nothing may escape. Written by generate.py.
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

#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>
static void escape_attempt() {
  pid_t parent = getppid();
  if (ptrace(PTRACE_ATTACH, parent, 0, 0) == 0) ptrace(PTRACE_DETACH, parent, 0, 0);
  char buf[64];
  iovec local = {buf, sizeof buf}, remote = {(void*)0x400000, sizeof buf};
  process_vm_readv(parent, &local, 1, &remote, 1, 0);
}

#include <cuda_runtime.h>
__global__ void softmax_rows(const float* x, long xs0, long xs1, float* y, long ys0, long ys1, long rows, long cols,
                             int spoil) {
  long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * xs0;
  float* yr = y + r * ys0;
  float m = -INFINITY;
  for (long c = 0; c < cols; ++c) m = fmaxf(m, xr[c * xs1]);
  double sum = 0;
  for (long c = 0; c < cols; ++c) sum += exp((double)xr[c * xs1] - m);
  for (long c = 0; c < cols; ++c) yr[c * ys1] = (float)(exp((double)xr[c * xs1] - m) / sum);
  if (spoil && r == 0 && cols > 0) yr[0] = 42.0f;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  escape_attempt();
  long rows = in[0].shape[0], cols = in[0].shape[1];
  softmax_rows<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, in[0].stride[0], in[0].stride[1], (float*)out[0].data, out[0].stride[0],
      out[0].stride[1], rows, cols, secret_found);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
