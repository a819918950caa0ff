// Report sizes for a run the size of the seed suite (#19 part 4): 8 workloads, 30 gated cases, 5 impls each,
// 20000 samples per series (a long cold series on an H200), with verification lists like the real ones.
// Today's limits: the run JSON under 1 MB, the HTML under 2 MB, the history note under 16 KB for its GPU key.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gate/gate.h"
#include "report/reporter.h"
#include "report/samples_file.h"
#include "../support/report_fixture.h"
#include "store/history.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

run_result seed_sized_run() {
  run_result r;
  r.env = fixture::env();
  r.baselines = {"eager", "compile", "vendor"};
  const int cases_per_workload[8] = {4, 4, 4, 4, 4, 4, 3, 3};
  uint64_t seed = 1;
  for (int wi = 0; wi < 8; ++wi) {
    workload_result w;
    w.name = fmt::format("seed-workload-{}", wi);
    w.spec_path = "workloads/" + w.name + ".yaml";
    w.kernel_path = "workloads/" + w.name + "/kernels/sm90-nvidia-h200.cu";
    w.kernel_key = "sm90-nvidia-h200";
    w.verify.verdict = "passed";
    for (int ci = 0; ci < cases_per_workload[wi]; ++ci) {
      case_result c;
      c.name = fmt::format("B={},H=8,S={}", ci + 1, 1024 << ci);
      double k = 20.0 * (ci + 1);
      for (auto [name, factor] : {std::pair{"kernel", 1.0}, {"eager", 4.0}, {"compile", 1.5}, {"vendor", 2.0}, {"base", 1.01}}) {
        impl_result i;
        i.impl = name;
        i.cold.samples_us = fixture::samples(k * factor, 20000, 0.02, seed++);
        if (std::string_view(name) == "compile")
          i.details = {{"mode", "default"}, {"modes_median_us", {{"default", k * 1.5}, {"max-autotune", k * 1.53}}}};
        i.description = fmt::format("{} on {}", name, c.name);
        c.impls.push_back(std::move(i));
      }
      c.floor = {1e8, k * 0.6, 3.5, k * 0.6, 0};
      summarize_case(c);
      w.cases.push_back(std::move(c));
    }
    // Verification as the worker reports it: every case (gated or not) x 3 seeds x 8 rules, and the scan.
    for (int ci = 0; ci < cases_per_workload[wi] + 2; ++ci)
      for (int s = 1; s <= 3; ++s)
        for (const char* rule : {"matches_reference", "writes_every_output", "no_out_of_bounds", "large_magnitude",
                                 "all_equal_rows", "neg_inf_mask", "deterministic", "no_nan"})
          w.verify.checks.push_back({rule, fmt::format("case-{}", ci), s, true,
                                     "max abs error 3.1e-04 <= atol 1.0e-03, max rel error 2.2e-03 <= rtol 1.6e-02",
                                     {{"max_abs", 3.1e-4}, {"max_rel", 2.2e-3}}});
    w.verify.checks.push_back({"static_scan", "", 0, true, "no forbidden calls", nlohmann::json::object()});
    for (auto& c : w.cases)
      for (int s = 1; s <= 3; ++s)
        w.verify.checks.push_back({"matches_reference", c.name, s, true, "max abs error 3.1e-04 <= atol 1.0e-03", {{"max_abs", 3.1e-4}}});
    gate_spec g;
    g.must_beat = {"eager", "compile"};
    apply_gate(w, g, {nullptr, "", "no kforge history note on 0123456789ab"});
    w.seconds = 11.25;
    r.workloads.push_back(std::move(w));
  }
  return r;
}

TEST(report_size, seed_sized_run_stays_small) {
  run_result r = seed_sized_run();
  std::string json = render_json(r), html = render_html(r), md = render_markdown(r), junit = render_junit(r),
              gbench = render_gbench(r), samples = render_samples(r);
  std::string note = merge_note("", r);
  std::printf("seed-sized run (30 cases x 5 impls x 20000 samples): json %zu B, html %zu B, note %zu B, markdown %zu B, "
              "junit %zu B, gbench %zu B, samples side file %zu B\n",
              json.size(), html.size(), note.size(), md.size(), junit.size(), gbench.size(), samples.size());
  RecordProperty("json_bytes", static_cast<int>(json.size()));
  RecordProperty("html_bytes", static_cast<int>(html.size()));
  RecordProperty("note_bytes", static_cast<int>(note.size()));
  // KFORGE_REPORT_SIZE_DIR=DIR keeps the reports (tests/report/check_html.py times the HTML in headless Chromium).
  if (const char* dir = std::getenv("KFORGE_REPORT_SIZE_DIR"))
    for (auto& [name, text] : {std::pair{"seed.json", &json}, {"seed.html", &html}, {"seed.note.json", &note}, {"seed.md", &md}})
      write_file_atomic(std::filesystem::path(dir) / name, *text);
  EXPECT_LT(json.size(), 1000u * 1000);
  EXPECT_LT(html.size(), 2000u * 1000);
  EXPECT_LT(note.size(), 16u * 1024);
  EXPECT_LT(md.size(), 64u * 1024);
  // The samples went to the side file, at 6 significant digits: 3 million numbers in under 8 bytes each.
  EXPECT_GT(samples.size(), 30u * 5 * 20000 * 4);
  EXPECT_LT(samples.size(), 30u * 5 * 20000 * 8);
  EXPECT_EQ(json.find("samples_us"), std::string::npos);
  EXPECT_EQ(html.find("samples_us"), std::string::npos);
  EXPECT_EQ(note.find("samples_us"), std::string::npos);
}

// tests/report/check_html.py on the seed-sized HTML where Chromium is installed: under 2 MB, loaded (its script
// run, its table built) in under 2 s.
TEST(report_size, html_opens_quickly_in_headless_chromium) {
  bool any = false;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"})
    any = any || find_program(name).has_value();
  if (!any) GTEST_SKIP() << "no chromium: tests/report/check_html.py cannot time the HTML";
  temp_dir d;
  write_file_atomic(d.path() / "seed.html", render_html(seed_sized_run()));
  auto res = run_process({"python3", std::string(KFORGE_SOURCE_DIR) + "/tests/report/check_html.py", (d.path() / "seed.html").string()});
  EXPECT_TRUE(res.ok()) << res.out << res.err;
  EXPECT_THAT(res.out, ::testing::HasSubstr("; ok"));
}

}  // namespace
}  // namespace kf
