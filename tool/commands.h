// The subcommand table: each subcommand lives in tool/cmd_<name>.cpp and exports its entry here.
#pragma once
#include <string>
#include <vector>

namespace kf {

struct command {
  const char* name;
  const char* summary;                                // one line for `kforge --help`
  std::string (*help)();                              // full help for `kforge NAME --help`
  int (*run)(const std::vector<std::string>& args);   // returns the exit code
};

const std::vector<command>& commands();

#define KF_DECLARE_COMMAND(name)   \
  std::string name##_help();       \
  int name##_run(const std::vector<std::string>& args);

KF_DECLARE_COMMAND(validate)
KF_DECLARE_COMMAND(check)
KF_DECLARE_COMMAND(run)
KF_DECLARE_COMMAND(search)
KF_DECLARE_COMMAND(retune)
KF_DECLARE_COMMAND(report)
KF_DECLARE_COMMAND(doctor)
KF_DECLARE_COMMAND(calibrate)
KF_DECLARE_COMMAND(reemit)
KF_DECLARE_COMMAND(capture)
KF_DECLARE_COMMAND(e2e)

}  // namespace kf
