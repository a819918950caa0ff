#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gate/gate.h"
#include "report/reporter.h"
#include "report/run_summary.h"
#include "report/speedup_chart.h"
#include "report/text_escape.h"
#include "../support/report_fixture.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

// A run with one passing workload, one failing must_beat, one failed verification carrying hostile text,
// one without a kernel, and one that hit an infrastructure error.
run_result mixed_run() {
  run_result r = fixture::run(3, 1);
  gate_spec g;
  g.must_beat = {"eager", "compile"};
  r.workloads[1].cases[0].find("compile")->cold.samples_us = fixture::samples(30, 20, 0.01, 4);
  summarize_case(r.workloads[1].cases[0]);
  auto& bad = r.workloads[2];
  bad.name = "evil<&>\"'-name";
  bad.verify.verdict = "failed";
  bad.verify.checks[0].passed = false;
  bad.verify.checks[0].detail = "max error ]]> <script>alert(1)</script> & \x01\x02 \xc3\x28 done";
  bad.compile_log = "warning: <unused> & \x1b[31mred\x1b[0m";
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no kforge history note on 0123456789ab"});
  workload_result none;
  none.name = "no-kernel";
  none.kernel_note = "no kernel for sm90-nvidia-h200 in workloads/no-kernel/kernels";
  apply_gate(none, g, {});
  r.workloads.push_back(none);
  workload_result broken;
  broken.name = "broken";
  broken.error = "kforge-worker crashed (SIGSEGV) while loading LibTorch";
  r.workloads.push_back(broken);
  return r;
}

// Parses the XML with Python's expat-backed parser and prints suite/case/outcome lines.
std::string parse_junit(const std::string& xml) {
  temp_dir d;
  write_file_atomic(d.path() / "r.xml", xml);
  std::string script =
      "import re, sys, xml.etree.ElementTree as ET\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "assert root.tag == 'testsuites', root.tag\n"
      "skipped = sum(int(s.get('skipped')) for s in root.findall('testsuite'))\n"
      "print('totals', root.get('tests'), root.get('failures'), root.get('errors'), skipped)\n"
      "for s in root.findall('testsuite'):\n"
      "  for c in s.findall('testcase'):\n"
      "    kind = 'passed'\n"
      "    for k in ('failure', 'error', 'skipped'):\n"
      "      e = c.find(k)\n"
      "      if e is not None: kind = k + ':' + e.get('message')\n"
      "    out = c.findtext('system-out') or ''\n"
      "    props = ','.join(l.split('=')[0] for l in out.splitlines() if re.match(r'^[\\w.]+=', l))\n"
      "    print(s.get('name'), '|', c.get('name'), '|', kind, '|', props)\n";
  auto res = run_process({"python3", "-c", script, (d.path() / "r.xml").string()});
  EXPECT_TRUE(res.ok()) << res.err;
  return res.out;
}

TEST(reporters, junit_is_well_formed_with_expected_testcases) {
  run_result r = mixed_run();
  std::string out = parse_junit(render_junit(r));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | verify[B=1,H=8,S=1024] | passed"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | beats[eager][B=1,H=8,S=1024] | passed | baseline_median_us,"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0001 | beats[compile][B=1,H=8,S=1024] | failure:kernel 50.0 us is not faster than compile 29.9 us"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | beats[vendor][B=1,H=8,S=1024] | skipped:vendor baseline skipped: cuDNN"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | regression[B=1,H=8,S=1024] | skipped:no kforge history note"));
  EXPECT_THAT(out, ::testing::HasSubstr("evil<&>\"'-name | verify[B=1,H=8,S=1024] | failure:1 of 3 checks failed"));
  EXPECT_THAT(out, ::testing::HasSubstr("<script>alert(1)</script>"));  // escaped in XML, text again once parsed
  EXPECT_THAT(out, ::testing::HasSubstr("no-kernel | kernel | skipped:no kernel for sm90-nvidia-h200"));
  EXPECT_THAT(out, ::testing::HasSubstr("broken | run | error:kforge-worker crashed (SIGSEGV)"));
}

