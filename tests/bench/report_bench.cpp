// Report writing for 1000 workloads, the gate over them, and the statistics it leans on.
#include <benchmark/benchmark.h>

#include "../support/report_fixture.h"
#include "gate/gate.h"
#include "measure/stats.h"
#include "register.h"  // baselines/
#include "report/reporter.h"

namespace {

const kf::run_result& thousand() {
  static const kf::run_result r = [] {
    kf::register_baselines();  // the reports' columns, as kforge's main registers them
    kf::run_result r = kf::fixture::run(1000, 2);
    kf::gate_spec g;
    g.must_beat = {"eager", "compile"};
    for (auto& w : r.workloads) kf::apply_gate(w, g, {nullptr, "", "no history"});
    return r;
  }();
  return r;
}

void bm_render(benchmark::State& state, const char* format) {
  const auto& rep = kf::find_reporter(format);
  const auto& r = thousand();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = rep.render(r);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK_CAPTURE(bm_render, junit, "junit")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_render, json, "json")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_render, markdown, "markdown")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_render, gbench, "gbench")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_render, html, "html")->Unit(benchmark::kMillisecond);

void bm_parse_json(benchmark::State& state) {
  std::string text = kf::render_json(thousand());
  for (auto _ : state) benchmark::DoNotOptimize(kf::run_result_from_json(nlohmann::json::parse(text)));
}
BENCHMARK(bm_parse_json)->Unit(benchmark::kMillisecond);

void bm_gate_1000(benchmark::State& state) {
  kf::run_result r = thousand();
  kf::gate_spec g;
  g.must_beat = {"eager", "compile"};
  for (auto _ : state)
    for (auto& w : r.workloads) kf::apply_gate(w, g, {nullptr, "", "no history"});
}
BENCHMARK(bm_gate_1000)->Unit(benchmark::kMillisecond);

void bm_summarize(benchmark::State& state) {
  auto s = kf::fixture::samples(50, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(kf::stats::summarize(s));
}
BENCHMARK(bm_summarize)->Arg(10)->Arg(100)->Arg(1000);

void bm_mann_whitney(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  auto a = kf::fixture::samples(50, n, 0.02, 1), b = kf::fixture::samples(51, n, 0.02, 2);
  for (auto _ : state) benchmark::DoNotOptimize(kf::stats::mann_whitney_u(a, b));
}
BENCHMARK(bm_mann_whitney)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
