#include "util/error.h"

#include <cstdio>
#include <cstdlib>

namespace kf {

std::string source_loc::str() const {
  if (file.empty()) return {};
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

user_error::user_error(source_loc loc, std::string message)
    : std::runtime_error(loc.file.empty() ? message : loc.str() + ": " + message),
      m_loc(std::move(loc)),
      m_message(std::move(message)) {}

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "kforge: internal error at %s:%d: %s failed: %s\n", file, line, expr, msg.c_str());
  std::abort();
}

}  // namespace kf