TEST(reporters, junit_counts_match_testcases) {
  run_result r = mixed_run();
  std::string out = parse_junit(render_junit(r));
  int cases = 0, failures = 0, errors = 0, skipped = 0;
  for (size_t p = 0; (p = out.find('\n', p)) != std::string::npos; ++p) {
    size_t start = out.rfind('\n', p - 1);
    std::string line = out.substr(start == std::string::npos ? 0 : start + 1, p - (start == std::string::npos ? 0 : start + 1));
    if (line.rfind("totals", 0) == 0) continue;
    ++cases;
    failures += line.find("| failure:") != std::string::npos;
    errors += line.find("| error:") != std::string::npos;
    skipped += line.find("| skipped:") != std::string::npos;
  }
  EXPECT_THAT(out, ::testing::StartsWith(fmt::format("totals {} {} {} {}", cases, failures, errors, skipped)));
  EXPECT_GT(failures, 1);
}

TEST(reporters, incomplete_run_is_an_error_testcase) {
  run_result r = fixture::run(1, 1);
  r.complete = false;
  r.incomplete_reason = "interrupted by SIGTERM";
  EXPECT_THAT(parse_junit(render_junit(r)), ::testing::HasSubstr("kforge | run-complete | error:the run is incomplete: interrupted"));
}

TEST(reporters, xml_escape_repairs_and_escapes) {
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(xml_escape("x\x01y"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(xml_escape("\xc3\x28"), "\xEF\xBF\xBD(");      // invalid continuation byte
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(xml_escape("é ü"), "é ü");
  EXPECT_EQ(xml_escape("l1\nl2", true), "l1&#10;l2");
}

TEST(reporters, markdown_has_table_and_failures) {
  run_result r = mixed_run();
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::StartsWith("<!-- kforge-report -->"));
  EXPECT_THAT(md, ::testing::HasSubstr("| workload | case | kernel | eager | compile | vendor | speedup | of floor | verdict |"));
  EXPECT_THAT(md, ::testing::HasSubstr("| softmax-0000 | B=1,H=8,S=1024 | 50.0 µs"));
  EXPECT_THAT(md, ::testing::HasSubstr("×4.00 eager"));
  EXPECT_THAT(md, ::testing::HasSubstr("❌ beats[compile][B=1,H=8,S=1024]"));
  EXPECT_THAT(md, ::testing::HasSubstr("evil&lt;&amp;&gt;"));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("<script>")));
  // Failures come first in the table.
  EXPECT_LT(md.find("| softmax-0001 |"), md.find("| softmax-0000 |"));
}

// The header says which protections the kernels ran under (docs/sandbox.md), and which were missing.
TEST(reporters, markdown_names_the_sandbox_the_kernels_ran_under) {
  run_result r = mixed_run();
  EXPECT_THAT(render_markdown(r), ::testing::Not(::testing::HasSubstr("sandbox")));  // older runs: nothing said
  r.env.sandbox = {{"mode", "on"},
                   {"protections", {{{"name", "seccomp"}, {"active", true}, {"detail", ""}},
                                    {{"name", "landlock"}, {"active", false}, {"detail", "no Landlock"}}}}};
  EXPECT_THAT(render_markdown(r), ::testing::HasSubstr("sandbox on: seccomp (not active: landlock)"));
}

// Where both torch.compile modes were timed, the comment says what each took (the faster is the one compared).
TEST(reporters, markdown_lists_torch_compile_modes) {
  run_result r = fixture::run(1, 2);
  for (auto& i : r.workloads[0].cases[0].impls)
    if (i.impl == "compile")
      i.details = {{"mode", "default"}, {"modes_median_us", {{"default", 75.0}, {"max-autotune", 81.25}}}};
  for (auto& i : r.workloads[0].cases[1].impls)
    if (i.impl == "compile") i.details = {{"mode", "default"}, {"modes_median_us", {{"default", 150.0}}}};
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::HasSubstr("torch.compile by mode (the faster is compared)"));
  EXPECT_THAT(md, ::testing::HasSubstr("- softmax-0000 B=1,H=8,S=1024: default 75.0 µs, max-autotune 81.2 µs"));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("S=2048: default")));  // one mode: nothing to compare
  EXPECT_THAT(render_markdown(fixture::run(1, 1)), ::testing::Not(::testing::HasSubstr("torch.compile by mode")));
}

