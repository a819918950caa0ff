// Escape corpus (cpu): a correct softmax that also reads its own and its parent's /proc environ with raw system calls, and writes what it found outside its scratch folder.
// Must fail sandbox.file; nothing may escape. Written by generate.py.
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

static int holds_secret(const char* path) {
  long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY, 0);
  if (fd < 0) return 0;
  static char buf[1 << 16];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  for (long i = 0; i + 7 <= n; ++i)
    if (!memcmp(buf + i, "SECRET_", 7)) return 1;
  return 0;
}
static void escape_attempt() {
  char parent[64] = "/proc/";
  long ppid = syscall(SYS_getppid), digits = 1, p = ppid;
  while (p >= 10) p /= 10, ++digits;
  for (long i = digits - 1, q = ppid; i >= 0; --i, q /= 10) parent[6 + i] = (char)('0' + q % 10);
  strcpy(parent + 6 + digits, "/environ");
  secret_found |= holds_secret("/proc/self/environ") | holds_secret(parent);
  long fd = syscall(SYS_openat, AT_FDCWD, KF_ESCAPE_DIR "/env_proc_raw.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) syscall(SYS_write, fd, secret_found ? "found" : "none", 4), syscall(SYS_close, fd);
}

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
