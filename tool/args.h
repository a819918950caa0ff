// A small flag parser for the subcommands: --name value, --name=value, --flag, positionals.
// Unknown flags are usage errors (exit 2) with a suggestion.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kf {

struct flag_def {
  std::string name;        // without the dashes
  bool takes_value = true;
  std::string help;
  std::string value_name = "X";
};

class args {
 public:
  // Throws user_error on an unknown flag or a missing value.
  args(const std::vector<std::string>& argv, const std::vector<flag_def>& defs);
  bool has(const std::string& name) const { return m_values.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  double get_double(const std::string& name, double fallback) const;  // "30", "30s", "5%" forms; finite only
  // The same, and within [lo, hi]; `unit` names what is expected ("seconds").
  double get_double_in(const std::string& name, double fallback, double lo, double hi, const char* unit) const;
  int get_int(const std::string& name, int fallback) const;
  // A comma-separated value ("eager,compile"), empty items dropped; empty when the flag is absent.
  std::vector<std::string> get_list(const std::string& name) const;
  const std::vector<std::string>& positional() const { return m_positional; }

 private:
  std::map<std::string, std::string> m_values;
  std::vector<std::string> m_positional;
};

std::string flags_help(const std::vector<flag_def>& defs);

// --workloads DIR, and its older spelling --workloads-dir (run, calibrate), for the commands that read a folder of
// specs; workloads_folder() is the one given ("workloads" when neither is), a usage error when both are.
std::vector<flag_def> workloads_flags();
std::string workloads_folder(const args& a);

// --sandbox on|strict|off, for the commands that run candidates (docs/sandbox.md).
flag_def sandbox_flag();
// Makes --sandbox (when given) the mode of every worker this process starts; checks $KFORGE_SANDBOX either way.
void apply_sandbox_flag(const args& a);

}  // namespace kf