TEST(reporters, markdown_row_of_a_workload_that_failed_verification_is_a_failure) {
  // Verification failed on the only cpu case, so nothing was timed: the row must not read as passed.
  workload_result w;
  w.name = "attn";
  w.kernel_path = "workloads/attn/kernels/cpu-x86-64.cpp";
  w.verify.verdict = "failed";
  w.verify.checks.push_back({"hang", "B=1,H=8,S=2048", 0, false, "no answer within 30.0 s; the worker was killed", {}});
  gate_spec g;
  g.must_beat = {"eager"};
  apply_gate(w, g, {nullptr, "", "no history"});
  ASSERT_EQ(w.outcome(), check_outcome::failed);
  run_result r;
  r.workloads.push_back(w);
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::HasSubstr("| attn | — |"));
  EXPECT_THAT(md, ::testing::HasSubstr("❌ verify[B=1,H=8,S=2048]"));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("| ✅ |")));
}

TEST(reporters, markdown_stays_under_64k_for_1000_workloads) {
  run_result r = fixture::run(1000, 2);
  gate_spec g;
  g.must_beat = {"eager"};
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no kforge history note on 0123456789ab"});
  std::string md = render_markdown(r);
  EXPECT_LT(md.size(), 64u * 1024);
  EXPECT_THAT(md, ::testing::ContainsRegex("… [0-9]+ more rows left out to stay under 64 KB"));
  // 2000 regression checks without history: one line, not 2000 notes.
  EXPECT_THAT(md, ::testing::HasSubstr("No history to compare with: no kforge history note on 0123456789ab (2000 regression checks skipped)"));
  EXPECT_EQ(md.find("no kforge history note"), md.rfind("no kforge history note"));
  EXPECT_EQ(valid_utf8(md), md);  // truncation never cuts a character in half
}

TEST(reporters, gbench_json_has_context_and_benchmarks) {
  run_result r = fixture::run(2, 1);
  auto j = nlohmann::json::parse(render_gbench(r));
  ASSERT_TRUE(j["context"].is_object());
  EXPECT_EQ(j["context"]["gpu_key"], "sm90-nvidia-h200");
  const auto& b = j["benchmarks"];
  ASSERT_TRUE(b.is_array());
  bool found_kernel = false, found_error = false;
  for (auto& e : b) {
    EXPECT_EQ(e["time_unit"], "us");
    EXPECT_TRUE(e.contains("real_time") && e.contains("iterations") && e.contains("run_name"));
    if (e["name"] == "softmax-0000/B=1,H=8,S=1024/kernel") {
      found_kernel = true;
      EXPECT_EQ(e["run_type"], "iteration");
      EXPECT_NEAR(e["real_time"].get<double>(), 50.0, 0.5);
      EXPECT_EQ(e["iterations"], 20);  // the samples
      EXPECT_EQ(e["repetitions"], 1);  // one series per impl: one run, not 20 repetitions
      EXPECT_TRUE(e["noise"].is_number());
    }
    if (e["name"] == "softmax-0000/B=1,H=8,S=1024/vendor") {
      found_error = true;
      EXPECT_EQ(e["error_occurred"], true);
    }
  }
  EXPECT_TRUE(found_kernel);
  EXPECT_TRUE(found_error);
}

// Dashboards chart every entry's real_time as a time: no stddev or cv entries posing as times, one entry per
// workload/case/impl, and the repetition count is a count of repetitions.
TEST(reporters, gbench_has_only_times_as_times) {
  run_result r = fixture::run(2, 2);
  auto b = nlohmann::json::parse(render_gbench(r))["benchmarks"];
  EXPECT_EQ(b.size(), 2u * 2 * 4);
  for (auto& e : b) {
    std::string name = e["name"];
    EXPECT_FALSE(e.contains("aggregate_name")) << name;
    EXPECT_EQ(name.find("_stddev"), std::string::npos);
    EXPECT_EQ(name.find("_cv"), std::string::npos);
    EXPECT_EQ(e["repetitions"], 1) << name;
    EXPECT_EQ(e["name"], e["run_name"]);
  }
}

