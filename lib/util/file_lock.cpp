#include "util/file_lock.h"

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {

file_lock::file_lock(const std::filesystem::path& path, wait how) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw infra_error(fmt::format("cannot open the lock file {}: {}", path.string(), std::strerror(errno)));
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | (how == wait::no ? LOCK_NB : 0));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    if (how == wait::no && err == EWOULDBLOCK) return;  // another holder has it
    throw infra_error(fmt::format("cannot lock {}: {}", path.string(), std::strerror(err)));
  }
  m_fd = fd;
}

file_lock::~file_lock() { release(); }

file_lock::file_lock(file_lock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }

file_lock& file_lock::operator=(file_lock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = other.m_fd;
    other.m_fd = -1;
  }
  return *this;
}

void file_lock::release() {
  if (m_fd < 0) return;
  ::flock(m_fd, LOCK_UN);
  ::close(m_fd);
  m_fd = -1;
}

}  // namespace kf
