// Typed, located reads from a yaml-cpp tree for the spec parser. Every read that fails records a
// diagnostic (file:line:column of the offending node, the field path, what was expected) and returns
// nullopt, so that parsing goes on and all errors of a file are reported at once.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/spec_parse.h"

namespace kf {

class yaml_reader {
 public:
  yaml_reader(std::string file, std::vector<spec_diagnostic>* diags) : m_file(std::move(file)), m_diags(diags) {}

  const std::string& file() const { return m_file; }
  source_loc loc(const YAML::Node& n) const;  // 1-based; file-only when the node has no mark
  void error(const YAML::Node& at, const std::string& field, std::string message);
  void error(const source_loc& at, const std::string& field, std::string message);
  size_t error_count() const { return m_diags->size(); }

  // n must be a mapping: reports it otherwise, and reports unknown keys (with a suggestion), duplicate keys
  // and missing required keys. Returns false only when n is not a mapping.
  bool check_map(const YAML::Node& n, const std::string& field, const std::vector<std::string>& allowed,
                 const std::vector<std::string>& required = {});
  bool check_list(const YAML::Node& n, const std::string& field);

  std::optional<int64_t> get_int(const YAML::Node& n, const std::string& field);
  std::optional<double> get_number(const YAML::Node& n, const std::string& field);
  // A number or an infinity: -inf, inf (also YAML's -.inf, .inf); NaN is refused.
  std::optional<double> get_fill(const YAML::Node& n, const std::string& field);
  std::optional<bool> get_bool(const YAML::Node& n, const std::string& field);
  std::optional<std::string> get_string(const YAML::Node& n, const std::string& field);
  std::optional<dtype> get_dtype(const YAML::Node& n, const std::string& field);
  // One of `choices`; otherwise "expected one of ...", with a suggestion.
  std::optional<std::string> get_choice(const YAML::Node& n, const std::string& field,
                                        const std::vector<std::string>& choices, const std::string& what);
  // A list of integers (a single integer is accepted as a list of one when `scalar_ok`).
  std::optional<std::vector<int64_t>> get_int_list(const YAML::Node& n, const std::string& field, bool scalar_ok);
  // A fraction: "5%" or 0.05 (both 0.05); must lie in [0, 1).
  std::optional<double> get_fraction(const YAML::Node& n, const std::string& field);
  // A duration in seconds: 90, "90s", "30m", "2h".
  std::optional<double> get_seconds(const YAML::Node& n, const std::string& field);

  // How a node reads in a message: `the string "abc"`, `2.5`, `a mapping`, `a list`, `nothing`.
  static std::string describe(const YAML::Node& n);
  static bool is_plain_scalar(const YAML::Node& n);
  static bool is_null(const YAML::Node& n);

 private:
  std::string m_file;
  std::vector<spec_diagnostic>* m_diags;
};

}  // namespace kf