TEST(reporters, html_is_self_contained_and_escaped) {
  run_result r = mixed_run();
  r.searches.push_back({"softmax-0000", "sm90-nvidia-h200",
                        {{1, -1, "row_softmax default", "ok", 60, 0, "__global__ void k() {}\n"},
                         {2, 1, "threads_per_row=64", "ok", 50, 0.18, "__global__ void k() { /* </script> */ }\n"}}});
  std::string html = render_html(r);
  EXPECT_THAT(html, ::testing::StartsWith("<!doctype html>"));
  EXPECT_THAT(html, ::testing::Not(::testing::ContainsRegex("(src|href)=\"(https?:)?//")));
  // Exactly the two script elements we wrote close: no data can end them early.
  size_t closes = 0;
  for (size_t p = 0; (p = html.find("</script>", p)) != std::string::npos; ++p) ++closes;
  EXPECT_EQ(closes, 2u);
  EXPECT_THAT(html, ::testing::HasSubstr("threads_per_row=64"));
  EXPECT_THAT(html, ::testing::HasSubstr("id=\"kf-data\""));
}

// The explorer's inline script, run under node with a tiny DOM (tests/data/html_dom_shim.js): renders rows,
// opens details, shows every tree node with its diff, filters.
TEST(reporters, html_script_runs_and_renders) {
  if (!find_program("node")) GTEST_SKIP() << "node is not installed: the explorer's script cannot be exercised";
  run_result r = mixed_run();
  r.searches.push_back({"softmax-0000", "sm90-nvidia-h200",
                        {{1, -1, "default", "ok", 60, 0, "int a;\n"}, {2, 1, "vec=8", "ok", 50, 0.2, "int b;\n"}}});
  temp_dir d;
  write_file_atomic(d.path() / "r.html", render_html(r));
  auto res = run_process({"node", std::string(KFORGE_SOURCE_DIR) + "/tests/data/html_dom_shim.js", (d.path() / "r.html").string()});
  ASSERT_TRUE(res.ok()) << res.err;
  EXPECT_THAT(res.out, ::testing::HasSubstr("rows 5\n"));
  EXPECT_THAT(res.out, ::testing::HasSubstr("row softmax-0001 | B=1,H=8,S=1024 | 50.0 µs"));
  EXPECT_THAT(res.out, ::testing::HasSubstr("tree nodes 2\n"));
  EXPECT_THAT(res.out, ::testing::HasSubstr("diff to #1- int a;+ int b;"));
  EXPECT_THAT(res.out, ::testing::HasSubstr("filtered rows 0"));
}

// Everything passed and only the history is missing (a first run, a new GPU key): the headline says passed, and
// says once that there was no history, not once per case (#19: "0 passed ... 8 with skipped checks").
TEST(reporters, passed_when_only_history_is_missing) {
  run_result r = fixture::run(3, 2);
  gate_spec g;
  g.must_beat = {"eager"};
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no kforge history note on 0123456789ab"});
  run_summary s = summarize_run(r);
  EXPECT_EQ(s.status, "passed");
  EXPECT_EQ(s.passed, 3);
  EXPECT_EQ(s.history_missing, 6);
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::HasSubstr("### ✅ kforge: passed — 3 workloads"));
  EXPECT_THAT(md, ::testing::HasSubstr("**3 passed**, **0 failed**\n"));
  EXPECT_THAT(md, ::testing::HasSubstr("> No history to compare with: no kforge history note on 0123456789ab (6 regression checks skipped)."));
  EXPECT_EQ(md.find("no kforge history note"), md.rfind("no kforge history note"));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("⚠️")));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("skipped checks")));
  std::string html = render_html(r);
  EXPECT_THAT(html, ::testing::HasSubstr("<b class=\"passed\">passed</b> · <span class=\"passed\">3 passed</span>"));
  EXPECT_THAT(html, ::testing::HasSubstr("No history to compare with: no kforge history note on 0123456789ab (6 regression checks skipped)."));
  // --require-history turns them into failures, which are no longer "missing history".
  gate_options strict;
  strict.require_history = true;
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no history"}, strict);
  EXPECT_EQ(summarize_run(r).status, "failed");
}

