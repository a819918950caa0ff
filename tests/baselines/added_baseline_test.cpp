// Adding a baseline is registering it (CONTRIBUTING.md "Adding a baseline"): a fake one, eager under another name
// on the cpu device, registered by the test alone, is accepted by spec parsing, timed by `kforge run`'s pipeline
// through a real worker, compared by the gate and shown by the reports, with no other file knowing its name.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/scoped_baseline.h"
#include "exec/device.h"
#include "pipeline/runner.h"
#include "pipeline/worker_backend.h"
#include "report/reporter.h"
#include "spec/spec_parse.h"
#include "util/fs.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string k_spec = R"(version: 1
name: twin-softmax
model: a test of a baseline only the test registers
inputs:
  x: {shape: [R, C], dtype: float32}
graph:
  - softmax: {input: x, dim: -1}
cases:
  - {R: 64, C: 128, gate: true}
  - {R: 5, C: 33}
baselines: [eager, twin]
gate: {must_beat: [twin]}
)";

// The worker already knows how to time eager; the twin asks for it under its own name, so its results, the gate's
// questions and checks and the reports' column all say "twin".
baseline twin() {
  return {.name = "twin",
          .summary = "LibTorch eager under another name (a test's)",
          .devices = {"cpu"},
          .by_default = false,
          .impl = {{"kind", "eager"}, {"name", "twin"}},
          .column = "twin (test)",
          .color = "#123456",
          .details = [](const nlohmann::json&) { return std::string("timed as eager"); },
          .details_title = "the twin's details"};
}

TEST(baselines, an_added_baseline_is_parsed_timed_gated_and_reported) {
  temp_dir dir("kf-added-baseline");
  const fs::path spec_path = dir.path() / "workloads" / "twin-softmax.yaml";
  write_file_atomic(spec_path, k_spec);
  EXPECT_THROW(load_spec(spec_path.string()), user_error);  // unknown until registered

  test::scoped_baseline registered(twin());
  workload_spec spec = load_spec(spec_path.string());
  EXPECT_EQ(spec.baselines, (std::vector<std::string>{"eager", "twin"}));
  EXPECT_EQ(spec.gate.must_beat, std::vector<std::string>{"twin"});
  EXPECT_EQ(workload_spec{}.baselines, (std::vector<std::string>{"eager", "compile", "vendor"}));  // not by default

  fs::create_directories(dir.path() / "workloads" / "twin-softmax" / "kernels");
  fs::copy_file(std::string(KFORGE_SOURCE_DIR) + "/tests/data/kernels/honest/naive.cpp",
                dir.path() / "workloads" / "twin-softmax" / "kernels" / (cpu_key() + ".cpp"));
  compile_options co;
  co.cache_root = dir.path() / "cache";
  worker_backend backend(device_id{device_kind::cpu, 0}, co, check_options{});
  run_options o;
  o.stopping = {.min_samples = 5, .max_noise = 0.05, .min_seconds = 0.01, .timeout_s = 2};
  run_result r = run_workloads({spec}, backend, nullptr, o);

  ASSERT_EQ(r.workloads.size(), 1u);
  const workload_result& w = r.workloads[0];
  ASSERT_TRUE(w.error.empty()) << w.error;
  ASSERT_EQ(w.verify.verdict, "passed");
  ASSERT_EQ(w.cases.size(), 1u);  // the gated case
  const impl_result* t = w.cases[0].find("twin");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->status, impl_status::ok) << t->why;
  EXPECT_FALSE(t->cold.samples_us.empty());
  EXPECT_EQ(t->description, "LibTorch eager, op by op");  // the worker's eager, reported as the twin
  ASSERT_NE(w.cases[0].find("eager"), nullptr);  // both timed in the same worker, under their own names
  EXPECT_EQ(w.cases[0].find("eager")->status, impl_status::ok);

  auto beats = std::find_if(w.checks.begin(), w.checks.end(),
                            [](const gate_check& c) { return c.test_name() == "beats[twin][R=64,C=128]"; });
  ASSERT_NE(beats, w.checks.end());
  EXPECT_FALSE(beats->advisory);  // must_beat: a required check
  EXPECT_NE(beats->outcome, check_outcome::skipped) << beats->sentence;

  std::string md = find_reporter("markdown").render(r);
  EXPECT_THAT(md, HasSubstr("| kernel | eager | compile | vendor | twin (test) | speedup |"));
  EXPECT_THAT(md, HasSubstr("<summary>the twin's details</summary>"));
  EXPECT_THAT(md, HasSubstr("- twin-softmax R=64,C=128: timed as eager"));
  std::string html = find_reporter("html").render(r);
  EXPECT_THAT(html, HasSubstr("<th>twin (test)</th>"));
  EXPECT_THAT(html, HasSubstr("fill=\"#123456\""));  // the speedup chart's bar
}

}  // namespace
}  // namespace kf
