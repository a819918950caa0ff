// What the sandbox costs a worker (docs/sandbox.md): starting a cpu kforge-worker to its first answer, with the
// sandbox off and on (namespaces, private /tmp, Landlock, the seccomp filter and its supervisor), and one request
// that passes the filter untouched.
#include <benchmark/benchmark.h>

#include "exec/worker_client.h"

namespace {

kf::worker_options cpu_worker(kf::sandbox_mode mode) {
  kf::worker_options o;
  o.device = {kf::device_kind::cpu, 0};
  o.sandbox = mode;
  return o;
}

void bm_worker_start(benchmark::State& state, kf::sandbox_mode mode) {
  for (auto _ : state) {
    kf::worker_client w(cpu_worker(mode));
    kf::worker_outcome o = w.request({{"cmd", "hello"}}, std::chrono::seconds(120));
    if (!o.ok()) state.SkipWithError(o.describe().c_str());
  }
}
BENCHMARK_CAPTURE(bm_worker_start, sandbox_off, kf::sandbox_mode::off)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_worker_start, sandbox_on, kf::sandbox_mode::on)->Unit(benchmark::kMillisecond);

void bm_worker_request(benchmark::State& state, kf::sandbox_mode mode) {
  kf::worker_client w(cpu_worker(mode));
  w.request({{"cmd", "hello"}}, std::chrono::seconds(120));
  for (auto _ : state) {
    kf::worker_outcome o = w.request({{"cmd", "hello"}}, std::chrono::seconds(30));
    if (!o.ok()) state.SkipWithError(o.describe().c_str());
  }
}
BENCHMARK_CAPTURE(bm_worker_request, sandbox_off, kf::sandbox_mode::off)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_worker_request, sandbox_on, kf::sandbox_mode::on)->Unit(benchmark::kMicrosecond);

}  // namespace