workload_result without_kernel(std::string name, bool required) {
  workload_result w;
  w.name = std::move(name);
  w.kernel_note = "no kernel for cpu-x86-64 in workloads/" + w.name + "/kernels";
  gate_spec g;
  g.require_kernel = required;
  apply_gate(w, g, {});
  return w;
}

// No kernel for this GPU key anywhere: nothing was verified, and no report may read "passed" (#19 part 8).
TEST(reporters, nothing_verified_is_not_passed) {
  run_result r;
  r.env = fixture::env();
  r.env.gpu_key = "cpu-x86-64";
  r.workloads = {without_kernel("a", false), without_kernel("b", false)};
  EXPECT_EQ(r.exit_code(), 0);  // not required: the run does not fail, but it says so
  run_summary s = summarize_run(r);
  EXPECT_EQ(s.status, "nothing verified");
  EXPECT_EQ(s.verified, 0);
  EXPECT_EQ(s.no_kernel, 2);
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::HasSubstr("kforge: nothing verified — 2 workloads"));
  EXPECT_THAT(md, ::testing::HasSubstr("**Nothing was verified**: no workload has a kernel for `cpu-x86-64`"));
  EXPECT_THAT(md, ::testing::HasSubstr("2 not verified (no kernel for `cpu-x86-64`)"));
  EXPECT_THAT(md, ::testing::Not(::testing::HasSubstr("✅")));
  std::string html = render_html(r);
  EXPECT_THAT(html, ::testing::HasSubstr("<b class=\"skipped\">nothing verified</b>"));
  EXPECT_THAT(html, ::testing::HasSubstr("Nothing was verified: no workload has a kernel for cpu-x86-64"));

  // One workload verified and passed: the run passed, and the other is counted as not verified.
  r.workloads.push_back(fixture::workload("c", 1));
  apply_gate(r.workloads.back(), {}, {nullptr, "", "no history"});
  s = summarize_run(r);
  EXPECT_EQ(s.status, "passed");
  EXPECT_THAT(render_markdown(r), ::testing::HasSubstr("**1 passed**, **0 failed**, 2 not verified (no kernel for `cpu-x86-64`)"));

  // gate.require_kernel: the missing kernel is a failure.
  r.workloads[0] = without_kernel("a", true);
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_EQ(summarize_run(r).status, "failed");
  EXPECT_THAT(render_markdown(r), ::testing::HasSubstr("❌ kernel"));
}

// A case that lost to two required baselines names both in its verdict cell, not only the first.
TEST(reporters, verdict_cell_lists_every_failed_check) {
  run_result r = fixture::run(1, 1);
  auto& c = r.workloads[0].cases[0];
  c.find("eager")->cold.samples_us = fixture::samples(30, 20, 0.01, 7);
  c.find("compile")->cold.samples_us = fixture::samples(30, 20, 0.01, 8);
  summarize_case(c);
  gate_spec g;
  g.must_beat = {"eager", "compile"};
  apply_gate(r.workloads[0], g, {nullptr, "", "no history"});
  EXPECT_THAT(render_markdown(r), ::testing::HasSubstr("| ❌ beats[eager][B=1,H=8,S=1024], beats[compile][B=1,H=8,S=1024] |"));
}

// inconclusive: the data could not decide within the cap; neither a pass nor a failure, and shown as such.
TEST(reporters, inconclusive_is_rendered_apart) {
  run_result r = fixture::run(2, 1);
  for (auto& w : r.workloads) apply_gate(w, {}, {nullptr, "", "no history"});
  gate_check k;
  k.kind = "regression";
  k.case_name = "B=1,H=8,S=1024";
  k.against = "base";
  k.outcome = check_outcome::inconclusive;
  k.sentence = "too noisy to tell within the cap: +2.0% ± 9.0%";
  r.workloads[1].checks.push_back(k);
  EXPECT_EQ(r.exit_code(), 0);
  run_summary s = summarize_run(r);
  EXPECT_EQ(s.inconclusive, 1);
  EXPECT_EQ(s.status, "inconclusive");
  std::string md = render_markdown(r);
  EXPECT_THAT(md, ::testing::HasSubstr("### ❔ kforge: inconclusive"));
  EXPECT_THAT(md, ::testing::HasSubstr("**1 passed**, **0 failed**, 1 inconclusive"));
  EXPECT_THAT(md, ::testing::HasSubstr("| ❔ regression[B=1,H=8,S=1024] |"));
  EXPECT_THAT(render_html(r), ::testing::HasSubstr("<span class=\"inconclusive\">1 inconclusive</span>"));
  std::string junit = parse_junit(render_junit(r));
  EXPECT_THAT(junit, ::testing::HasSubstr("softmax-0001 | regression[B=1,H=8,S=1024] | skipped:inconclusive: too noisy"));
}

