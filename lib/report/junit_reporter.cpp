// JUnit XML: a testsuite per workload, a testcase per gate check (verify[<case>], beats[<baseline>][<case>],
// regression[<case>], kernel). Valid against the Jenkins JUnit schema (tests/data/jenkins-junit.xsd): properties
// only on testsuites (a check's numbers go to its system-out as name=value lines), no `skipped` on testsuites,
// times in seconds with at most 3 decimals. Read by GitHub test-report actions, GitLab and Jenkins; everything
// untrusted is escaped (text_escape.h).
#include <cmath>

#include <fmt/format.h>

#include "report/reporter.h"
#include "report/text_escape.h"

namespace kf {
namespace {

std::string attr(std::string_view s) { return xml_escape(s, true); }

std::string json_scalar(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  return v.dump();
}

void add_property(std::string& out, const std::string& indent, std::string_view name, std::string_view value) {
  out += fmt::format("{}<property name=\"{}\" value=\"{}\"/>\n", indent, attr(name), attr(value));
}

// Flattens {"a": 1, "b": {"c": 2}} into "a=1\nb.c=2\n" lines (a testcase's system-out: the schema allows no
// properties inside a testcase).
void add_numbers(std::string& out, const nlohmann::json& numbers, const std::string& prefix = "") {
  if (!numbers.is_object()) return;
  for (auto& [k, v] : numbers.items()) {
    std::string name = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) add_numbers(out, v, name);
    else out += fmt::format("{}={}\n", name, json_scalar(v));
  }
}

// Seconds as the schema's SUREFIRE_TIME wants them: digits, at most 3 decimals, never negative.
std::string seconds_attr(double s) { return fmt::format("{:.3f}", std::isfinite(s) && s > 0 ? s : 0.0); }

struct counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(check_outcome o) {
    ++tests;
    failures += o == check_outcome::failed;
    errors += o == check_outcome::error;
    skipped += o == check_outcome::skipped || o == check_outcome::inconclusive;
  }
};

// The workload's checks, plus a synthetic "run" testcase when it stopped before any check was made.
std::vector<gate_check> testcases_of(const workload_result& w) {
  std::vector<gate_check> cs = w.checks;
  if (!w.error.empty()) {
    gate_check c;
    c.kind = "run";
    c.outcome = check_outcome::error;
    c.sentence = w.error;
    cs.insert(cs.begin(), c);
  }
  return cs;
}

std::string verify_details(const workload_result& w, const std::string& case_name) {
  std::string out;
  for (auto& v : w.verify.checks)
    if (!v.passed && (v.case_name == case_name || v.case_name.empty()))
      out += fmt::format("{} (case {}, seed {}): {}\n", v.rule, v.case_name.empty() ? "-" : v.case_name, v.seed, v.detail);
  if (!w.verify.why.empty()) out += w.verify.why + "\n";
  if (!w.compile_log.empty()) out += "compiler output:\n" + w.compile_log + "\n";
  return out;
}

std::string suite(const workload_result& w, const run_result& r, counts& total) {
  counts c;
  auto cases = testcases_of(w);
  for (auto& k : cases) c.add(k.outcome);
  total.tests += c.tests;
  total.failures += c.failures;
  total.errors += c.errors;
  total.skipped += c.skipped;

  std::string out = fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\"{}{}>\n",
      attr(w.name), c.tests, c.failures, c.errors, c.skipped, seconds_attr(w.seconds),
      r.env.started_at.empty() ? "" : fmt::format(" timestamp=\"{}\"", attr(r.env.started_at.substr(0, 19))),
      r.env.host.empty() ? "" : fmt::format(" hostname=\"{}\"", attr(r.env.host)));
  out += "    <properties>\n";
  const std::string pi = "      ";
  add_property(out, pi, "gpu_key", r.env.gpu_key);
  add_property(out, pi, "gpu_name", r.env.gpu_name);
  add_property(out, pi, "kernel", w.kernel_path.empty() ? "none" : w.kernel_path);
  if (!w.kernel_note.empty()) add_property(out, pi, "kernel_note", w.kernel_note);
  add_property(out, pi, "verify", w.verify.verdict);
  for (auto& cr : w.cases) {
    for (auto& i : cr.impls)
      if (i.status == impl_status::ok)
        add_property(out, pi, fmt::format("{}.{}.median_us", cr.name, i.impl), fmt::format("{:.4g}", i.series(cr.metric).stats.median_us));
    if (cr.floor.floor_us > 0) add_property(out, pi, cr.name + ".floor_us", fmt::format("{:.4g}", cr.floor.floor_us));
  }
  out += "    </properties>\n";

  // The workload's time spread over its checks: kforge times a workload, not each check, and a CI view that
  // sums testcase times then matches the suite's.
  const std::string each = seconds_attr(cases.empty() ? 0 : w.seconds / static_cast<double>(cases.size()));
  for (auto& k : cases) {
    std::string classname = fmt::format("kforge.{}", w.name);
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">\n", attr(classname), attr(k.test_name()), each);
    std::string body = k.kind == "verify" ? verify_details(w, k.case_name) : "";
    std::string text = body.empty() ? k.sentence : k.sentence + "\n" + body;
    switch (k.outcome) {
      case check_outcome::failed:
        out += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", attr(k.sentence), attr(k.kind), xml_escape(text));
        break;
      case check_outcome::error:
        out += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n", attr(k.sentence), attr(k.kind), xml_escape(text));
        break;
      case check_outcome::skipped:
        out += fmt::format("      <skipped message=\"{}\"/>\n", attr(k.sentence));
        break;
      case check_outcome::inconclusive:  // neither a pass nor a failure: JUnit's nearest is skipped, said as such
        out += fmt::format("      <skipped message=\"{}\"/>\n", attr("inconclusive: " + k.sentence));
        break;
      case check_outcome::passed:
        break;
    }
    std::string system_out = k.outcome == check_outcome::passed ? k.sentence : "";
    if (k.numbers.is_object() && !k.numbers.empty()) {
      if (!system_out.empty()) system_out += "\n";
      add_numbers(system_out, k.numbers);
    }
    if (!system_out.empty()) out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(system_out));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n";
  return out;
}

}  // namespace

std::string render_junit(const run_result& r) {
  counts total;
  std::string suites;
  double seconds = 0;
  for (auto& w : r.workloads) {
    suites += suite(w, r, total);
    seconds += w.seconds;
  }
  if (!r.complete) {
    // An incomplete run is an error a CI system must show, even when every workload that ran passed.
    total.add(check_outcome::error);
    suites += fmt::format(
        "  <testsuite name=\"kforge\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0\">\n"
        "    <testcase classname=\"kforge\" name=\"run-complete\" time=\"0\">\n"
        "      <error message=\"{}\" type=\"incomplete\"/>\n    </testcase>\n  </testsuite>\n",
        attr("the run is incomplete: " + r.incomplete_reason));
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  // No `skipped` here: the Jenkins schema has none on testsuites (each testsuite carries its own).
  out += fmt::format("<testsuites name=\"kforge\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n", total.tests,
                     total.failures, total.errors, seconds_attr(seconds));
  out += suites;
  out += "</testsuites>\n";
  return out;
}

}  // namespace kf
