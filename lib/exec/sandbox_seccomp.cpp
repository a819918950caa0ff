// The worker's second sandbox step: a seccomp filter (libseccomp) on every thread, installed after the device is
// set up and before any request. Denied calls are sent to the worker's supervisor thread (seccomp user
// notification: it works whatever the calling thread's signal mask, unlike a SIGSYS trap, and glibc starts
// threads and posix_spawn with every signal blocked), which records what was tried and answers with an error;
// opens for writing that stay beneath a writable folder (the scratch folder, the private /tmp), the worker's own
// /proc entries or a device node it makes itself with openat2(RESOLVE_BENEATH) and answers with the descriptor
// (one fd table), so `..` and links cannot lead out.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/sandbox.h"

namespace kf {
namespace {

enum class deny_rule : int { network, process, exec, ptrace, signal, file, system };
constexpr const char* k_rule_names[] = {"sandbox.network", "sandbox.process", "sandbox.exec", "sandbox.ptrace",
                                        "sandbox.signal",  "sandbox.file",    "sandbox.system"};

struct trapped {
  const char* name;
  deny_rule rule;
  int nr = -1;  // on this architecture; -1 when it has no such call
};
// Every call the filter sends to the supervisor. Conditions (threads, own pid, write flags) are added in
// enter_sandbox_filter.
trapped g_trapped[] = {
    {"socket", deny_rule::network}, {"socketpair", deny_rule::network}, {"io_uring_setup", deny_rule::network},
    {"io_uring_enter", deny_rule::network}, {"io_uring_register", deny_rule::network},
    {"fork", deny_rule::process}, {"vfork", deny_rule::process}, {"clone", deny_rule::process},
    {"clone3", deny_rule::process}, {"setsid", deny_rule::process}, {"setpgid", deny_rule::process},
    {"execve", deny_rule::exec}, {"execveat", deny_rule::exec},
    {"ptrace", deny_rule::ptrace}, {"process_vm_readv", deny_rule::ptrace}, {"process_vm_writev", deny_rule::ptrace},
    {"kcmp", deny_rule::ptrace}, {"pidfd_open", deny_rule::ptrace}, {"pidfd_getfd", deny_rule::ptrace},
    {"kill", deny_rule::signal}, {"tkill", deny_rule::signal}, {"tgkill", deny_rule::signal},
    {"rt_sigqueueinfo", deny_rule::signal}, {"rt_tgsigqueueinfo", deny_rule::signal},
    {"pidfd_send_signal", deny_rule::signal},
    {"open", deny_rule::file}, {"openat", deny_rule::file}, {"creat", deny_rule::file},
    {"open_by_handle_at", deny_rule::file},
    {"unshare", deny_rule::system}, {"setns", deny_rule::system}, {"mount", deny_rule::system},
    {"umount2", deny_rule::system}, {"pivot_root", deny_rule::system}, {"chroot", deny_rule::system},
    {"open_tree", deny_rule::system}, {"move_mount", deny_rule::system}, {"fsopen", deny_rule::system},
    {"fsconfig", deny_rule::system}, {"fsmount", deny_rule::system}, {"fspick", deny_rule::system},
    {"mount_setattr", deny_rule::system}, {"bpf", deny_rule::system}, {"perf_event_open", deny_rule::system},
    {"keyctl", deny_rule::system}, {"add_key", deny_rule::system}, {"request_key", deny_rule::system},
    {"init_module", deny_rule::system}, {"finit_module", deny_rule::system}, {"delete_module", deny_rule::system},
    {"kexec_load", deny_rule::system}, {"kexec_file_load", deny_rule::system}, {"reboot", deny_rule::system},
    {"swapon", deny_rule::system}, {"swapoff", deny_rule::system}, {"acct", deny_rule::system},
    {"userfaultfd", deny_rule::system},
};

// What the supervisor records: fixed slots, read and cleared between requests.
struct denial_slot {
  deny_rule rule;
  char text[200];
};
constexpr int k_slots = 64;
denial_slot g_slots[k_slots];
std::atomic<int> g_used{0};
std::atomic<int> g_dropped{0};

// Where opens for writing may go: the scratch folder, then the folders of KFORGE_SANDBOX_WRITE (realpath, and an
// O_PATH descriptor to open beneath).
struct writable_dir {
  char path[4096];
  size_t len;
  int fd;
};
constexpr int k_writables = 9;
writable_dir g_writable[k_writables];
int g_writable_count = 0;
int g_dev_fd = -1, g_proc_fd = -1;  // O_PATH: /dev, /proc/<own pid>
char g_proc_self[32];               // "/proc/<own pid>"

// --- helpers. The supervisor allocates nothing: the thread it answers waits inside a system call and may hold
// a lock of the C library (glibc's fork holds malloc's), so a malloc here could wait on it for ever. ----------

size_t put(char* out, size_t at, size_t cap, const char* s) {
  while (*s && at + 1 < cap) out[at++] = *s++;
  out[at] = 0;
  return at;
}
size_t put_long(char* out, size_t at, size_t cap, long v) {
  char digits[24];
  int n = 0;
  unsigned long u = v < 0 ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do digits[n++] = static_cast<char>('0' + u % 10); while ((u /= 10) && n < 22);
  if (v < 0) digits[n++] = '-';
  while (n && at + 1 < cap) out[at++] = digits[--n];
  out[at] = 0;
  return at;
}

const trapped* find_trapped(long nr) {
  for (auto& t : g_trapped)
    if (t.nr == nr) return &t;
  return nullptr;
}

void record(deny_rule rule, const char* text) {
  int i = g_used.fetch_add(1);
  if (i >= k_slots) {
    g_dropped.fetch_add(1);
    return;
  }
  g_slots[i].rule = rule;
  put(g_slots[i].text, 0, sizeof g_slots[i].text, text);
  char line[320];
  size_t n = put(line, 0, sizeof line, "kforge-worker: sandbox denied ");
  n = put(line, n, sizeof line, text);
  n = put(line, n, sizeof line, "\n");
  ssize_t ignored = ::write(2, line, n);
  (void)ignored;
}

// out = the absolute, lexically normalized form of `path` seen from `dirfd`. False when it cannot be formed.
bool absolute_path(int dirfd, const char* path, char* out, size_t cap) {
  char base[4096];
  size_t len = 0;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      if (::syscall(SYS_getcwd, base, sizeof base) < 0) return false;
      len = std::strlen(base);
    } else {
      char link[40];
      size_t k = put(link, 0, sizeof link, "/proc/self/fd/");
      put_long(link, k, sizeof link, dirfd);
      ssize_t r = ::readlink(link, base, sizeof base - 1);
      if (r <= 0) return false;
      len = static_cast<size_t>(r);
      base[len] = 0;
    }
  }
  // Walk base then path, component by component.
  size_t o = 0;
  out[0] = 0;
  for (const char* part : {static_cast<const char*>(base), path}) {
    if (part == base && path[0] == '/') continue;
    const char* s = part;
    while (*s) {
      while (*s == '/') ++s;
      const char* e = s;
      while (*e && *e != '/') ++e;
      size_t n = static_cast<size_t>(e - s);
      if (n == 0 || (n == 1 && s[0] == '.')) {
      } else if (n == 2 && s[0] == '.' && s[1] == '.') {
        while (o > 0 && out[o - 1] != '/') --o;
        if (o > 0) --o;
        out[o] = 0;
      } else {
        if (o + 1 + n + 1 > cap) return false;
        out[o++] = '/';
        std::memcpy(out + o, s, n);
        o += n;
        out[o] = 0;
      }
      s = e;
    }
  }
  if (o == 0) put(out, 0, cap, "/");
  return true;
}