// The JUnit file validates against the Jenkins JUnit schema (tests/data/jenkins-junit.xsd) with xmllint; the
// schema itself is shown to reject what the older reporter wrote (properties in a testcase, skipped on testsuites).
TEST(reporters, junit_validates_against_the_jenkins_schema) {
  if (!find_program("xmllint")) GTEST_SKIP() << "xmllint is not installed (ci/setup installs libxml2-utils)";
  const std::string xsd = std::string(KFORGE_SOURCE_DIR) + "/tests/data/jenkins-junit.xsd";
  temp_dir d;
  auto validate = [&](const std::string& xml) {
    write_file_atomic(d.path() / "r.xml", xml);
    return run_process({"xmllint", "--noout", "--schema", xsd, (d.path() / "r.xml").string()});
  };
  run_result r = mixed_run();
  r.workloads[0].seconds = 1234.5678;
  gate_check k;
  k.kind = "regression";
  k.outcome = check_outcome::inconclusive;
  k.sentence = "too noisy";
  r.workloads[0].checks.push_back(k);
  auto ok = validate(render_junit(r));
  EXPECT_TRUE(ok.ok()) << ok.err;
  r.complete = false;
  r.incomplete_reason = "interrupted";
  auto incomplete = validate(render_junit(r));
  EXPECT_TRUE(incomplete.ok()) << incomplete.err;
  auto empty = validate(render_junit(run_result{}));
  EXPECT_TRUE(empty.ok()) << empty.err;

  auto old_case = validate(R"(<testsuites><testsuite name="a" tests="1"><testcase name="t"><properties>)"
                           R"(<property name="x" value="1"/></properties></testcase></testsuite></testsuites>)");
  EXPECT_FALSE(old_case.ok());
  auto old_suites = validate(R"(<testsuites skipped="0"><testsuite name="a" tests="0"/></testsuites>)");
  EXPECT_FALSE(old_suites.ok());
  auto bad_time = validate(R"(<testsuites><testsuite name="a" tests="0" time="1.23456"/></testsuites>)");
  EXPECT_FALSE(bad_time.ok());
}

// Testcases carry the workload's time spread over its checks (not "0"), adding up to the suite's time.
TEST(reporters, junit_testcases_carry_real_times) {
  run_result r = fixture::run(1, 2);
  apply_gate(r.workloads[0], {}, {nullptr, "", "no history"});
  r.workloads[0].seconds = 12;
  std::string xml = render_junit(r);
  size_t n = r.workloads[0].checks.size();
  ASSERT_GT(n, 2u);
  std::string each = fmt::format("time=\"{:.3f}\"", 12.0 / static_cast<double>(n));
  size_t found = 0;
  for (size_t p = 0; (p = xml.find("<testcase ", p)) != std::string::npos; ++p)
    found += xml.compare(xml.find("time=", p), each.size(), each) == 0;
  EXPECT_EQ(found, n);
  EXPECT_THAT(xml, ::testing::HasSubstr("<testsuite name=\"softmax-0000\" tests=\"" + std::to_string(n)));
  EXPECT_THAT(xml, ::testing::HasSubstr("time=\"12.000\""));
  EXPECT_THAT(xml, ::testing::Not(::testing::HasSubstr("<testcase classname=\"kforge.softmax-0000\" name=\"kernel\" time=\"0\"")));
}

