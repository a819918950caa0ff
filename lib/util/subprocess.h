// Running other programs: compilers, the AOTInductor exporter, git hooks. Never through a shell.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kf {

struct process_options {
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string cwd;                             // empty: inherit
  std::map<std::string, std::string> env_set;  // added to (or replacing in) the parent's environment
  std::string stdin_data;
  bool merge_stderr = false;                   // stderr into the stdout capture
};

struct process_result {
  int exit_code = -1;      // valid when exited normally
  int signal = 0;          // non-zero when killed by a signal
  bool timed_out = false;  // killed by us after the timeout
  bool started = true;     // false when exec failed (program missing)
  std::string out;
  std::string err;
  double seconds = 0;
  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit code 3", "killed by SIGSEGV", "timed out after 30 s"
};

// Runs argv[0] (searched on PATH) with the arguments; captures output; kills the whole process group
// on timeout.
process_result run_process(const std::vector<std::string>& argv, const process_options& options = {});

// The full path of a program on PATH, or nullopt.
std::optional<std::string> find_program(const std::string& name);

std::string signal_name(int sig);

}  // namespace kf
