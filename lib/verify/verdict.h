// A candidate's verdict: the checks it went through (rule, case, seed, numbers) and the rule table that names
// them. Verdicts only get worse: merging keeps every failure, and the worst status of a rule wins.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

enum class rule_stage { compile, static_scan, run, dynamic, timing };
std::string_view rule_stage_name(rule_stage s);

struct rule_info {
  std::string_view name;
  rule_stage stage;
  std::string_view summary;  // what a passing candidate does
};
// Every rule a check may name (docs/design.md "Verify"); reports list them in this order.
const std::vector<rule_info>& verify_rules();
const rule_info* find_rule(std::string_view name);

// Worst last: merging takes the max.
enum class check_status { passed, skipped, failed };
std::string_view check_status_name(check_status s);

struct check {
  std::string rule;
  std::string case_name;  // empty for checks of the whole candidate (compile, static scan)
  int seed = -1;          // -1 when not per seed
  check_status status = check_status::passed;
  std::string detail;     // the evidence in words ("max |err| 0.3 at [2, 17] > tolerance 1e-3 ...")
  nlohmann::json numbers = nlohmann::json::object();
  bool passed() const { return status != check_status::failed; }
  nlohmann::json to_json() const;
  static check from_json(const nlohmann::json& j);
};

class verdict {
 public:
  // Asserts that the rule is in the table: a misspelt rule would be a silent hole.
  void add(check c);
  void pass(std::string rule, std::string case_name, int seed, std::string detail = {},
            nlohmann::json numbers = nlohmann::json::object());
  void fail(std::string rule, std::string case_name, int seed, std::string detail,
            nlohmann::json numbers = nlohmann::json::object());
  void merge(const verdict& other);

  // True when there is at least one check and none failed (an empty verdict proves nothing).
  bool passed() const;
  const std::vector<check>& checks() const { return m_checks; }
  std::vector<const check*> failures() const;
  // The worst status among checks of `rule` (on `case_name`, when given); passed when there are none.
  check_status status_of(std::string_view rule, std::string_view case_name = {}) const;
  bool has(std::string_view rule) const;
  // "match on case R=3,C=7 seed 2: ..." for the first failure; "" when passed.
  std::string first_failure() const;
  // For people: one line per rule and case with the worst status, seeds seen, and the first failure's detail.
  std::string text() const;
  nlohmann::json to_json() const;  // {"passed": bool, "checks": [...]}
  static verdict from_json(const nlohmann::json& j);

 private:
  std::vector<check> m_checks;
};

}  // namespace kf