// The HTML opens with a speedup chart (inline SVG: a bar per baseline, the floor fraction) and carries no raw
// samples: the embedded record is the summary-only JSON.
TEST(reporters, html_has_a_speedup_chart_and_no_samples) {
  run_result r = fixture::run(2, 2);
  for (auto& w : r.workloads) apply_gate(w, {}, {nullptr, "", "no history"});
  std::string html = render_html(r);
  EXPECT_THAT(html, ::testing::HasSubstr("<svg id=\"speedups\""));
  EXPECT_THAT(html, ::testing::HasSubstr(">×4.00 eager</text>"));
  EXPECT_THAT(html, ::testing::HasSubstr(">×1.50 compile</text>"));
  EXPECT_THAT(html, ::testing::HasSubstr(">60%</text>"));
  EXPECT_LT(html.find("<svg id=\"speedups\""), html.find("id=\"kf-data\""));
  EXPECT_THAT(html, ::testing::Not(::testing::HasSubstr("samples_us")));
  EXPECT_THAT(html, ::testing::Not(::testing::HasSubstr("max abs error 1e-4")));  // passed verify checks are counted
  EXPECT_THAT(html, ::testing::HasSubstr("\"passed_checks\":7"));
  // A kernel slower than a baseline: its bar goes left of the 1x line.
  r.workloads[0].cases[0].speedups["compile"] = 0.5;
  EXPECT_THAT(render_html(r), ::testing::HasSubstr("text-anchor=\"end\" font-size=\"10\">×0.50 compile</text>"));
  EXPECT_EQ(speedup_chart_svg(run_result{}), "");
}

// A run loaded from its JSON holds summaries only: every format still renders from them, hot series included.
TEST(reporters, summary_only_run_renders_every_format) {
  run_result r = fixture::run(2, 1);
  for (auto& i : r.workloads[0].cases[0].impls)
    if (i.status == impl_status::ok) i.hot.samples_us = fixture::samples(i.cold.stats.median_us * 0.5, 20, 0.01, 9);
  summarize_case(r.workloads[0].cases[0]);
  ASSERT_EQ(r.workloads[0].cases[0].metric, "hot");
  for (auto& w : r.workloads) apply_gate(w, {}, {nullptr, "", "no history"});
  run_result back = run_result_from_json(nlohmann::json::parse(render_json(r)));
  const auto& c = back.workloads[0].cases[0];
  EXPECT_EQ(c.metric, "hot");
  EXPECT_TRUE(c.find("kernel")->hot.samples_us.empty());
  EXPECT_EQ(c.find("kernel")->hot.stats.count, 20);
  EXPECT_NEAR(c.find("kernel")->hot.stats.median_us, 25, 0.3);
  EXPECT_EQ(render_json(back), render_json(r));
  case_result again = back.workloads[0].cases[0];
  summarize_case(again);  // a loaded series keeps its stats
  EXPECT_EQ(again.metric, "hot");
  EXPECT_EQ(again.find("kernel")->hot.stats.count, 20);
  EXPECT_THAT(render_markdown(back), ::testing::HasSubstr("| softmax-0000 | B=1,H=8,S=1024 | 25.0 µs"));
  auto gb = nlohmann::json::parse(render_gbench(back));
  EXPECT_NEAR(gb["benchmarks"][0]["real_time"].get<double>(), 25, 0.3);
  EXPECT_THAT(parse_junit(render_junit(back)), ::testing::HasSubstr("softmax-0000 | beats[eager][B=1,H=8,S=1024] | passed"));
  EXPECT_THAT(render_html(back), ::testing::HasSubstr("<svg id=\"speedups\""));
}

TEST(reporters, table_is_keyed_by_format_and_writes_atomically) {
  EXPECT_EQ(find_reporter("junit").format(), "junit");
  try {
    find_reporter("junti");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("did you mean 'junit'"));
  }
  temp_dir d;
  run_result r = fixture::run(1, 1);
  for (auto& rep : reporters()) rep->write(r, d.path() / "out" / std::string(rep->format()));
  for (auto& rep : reporters()) EXPECT_FALSE(read_file(d.path() / "out" / std::string(rep->format())).empty());
  EXPECT_EQ(load_run_result((d.path() / "out" / "json").string()).workloads.size(), 1u);
}

}  // namespace
}  // namespace kf
