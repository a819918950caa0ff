// The three error channels (CONTRIBUTING.md): user mistakes, infrastructure failures, broken invariants.
// A candidate that fails is a result, never one of these.
#pragma once
#include <stdexcept>
#include <string>
#include <fmt/format.h>

namespace kf {

// Exit codes of every kforge command.
enum exit_code : int { exit_ok = 0, exit_gate_failed = 1, exit_usage = 2 };

// Where in a user's file something is; line and column are 1-based, 0 when unknown.
struct source_loc {
  std::string file;
  int line = 0;
  int column = 0;
  std::string str() const;  // "file:line:column" (parts that are unknown are left out)
};

// A user's mistake: bad spec, bad flag, missing file. Reported as "file:line:col: message", exit 2.
class user_error : public std::runtime_error {
 public:
  user_error(source_loc loc, std::string message);
  explicit user_error(std::string message) : user_error(source_loc{}, std::move(message)) {}
  const source_loc& where() const { return m_loc; }
  const std::string& message() const { return m_message; }

 private:
  source_loc m_loc;
  std::string m_message;
};

// The environment failed: a compiler missing, a worker that cannot start, a git or SQLite call that failed.
class infra_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace kf

// A broken invariant of kforge itself: a bug, not a user's or a candidate's fault.
#define KF_ASSERT(cond, ...) \
  do { if (!(cond)) ::kf::assert_fail(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); } while (0)
