// Hand-built run results for the report, gate and history tests and the report benchmark.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/run_result.h"
#include "report/summarize.h"

namespace kf::fixture {

// Deterministic samples around `median_us` with relative spread `spread` (xorshift; no <random> state).
inline std::vector<double> samples(double median_us, int n, double spread = 0.01, uint64_t seed = 1) {
  std::vector<double> out;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double u = static_cast<double>(x % 1000000) / 1000000.0 - 0.5;  // [-0.5, 0.5)
    out.push_back(median_us * (1 + spread * u));
  }
  return out;
}

inline impl_result impl(std::string name, double median_us, int n = 20, uint64_t seed = 1) {
  impl_result i;
  i.impl = std::move(name);
  i.cold.samples_us = samples(median_us, n, 0.01, seed);
  return i;
}

inline impl_result skipped(std::string name, std::string why) {
  impl_result i;
  i.impl = std::move(name);
  i.status = impl_status::skipped;
  i.why = std::move(why);
  return i;
}

inline run_env env() {
  run_env e;
  e.gpu_key = "sm90-nvidia-h200";
  e.gpu_name = "NVIDIA H200";
  e.device = "cuda:0";
  e.sm_count = 132;
  e.sm_clock_mhz = 1980;
  e.driver = "580.65";
  e.cuda_runtime = "13.0";
  e.cudnn = "9.10";
  e.torch = "2.11.0+cu130";
  e.git_commit = "0123456789abcdef0123456789abcdef01234567";
  e.started_at = "2026-11-30T04:00:00Z";
  e.host = "runner-1";
  return e;
}

// One workload with `cases` gated cases: kernel at `kernel_us`, eager 4x slower, compile 1.5x, vendor skipped.
inline workload_result workload(std::string name, int cases = 2, double kernel_us = 50) {
  workload_result w;
  w.name = std::move(name);
  w.spec_path = "workloads/" + w.name + ".yaml";
  w.kernel_path = "workloads/" + w.name + "/kernels/sm90-nvidia-h200.cu";
  w.kernel_key = "sm90-nvidia-h200";
  w.verify.verdict = "passed";
  for (int c = 0; c < cases; ++c) {
    case_result cr;
    cr.name = fmt::format("B=1,H=8,S={}", 1024 << c);
    double k = kernel_us * (1 << c);
    cr.impls = {impl("kernel", k, 20, 1), impl("eager", k * 4, 20, 2), impl("compile", k * 1.5, 20, 3),
                skipped("vendor", "cuDNN has no fused softcap softmax")};
    cr.floor.bytes = 64.0 * 1024 * 1024 * (1 << c);
    cr.floor.bandwidth_floor_us = k * 0.6;
    cr.floor.launch_floor_us = 3.5;
    cr.floor.floor_us = k * 0.6;
    summarize_case(cr);
    w.cases.push_back(cr);
    for (int seed = 1; seed <= 3; ++seed)
      w.verify.checks.push_back({"matches_reference", cr.name, seed, true, "max abs error 1e-4 <= atol 1e-3", {{"max_abs", 1e-4}}});
  }
  w.verify.checks.push_back({"static_scan", "", 0, true, "no forbidden calls", nlohmann::json::object()});
  w.seconds = 3.5;
  return w;
}

inline run_result run(int workloads, int cases = 2) {
  run_result r;
  r.env = env();
  r.baselines = {"eager", "compile", "vendor"};
  for (int i = 0; i < workloads; ++i) r.workloads.push_back(workload(fmt::format("softmax-{:04d}", i), cases));
  return r;
}

}  // namespace kf::fixture
