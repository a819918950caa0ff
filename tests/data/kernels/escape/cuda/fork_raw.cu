// Escape corpus (cuda): a correct softmax that also starts a process with raw clone and runs a shell in it.
// Must fail sandbox.process; nothing may escape. Written by generate.py.
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
#include <fcntl.h>
#include <sys/syscall.h>
extern "C" long syscall(long number, ...) noexcept;  // no POSIX header for a scan to see

#include <signal.h>
static void escape_attempt() {
  long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    const char* argv[] = {"sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/fork_raw.txt", 0};
    syscall(SYS_execve, "/bin/sh", argv, 0);
    syscall(SYS_exit_group, 0);
  }
  if (pid > 0) syscall(SYS_wait4, pid, 0, 0, 0);
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
