// The worker's namespaces (docs/sandbox.md), entered while it has one thread: a fresh network namespace (no
// interface up) and a mount namespace whose /tmp is private: an overlay on the real /tmp, whose writes land in a
// tmpfs mounted on the worker's scratch folder. Libraries that hard-code /tmp (the AOTInductor package loader
// extracts every package to mkdtemp("/tmp/XXXXXX")) keep working, everything the parent left in /tmp (compiled
// candidates, packages, even those written later) stays readable, and nothing the worker writes there reaches the
// real /tmp. Without CAP_SYS_ADMIN both are made inside a user namespace of the worker's own.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "exec/sandbox.h"

namespace kf {
namespace {

bool write_text(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// unshare(flags), else the same inside a new user namespace mapping our ids to themselves. "" or why not.
std::string unshare_maybe_in_user_namespace(int flags, bool* in_user_namespace) {
  if (::unshare(flags) == 0) return "";
  int first = errno;
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | flags) != 0)
    return fmt::format("unshare: {}; with a user namespace: {}", std::strerror(first), std::strerror(errno));
  write_text("/proc/self/setgroups", "deny");
  write_text("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid));
  write_text("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid));
  *in_user_namespace = true;
  return "";
}

std::string mount_private_tmp(const std::string& scratch) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fmt::format("making mounts private: {}", std::strerror(errno));
  if (::mount("kforge-scratch", scratch.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0)
    return fmt::format("tmpfs on {}: {}", scratch, std::strerror(errno));
  const std::string upper = scratch + "/.tmp-upper", work = scratch + "/.tmp-work";
  if (::mkdir(upper.c_str(), 0700) != 0 || ::mkdir(work.c_str(), 0700) != 0)
    return fmt::format("overlay folders: {}", std::strerror(errno));
  const std::string options = fmt::format("lowerdir=/tmp,upperdir={},workdir={}", upper, work);
  if (::mount("kforge-tmp", "/tmp", "overlay", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
    return fmt::format("overlay on /tmp: {}", std::strerror(errno));
  return "";
}

}  // namespace

bool enter_namespaces(const std::string& scratch, std::vector<protection>& out) {
  const bool net = !sandbox_skipped("network_namespace"), tmp = !sandbox_skipped("private_tmp");
  if (!net) out.push_back(skipped_protection("network_namespace"));
  if (!tmp) out.push_back(skipped_protection("private_tmp"));
  if (!net && !tmp) return false;
  bool user_ns = false;
  std::string why = unshare_maybe_in_user_namespace((net ? CLONE_NEWNET : 0) | (tmp ? CLONE_NEWNS : 0), &user_ns);
  const std::string where = user_ns ? ", in a user namespace of its own" : "";
  if (net) out.push_back({"network_namespace", why.empty(), why.empty() ? "a fresh network namespace (no interface up)" + where
                                                                        : "unavailable: " + why});
  if (!tmp) return false;
  if (why.empty()) why = mount_private_tmp(scratch);
  out.push_back({"private_tmp", why.empty(),
                 why.empty() ? "/tmp is an overlay on the real one; its writes stay in memory" + where
                             : "unavailable: " + why + " (libraries that write to /tmp fail)"});
  return why.empty();
}

}  // namespace kf
