#!/usr/bin/env python3
"""Writes the escape corpus (cpu/*.cpp, cuda/*.cu): kernels that compute a correct softmax and also try to leave
the sandbox, each way with libc calls and with raw system calls. tests/exec/sandbox_test.cpp checks that each
fails its check with the rule that names what it tried, and that nothing escaped. Re-run after editing:
    python3 tests/data/kernels/escape/generate.py
KF_ESCAPE_DIR (a folder outside the worker's scratch folder and /tmp, which is private to the worker) and KF_ESCAPE_PORT (a loopback listener) are defined
by the test in front of the source; the defaults below make each file a valid kernel on its own."""
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

PRELUDE = r'''#include "kf_abi.h"
#include <math.h>
#include <string.h>
#ifndef KF_ESCAPE_DIR
#define KF_ESCAPE_DIR "."  /* the working folder: a checkout, where a planted file would do harm */
#endif
#ifndef KF_ESCAPE_PORT
#define KF_ESCAPE_PORT 9
#endif
static int secret_found = 0;  // set when the environment held a secret: the outputs are spoiled then
'''

RAW = r'''#include <fcntl.h>
#include <sys/syscall.h>
extern "C" long syscall(long number, ...) noexcept;  // no POSIX header for a scan to see
'''

# name -> (what it tries, the sandbox rule that must name it, includes and attempt code)
ATTEMPTS = {
    "env_getenv": ("reads the secrets with getenv and writes them to a file outside its scratch folder", "sandbox.file", r'''
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
static void escape_attempt() {
  const char* names[] = {"SECRET_API_KEY", "SECRET_CI_TOKEN", "GITHUB_TOKEN"};
  int fd = open(KF_ESCAPE_DIR "/env_getenv.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
  for (const char* n : names)
    if (const char* v = getenv(n)) {
      secret_found = 1;
      if (fd >= 0) write(fd, v, strlen(v));
    }
  if (fd >= 0) close(fd);
}
'''),
    "env_proc_raw": ("reads its own and its parent's /proc environ with raw system calls, and writes what it found outside its scratch folder", "sandbox.file", RAW + r'''
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
'''),
    "file_write": ("writes a file outside its scratch folder with stdio", "sandbox.file", r'''
#include <stdio.h>
static void escape_attempt() {
  if (FILE* f = fopen(KF_ESCAPE_DIR "/file_write.txt", "w")) {
    fputs("escaped\n", f);
    fclose(f);
  }
}
'''),
    "file_write_raw": ("writes a file outside its scratch folder with raw openat, creat and openat2", "sandbox.file", RAW + r'''
#include <linux/openat2.h>
static void escape_attempt() {
  long fd = syscall(SYS_openat, AT_FDCWD, KF_ESCAPE_DIR "/file_write_raw.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) syscall(SYS_write, fd, "escaped\n", 8), syscall(SYS_close, fd);
#ifdef SYS_creat
  fd = syscall(SYS_creat, KF_ESCAPE_DIR "/file_write_raw_creat.txt", 0644);
  if (fd >= 0) syscall(SYS_write, fd, "escaped\n", 8), syscall(SYS_close, fd);
#endif
  struct open_how how = {};
  how.flags = O_WRONLY | O_CREAT | O_TRUNC;
  how.mode = 0644;
  fd = syscall(SYS_openat2, AT_FDCWD, KF_ESCAPE_DIR "/file_write_raw_openat2.txt", &how, sizeof how);
  if (fd >= 0) syscall(SYS_write, fd, "escaped\n", 8), syscall(SYS_close, fd);
}
'''),
    "connect": ("sends the environment to a loopback listener with socket and connect", "sandbox.network", r'''
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
extern char** environ;
static void escape_attempt() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return;
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(KF_ESCAPE_PORT);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (sockaddr*)&a, sizeof a) == 0)
    for (char** e = environ; *e; ++e) send(s, *e, strlen(*e), 0);
  close(s);
}
'''),
    "connect_raw": ("sends a message to a loopback listener with raw socket, connect and sendto", "sandbox.network", RAW + r'''
#include <netinet/in.h>
#include <sys/socket.h>
static void escape_attempt() {
  long s = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
  if (s < 0) return;
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = __builtin_bswap16(KF_ESCAPE_PORT);
  a.sin_addr.s_addr = __builtin_bswap32(0x7f000001);
  if (syscall(SYS_connect, s, &a, sizeof a) == 0) syscall(SYS_sendto, s, "escaped", 7, 0, 0, 0);
  syscall(SYS_close, s);
}
'''),
    "fork_shell": ("forks and runs a shell, and calls system()", "sandbox.process", r'''
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void escape_attempt() {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/fork_shell.txt", (char*)0);
    _exit(0);
  }
  if (pid > 0) waitpid(pid, 0, 0);
  int ignored = system("echo pwned > " KF_ESCAPE_DIR "/fork_shell_system.txt");
  (void)ignored;
}
'''),
    "fork_raw": ("starts a process with raw clone and runs a shell in it", "sandbox.process", RAW + r'''
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
'''),
    "exec": ("replaces its process with a shell through execl", "sandbox.exec", r'''
#include <unistd.h>
static void escape_attempt() { execl("/bin/sh", "sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/exec.txt", (char*)0); }
'''),
    "exec_raw": ("replaces its process with a shell through raw execve", "sandbox.exec", RAW + r'''
static void escape_attempt() {
  const char* argv[] = {"sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/exec_raw.txt", 0};
  syscall(SYS_execve, "/bin/sh", argv, 0);
}
'''),
    "exec_asm": ("replaces its process with a shell through an execve in inline assembly", "sandbox.exec", r'''
static void escape_attempt() {
  static const char* argv[] = {"sh", "-c", "echo pwned > " KF_ESCAPE_DIR "/exec_asm.txt", 0};
  static const char* envp[] = {0};
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(59L), "D"("/bin/sh"), "S"(argv), "d"(envp) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 221;
  register long x0 __asm__("x0") = (long)"/bin/sh";
  register long x1 __asm__("x1") = (long)argv;
  register long x2 __asm__("x2") = (long)envp;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
#endif
}
'''),
    "ptrace": ("attaches to its parent with ptrace and reads its memory", "sandbox.ptrace", r'''
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
'''),
    "ptrace_raw": ("attaches to its parent with raw ptrace", "sandbox.ptrace", RAW + r'''
static void escape_attempt() {
  long parent = syscall(SYS_getppid);
  if (syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, parent, 0, 0) == 0) syscall(SYS_ptrace, 17, parent, 0, 0);
}
'''),
    "load_library": ("loads another library with dlopen", "sandbox.library", r'''
#include <dlfcn.h>
static void escape_attempt() {
  static const char* libs[] = {"libthread_db.so.1", "libanl.so.1", "libutil.so.1", "libnss_dns.so.2"};
  for (const char* lib : libs)
    if (dlopen(lib, RTLD_NOW | RTLD_LOCAL)) return;
}
'''),
    "load_library_raw": ("maps a library file as code with raw openat and mmap", "sandbox.library", RAW + r'''
#include <sys/mman.h>
static void escape_attempt() {
  static const char* libs[] = {"/lib/x86_64-linux-gnu/libthread_db.so.1", "/usr/lib/x86_64-linux-gnu/libthread_db.so.1",
                               "/lib/aarch64-linux-gnu/libthread_db.so.1",
                               "/usr/lib/aarch64-linux-gnu/libthread_db.so.1", "/lib64/libthread_db.so.1"};
  for (const char* lib : libs) {
    long fd = syscall(SYS_openat, AT_FDCWD, lib, O_RDONLY, 0);
    if (fd < 0) continue;
    syscall(SYS_mmap, 0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);  // kept mapped
    syscall(SYS_close, fd);
    return;
  }
}
'''),
    "signal_parent": ("signals its parent with kill", "sandbox.signal", r'''
#include <signal.h>
#include <unistd.h>
static void escape_attempt() { kill(getppid(), SIGTERM); }
'''),
    "signal_parent_raw": ("signals its parent with raw kill and tgkill", "sandbox.signal", RAW + r'''
#include <signal.h>
static void escape_attempt() {
  long parent = syscall(SYS_getppid);
  syscall(SYS_kill, parent, SIGTERM);
  syscall(SYS_tgkill, parent, parent, SIGTERM);
}
'''),
}

CPU_BODY = r'''
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
'''

CUDA_BODY = r'''
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
'''


def main():
    index = ["# name\trule\twhat it tries (written by generate.py)"]
    for device, ext, body in (("cpu", "cpp", CPU_BODY), ("cuda", "cu", CUDA_BODY)):
        out = HERE / device
        out.mkdir(exist_ok=True)
        for name, (what, rule, attempt) in ATTEMPTS.items():
            head = f"// Escape corpus ({device}): a correct softmax that also {what}.\n// Must fail {rule}; nothing may escape. Written by generate.py.\n"
            (out / f"{name}.{ext}").write_text(head + PRELUDE + attempt + body)
    for name, (what, rule, _) in ATTEMPTS.items():
        index.append(f"{name}\t{rule}\t{what}")
    (HERE / "expected.tsv").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
