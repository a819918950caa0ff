#include "util/fs.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "util/error.h"

namespace kf {
namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, std::string_view content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::string tmp = path.string() + fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw infra_error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw infra_error(fmt::format("cannot write {}: {}", tmp, std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw infra_error(fmt::format("cannot rename {} to {}: {}", tmp, path.string(), std::strerror(err)));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw user_error(source_loc{path.string()}, "cannot read file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

temp_dir::temp_dir(std::string_view prefix) {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path p = fs::temp_directory_path() / fmt::format("{}-{:08x}", prefix, rd());
    std::error_code ec;
    if (fs::create_directory(p, ec)) {
      m_path = p;
      return;
    }
  }
  throw infra_error("cannot create a temporary folder");
}

std::string make_private_dir(std::string_view prefix) {
  std::string pattern = (fs::temp_directory_path() / fmt::format("{}-XXXXXX", prefix)).string();
  if (!::mkdtemp(pattern.data()))
    throw infra_error(fmt::format("cannot create a folder like {}: {}", pattern, std::strerror(errno)));
  return pattern;
}

void remove_tree(const std::string& path) {
  if (path.empty()) return;
  ::nftw(path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) {
           ::remove(p);
           return 0;
         },
         16, FTW_DEPTH | FTW_PHYS);
}

temp_dir::~temp_dir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

}  // namespace kf
