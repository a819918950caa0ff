// The worker's first sandbox step, taken while it has one thread: namespaces (sandbox_namespaces.cpp), then a
// Landlock domain (docs/sandbox.md). Both bind the calling thread and everything it starts later, so every thread the
// worker, CUDA or LibTorch creates afterwards inherits them.
#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/sandbox.h"

namespace kf {
namespace {

// Landlock's ABI (linux/landlock.h), spelled out: the build machine's headers may predate the running kernel.
#ifndef SYS_landlock_create_ruleset
constexpr long SYS_landlock_create_ruleset = 444, SYS_landlock_add_rule = 445, SYS_landlock_restrict_self = 446;
#endif
constexpr uint32_t k_create_ruleset_version = 1u << 0;
constexpr int k_rule_path_beneath = 1;
enum : uint64_t {
  fs_execute = 1ull << 0, fs_write_file = 1ull << 1, fs_read_file = 1ull << 2, fs_read_dir = 1ull << 3,
  fs_remove_dir = 1ull << 4, fs_remove_file = 1ull << 5, fs_make_char = 1ull << 6, fs_make_dir = 1ull << 7,
  fs_make_reg = 1ull << 8, fs_make_sock = 1ull << 9, fs_make_fifo = 1ull << 10, fs_make_block = 1ull << 11,
  fs_make_sym = 1ull << 12, fs_refer = 1ull << 13, fs_truncate = 1ull << 14,
  net_bind_tcp = 1ull << 0, net_connect_tcp = 1ull << 1,
  scope_abstract_unix_socket = 1ull << 0, scope_signal = 1ull << 1,
};
struct ruleset_attr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};
struct __attribute__((packed)) path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

class ruleset {
 public:
  ruleset(int fd, uint64_t handled) : m_fd(fd), m_handled(handled) {}
  ~ruleset() { ::close(m_fd); }
  // Grants `access` beneath `path` (less the directory rights when it is a file). A missing path is skipped.
  void allow(const std::string& path, uint64_t access) {
    int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
      access &= fs_execute | fs_write_file | fs_read_file | fs_truncate;
    path_beneath_attr attr{access & m_handled, fd};
    if (attr.allowed_access && ::syscall(SYS_landlock_add_rule, m_fd, k_rule_path_beneath, &attr, 0) != 0)
      m_failed = fmt::format("add_rule {}: {}", path, std::strerror(errno));
    ::close(fd);
  }
  // Every entry of `dir`, except those `skip` names.
  template <class Skip>
  void allow_entries(const std::string& dir, uint64_t access, Skip skip) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (dirent* e = ::readdir(d)) {
      if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..") || skip(e->d_name)) continue;
      allow(dir + (dir.ends_with('/') ? "" : "/") + e->d_name, access);
    }
    ::closedir(d);
  }
  int fd() const { return m_fd; }
  const std::string& failed() const { return m_failed; }

 private:
  int m_fd;
  uint64_t m_handled;
  std::string m_failed;
};

protection enter_landlock(const std::vector<std::string>& writable) {
  protection p{"landlock", false, ""};
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, k_create_ruleset_version);
  if (abi < 1) {
    p.detail = fmt::format("unavailable: this kernel has no Landlock ({})", std::strerror(errno));
    return p;
  }
  if (int n = thread_count(); n > 1) {
    p.detail = fmt::format("not applied: {} threads were already running (it binds one thread)", n);
    return p;
  }
  const uint64_t read = fs_read_file | fs_read_dir;
  uint64_t write = fs_write_file | fs_remove_dir | fs_remove_file | fs_make_char | fs_make_dir | fs_make_reg |
                   fs_make_sock | fs_make_fifo | fs_make_block | fs_make_sym;
  if (abi >= 2) write |= fs_refer;
  if (abi >= 3) write |= fs_truncate;
  ruleset_attr attr;
  attr.handled_access_fs = read | write;
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = net_bind_tcp | net_connect_tcp;  // and no rule: no TCP at all
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6 && !sandbox_skipped("landlock_scope")) {
    attr.scoped = scope_abstract_unix_socket | scope_signal;
    size = sizeof(ruleset_attr);
  }
  int fd = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (fd < 0) {
    p.detail = fmt::format("unavailable: create_ruleset: {}", std::strerror(errno));
    return p;
  }
  ruleset rules(fd, attr.handled_access_fs);
  // Reads: everything but other processes' /proc entries (their environment, memory maps, command lines).
  rules.allow_entries("/", read, [](const char* name) { return !std::strcmp(name, "proc"); });
  rules.allow_entries("/proc", read, [](const char* name) { return all_digits(name); });
  const uint64_t truncate = abi >= 3 ? uint64_t{fs_truncate} : 0;
  // Its own entries it may also write (the CUDA driver does, at start: seen on an H200).
  rules.allow(fmt::format("/proc/{}", ::getpid()), read | fs_write_file | truncate);
  // Writes: the scratch folder (and the private /tmp, KFORGE_SANDBOX_WRITE's folders), and the device nodes CUDA
  // and the C library open for writing.
  for (const auto& dir : writable) rules.allow(dir, read | write);
  const uint64_t device = fs_read_file | fs_write_file | truncate;
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full"}) rules.allow(dev, device);
  rules.allow_entries("/dev", device, [](const char* name) { return std::strncmp(name, "nvidia", 6) != 0; });
  if (!rules.failed().empty()) {
    p.detail = "unavailable: " + rules.failed();
    return p;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::syscall(SYS_landlock_restrict_self, rules.fd(), 0) != 0) {
    p.detail = fmt::format("unavailable: restrict_self: {}", std::strerror(errno));
    return p;
  }
  p.active = true;
  p.detail = fmt::format("ABI {}: files written only under {}, the device nodes and its own /proc entries; no other "
                         "process's /proc entries",
                         abi, fmt::join(writable, ", "));
  if (abi >= 4) p.detail += "; no TCP";
  if (abi >= 6) p.detail += "; no signals or abstract sockets outside the sandbox";
  return p;
}

}  // namespace

std::vector<std::string> enter_sandbox_early(const std::string& scratch, std::vector<protection>& out) {
  std::vector<std::string> writable = {scratch};
  const bool private_tmp = enter_namespaces(scratch, out);
  if (private_tmp) writable.push_back("/tmp");
  // KFORGE_SANDBOX_WRITE=DIR,...: more places the worker may write (a vendor library's cache).
  for (const auto& dir : env_list("KFORGE_SANDBOX_WRITE")) writable.push_back(dir);
  out.push_back(sandbox_skipped("landlock") ? skipped_protection("landlock") : enter_landlock(writable));
  return writable;
}

}  // namespace kf
