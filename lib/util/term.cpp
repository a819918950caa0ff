#include "util/term.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace kf::term {
namespace {
bool g_progress_open = false;
std::string wrap(std::string_view code, std::string_view s) {
  if (!is_tty()) return std::string(s);
  return fmt::format("\033[{}m{}\033[0m", code, s);
}
}  // namespace

bool is_tty() {
  static const bool tty = ::isatty(2) && !std::getenv("NO_COLOR");
  return tty;
}
std::string green(std::string_view s) { return wrap("32", s); }
std::string red(std::string_view s) { return wrap("31", s); }
std::string yellow(std::string_view s) { return wrap("33", s); }
std::string bold(std::string_view s) { return wrap("1", s); }
std::string dim(std::string_view s) { return wrap("2", s); }

void print_line(std::string_view line) {
  end_progress();
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

void progress(std::string_view line) {
  if (!is_tty()) return;
  std::fprintf(stderr, "\r\033[K%.*s", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
  g_progress_open = true;
}

void step(std::string_view line) {
  if (is_tty()) return progress(line);
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

void end_progress() {
  if (!g_progress_open) return;
  std::fprintf(stderr, "\r\033[K");
  g_progress_open = false;
}

}  // namespace kf::term
