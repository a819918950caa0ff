// Drawing a case's inputs on the host (what the first candidate of a search waits for): a normal input of
// `elements` float32 values with the input cache off, on 1 thread and on all of LibTorch's threads.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "spec/input_cache_torch.h"
#include "spec/reference_torch.h"
#include "spec/spec_parse.h"

static kf::workload_spec normal_input(int64_t elements) {
  kf::workload_spec s;
  auto d = kf::parse_spec_text(fmt::format("version: 1\nname: draw\ninputs:\n"
                                           "  x: {{shape: [{}], dtype: bfloat16, init: {{normal: {{std: 1.0}}}}}}\n"
                                           "graph:\n  - softmax: {{input: x, dim: -1}}\ncases: [{{}}]\n",
                                           elements),
                               "draw.yaml", &s);
  if (!d.empty()) throw std::runtime_error(d.front().str());
  return s;
}

static void bm_draw_input(benchmark::State& state) {
  const int64_t elements = state.range(0);
  const int threads = state.range(1) ? at::get_num_threads() : 1;
  auto spec = normal_input(elements);
  kf::set_input_cache_budget(0);
  const int saved = at::get_num_threads();
  at::set_num_threads(threads);
  for (auto _ : state) benchmark::DoNotOptimize(kf::make_inputs(spec, spec.cases[0], 1, c10::Device(c10::kCPU)));
  at::set_num_threads(saved);
  state.counters["threads"] = threads;
  state.SetItemsProcessed(state.iterations() * elements);
}
BENCHMARK(bm_draw_input)->ArgsProduct({{1 << 20, 1 << 24, 1 << 26}, {0, 1}})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
