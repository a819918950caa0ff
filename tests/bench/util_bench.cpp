#include <benchmark/benchmark.h>

#include "util/suggest.h"

static void bm_did_you_mean(benchmark::State& state) {
  std::vector<std::string> names = {"softcap", "scale", "add_mask", "softmax", "log_softmax", "topk", "group_norm"};
  for (auto _ : state) benchmark::DoNotOptimize(kf::did_you_mean("group_nrom", names));
}
BENCHMARK(bm_did_you_mean);

BENCHMARK_MAIN();
