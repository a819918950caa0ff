#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gate/gate.h"
#include "report/reporter.h"
#include "report/text_escape.h"
#include "report_fixture.h"
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
      "import sys, xml.etree.ElementTree as ET\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "assert root.tag == 'testsuites', root.tag\n"
      "print('totals', root.get('tests'), root.get('failures'), root.get('errors'), root.get('skipped'))\n"
      "for s in root.findall('testsuite'):\n"
      "  for c in s.findall('testcase'):\n"
      "    kind = 'passed'\n"
      "    for k in ('failure', 'error', 'skipped'):\n"
      "      e = c.find(k)\n"
      "      if e is not None: kind = k + ':' + e.get('message')\n"
      "    props = ','.join(p.get('name') for p in c.findall('properties/property'))\n"
      "    print(s.get('name'), '|', c.get('name'), '|', kind, '|', props)\n";
  auto res = run_process({"python3", "-c", script, (d.path() / "r.xml").string()});
  EXPECT_TRUE(res.ok()) << res.err;
  return res.out;
}

TEST(reporters, junit_is_well_formed_with_expected_testcases) {
  run_result r = mixed_run();
  std::string out = parse_junit(render_junit(r));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | verify[B=1,H=8,S=1024] | passed"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0000 | beats[eager][B=1,H=8,S=1024] | passed | baseline_median_us,kernel_median_us,"));
  EXPECT_THAT(out, ::testing::HasSubstr("softmax-0001 | beats[compile][B=1,H=8,S=1024] | failure:kernel 50.0 us is not faster than compile 29.9 us (1.67x slower)"));
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
  EXPECT_THAT(md, ::testing::HasSubstr("- _… and "));
  EXPECT_EQ(valid_utf8(md), md);  // truncation never cuts a character in half
}

TEST(reporters, gbench_json_has_context_and_benchmarks) {
  run_result r = fixture::run(2, 1);
  auto j = nlohmann::json::parse(render_gbench(r));
  ASSERT_TRUE(j["context"].is_object());
  EXPECT_EQ(j["context"]["gpu_key"], "sm90-nvidia-h200");
  const auto& b = j["benchmarks"];
  ASSERT_TRUE(b.is_array());
  bool found_median = false, found_error = false;
  for (auto& e : b) {
    EXPECT_EQ(e["time_unit"], "us");
    EXPECT_TRUE(e.contains("real_time") && e.contains("iterations") && e.contains("run_name"));
    if (e["name"] == "softmax-0000/B=1,H=8,S=1024/kernel_median") {
      found_median = true;
      EXPECT_EQ(e["run_type"], "aggregate");
      EXPECT_EQ(e["aggregate_name"], "median");
      EXPECT_NEAR(e["real_time"].get<double>(), 50.0, 0.5);
      EXPECT_EQ(e["iterations"], 20);
    }
    if (e["name"] == "softmax-0000/B=1,H=8,S=1024/vendor") {
      found_error = true;
      EXPECT_EQ(e["error_occurred"], true);
    }
  }
  EXPECT_TRUE(found_median);
  EXPECT_TRUE(found_error);
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