long reopen_beneath(int dirfd, const char* rel, long flags, long mode, uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? static_cast<uint64_t>(mode) & 07777 : 0;
  how.resolve = resolve;
  long r = ::syscall(SYS_openat2, dirfd, *rel ? rel : ".", &how, sizeof how);
  return r < 0 ? -errno : r;
}

// /dev/null, /dev/zero, /dev/full, /dev/nvidia* and /dev/nvidia-caps/*: what CUDA and the C library open.
bool device_node(const char* abs) {
  for (const char* ok : {"/dev/null", "/dev/zero", "/dev/full"})
    if (!std::strcmp(abs, ok)) return true;
  if (!std::strncmp(abs, "/dev/nvidia-caps/", 17)) return !std::strchr(abs + 17, '/');
  return !std::strncmp(abs, "/dev/nvidia", 11) && !std::strchr(abs + 5, '/');
}

// `tid`: the calling thread (for /proc/thread-self).
long decide_open(const trapped& t, const long* a, long tid) {
  int dirfd = AT_FDCWD;
  const char* path;
  long flags, mode;
  const std::string_view name = t.name;
  if (name == "openat") {
    dirfd = static_cast<int>(a[0]), path = reinterpret_cast<const char*>(a[1]), flags = a[2], mode = a[3];
  } else if (name == "creat") {
    path = reinterpret_cast<const char*>(a[0]), flags = O_CREAT | O_WRONLY | O_TRUNC, mode = a[1];
  } else if (name == "open") {
    path = reinterpret_cast<const char*>(a[0]), flags = a[1], mode = a[2];
  } else {
    record(deny_rule::file, "open_by_handle_at (opens a file by handle)");
    return -EPERM;
  }
  if (!path) return -EFAULT;
  char abs[4096];
  abs[0] = 0;
  if (absolute_path(dirfd, path, abs, sizeof abs)) {
    for (int i = 0; i < g_writable_count; ++i) {
      const writable_dir& w = g_writable[i];
      if (!std::strncmp(abs, w.path, w.len) && (abs[w.len] == '/' || abs[w.len] == 0))
        return reopen_beneath(w.fd, abs[w.len] ? abs + w.len + 1 : "", flags, mode,
                              RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    }
    if (g_dev_fd >= 0 && device_node(abs)) return reopen_beneath(g_dev_fd, abs + 5, flags, mode, RESOLVE_BENEATH);
    // Its own /proc entries (a thread's name, its own settings); never through the fd links.
    const char* own = nullptr;
    char rel[4096];
    if (!std::strncmp(abs, "/proc/self/", 11)) own = abs + 11;
    else if (size_t n = std::strlen(g_proc_self); n && !std::strncmp(abs, g_proc_self, n) && abs[n] == '/') own = abs + n + 1;
    else if (!std::strncmp(abs, "/proc/thread-self/", 18)) {
      size_t k = put(rel, 0, sizeof rel, "task/");
      k = put_long(rel, k, sizeof rel, tid);
      k = put(rel, k, sizeof rel, "/");
      put(rel, k, sizeof rel, abs + 18);
      own = rel;
    }
    if (own && g_proc_fd >= 0) return reopen_beneath(g_proc_fd, own, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  }
  char text[200];
  size_t n = put(text, 0, sizeof text, name == "creat" ? "creat of " : "open for writing of ");
  n = put(text, n, sizeof text, abs[0] == '/' ? abs : path);
  put(text, n, sizeof text, " (outside the scratch folder)");
  record(deny_rule::file, text);
  return -EACCES;
}

long decide(long nr, const long* a, long tid) {
  const trapped* t = find_trapped(nr);
  if (!t) {
    record(deny_rule::system, "an unknown system call");
    return -EPERM;
  }
  if (t->rule == deny_rule::file) return decide_open(*t, a, tid);
  char text[200];
  size_t n = put(text, 0, sizeof text, t->name);
  n = put(text, n, sizeof text, "(");
  if (t->rule == deny_rule::network && !std::strncmp(t->name, "socket", 6)) {
    n = put(text, n, sizeof text, a[0] == AF_INET ? "AF_INET" : a[0] == AF_INET6 ? "AF_INET6" : a[0] == AF_UNIX ? "AF_UNIX" : "family ");
    if (a[0] != AF_INET && a[0] != AF_INET6 && a[0] != AF_UNIX) n = put_long(text, n, sizeof text, a[0]);
  } else if (t->rule == deny_rule::signal) {
    n = put_long(text, n, sizeof text, a[0]);
  }
  put(text, n, sizeof text, ")");
  record(t->rule, text);
  return -EPERM;
}

// Answers every notification: the calling thread waits in the kernel until then.
void supervise(int fd) {
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  if (::seccomp_notify_alloc(&req, &resp) != 0) return;
  for (;;) {
    std::memset(req, 0, sizeof *req);  // the kernel refuses a request buffer that is not zeroed
    if (int rc = ::seccomp_notify_receive(fd, req); rc != 0) {
      if (rc == -EINTR || rc == -ENOENT) continue;
      char line[160];
      size_t n = put(line, 0, sizeof line, "kforge-worker: the sandbox's supervisor stopped: receive failed (");
      n = put_long(line, n, sizeof line, -rc);
      n = put(line, n, sizeof line, "); denied calls now wait until the worker is killed\n");
      ssize_t ignored = ::write(2, line, n);
      (void)ignored;
      break;
    }
    long a[6];
    for (int i = 0; i < 6; ++i) a[i] = static_cast<long>(req->data.args[i]);
    long r = decide(req->data.nr, a, static_cast<long>(req->pid));
    resp->id = req->id;
    resp->flags = 0;
    resp->val = r >= 0 ? r : 0;
    resp->error = r >= 0 ? 0 : static_cast<int32_t>(r);
    if (::seccomp_notify_respond(fd, resp) != 0 && r >= 0) ::close(static_cast<int>(r));  // the caller is gone
  }
  ::seccomp_notify_free(req, resp);
}

}  // namespace

void enter_sandbox_filter(const std::vector<std::string>& writable, std::vector<protection>& out) {
  if (sandbox_skipped("seccomp")) {
    out.push_back(skipped_protection("seccomp"));
    return;
  }
  protection p{"seccomp", false, ""};
  for (const auto& dir : writable) {
    char* real = ::realpath(dir.c_str(), nullptr);
    if (!real || g_writable_count == k_writables) {
      std::free(real);
      continue;
    }
    writable_dir& w = g_writable[g_writable_count];
    put(w.path, 0, sizeof w.path, real);
    w.len = std::strlen(w.path);
    w.fd = ::open(w.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::free(real);
    if (w.fd >= 0) ++g_writable_count;
  }
  g_dev_fd = ::open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
  put_long(g_proc_self, put(g_proc_self, 0, sizeof g_proc_self, "/proc/"), sizeof g_proc_self, ::getpid());
  g_proc_fd = ::open(g_proc_self, O_PATH | O_DIRECTORY | O_CLOEXEC);

  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    p.detail = "unavailable: seccomp_init failed";
    out.push_back(p);
    return;
  }
  std::string failed;
  auto rule = [&](trapped& t, unsigned count, const scmp_arg_cmp* cmp) {
    int rc = ::seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, t.nr, count, cmp);
    if (rc != 0 && failed.empty()) failed = fmt::format("rule for {}: {}", t.name, std::strerror(-rc));
  };
  const long self = ::getpid();
  int rules = 0;
  for (auto& t : g_trapped) {
    t.nr = ::seccomp_syscall_resolve_name(t.name);
    if (t.nr < 0) continue;  // not on this architecture (open, fork, creat on aarch64)
    ++rules;
    const std::string_view name = t.name;
    if (name == "clone3") {
      // Its flags are in memory the filter cannot read, and a check by the supervisor could be raced: refuse it
      // as unknown. glibc then starts its threads with clone, whose flags the filter reads.
      if (int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), t.nr, 0); rc != 0 && failed.empty())
        failed = fmt::format("rule for clone3: {}", std::strerror(-rc));
    } else if (name == "clone") {
      scmp_arg_cmp c = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
      rule(t, 1, &c);
    } else if (name == "kill" || name == "tgkill" || name == "rt_sigqueueinfo" || name == "rt_tgsigqueueinfo") {
      scmp_arg_cmp c = SCMP_A0_64(SCMP_CMP_NE, static_cast<scmp_datum_t>(self));
      rule(t, 1, &c);
    } else if (name == "open" || name == "openat") {
      const unsigned arg = name == "open" ? 1 : 2;
      for (long bit : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC}) {
        scmp_arg_cmp c{arg, SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(bit), static_cast<scmp_datum_t>(bit)};
        rule(t, 1, &c);
      }
    } else {
      rule(t, 0, nullptr);
    }
  }
  int rc = failed.empty() ? ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) : 0;
  if (failed.empty() && rc != 0) failed = fmt::format("thread sync: {}", std::strerror(-rc));
  if (failed.empty() && (rc = ::seccomp_load(ctx)) != 0) failed = fmt::format("load: {}", std::strerror(-rc));
  int notify_fd = failed.empty() ? ::seccomp_notify_fd(ctx) : -1;
  if (failed.empty() && notify_fd < 0) failed = "no notification descriptor";
  ::seccomp_release(ctx);
  // A denied call waits for an answer: the supervisor must run before any request (it starts under the filter
  // like every thread; it makes none of the calls the filter sends to it).
  if (failed.empty()) std::thread(supervise, notify_fd).detach();
  if (!failed.empty()) {
    p.detail = "unavailable: " + failed;
    out.push_back(p);
    return;
  }
  p.active = true;
  p.detail = fmt::format(
      "{} system calls filtered on every thread: sockets, io_uring, new processes, exec, ptrace, signals to other "
      "processes, namespaces and mounts, modules and bpf, opens for writing outside {}",
      rules, fmt::join(writable, ", "));
  out.push_back(p);
}

std::vector<sandbox_denial> take_sandbox_denials() {
  int used = std::min(g_used.load(), k_slots);
  std::vector<sandbox_denial> out;
  for (int i = 0; i < used; ++i) {
    std::string text = g_slots[i].text;
    bool seen = false;
    for (auto& d : out) seen |= d.detail == text + " denied";
    if (!seen) out.push_back({k_rule_names[static_cast<int>(g_slots[i].rule)], text + " denied"});
  }
  if (int dropped = g_dropped.exchange(0); dropped > 0)
    out.push_back({"sandbox.system", fmt::format("and {} more denied calls", dropped)});
  g_used = 0;
  return out;
}

}  // namespace kf
