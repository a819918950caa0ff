// The `measure` command through a real kforge-worker on the cpu device: protocol-level checks of the timing
// protocol (sample counts, discards, floors, environment), of baselines that are not available there, and of
// candidates that fail while timed. No timing assertions: only that the numbers are there and sane.
#include <chrono>

#include <gtest/gtest.h>

#include "exec/compile.h"
#include "exec/worker_client.h"
#include "spec/spec_parse.h"
#include "util/fs.h"

namespace kf {
namespace {

const char* k_spec = R"(version: 1
name: tiny-softmax
model: test
inputs:
  x: {shape: [R, C], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: -1}
cases:
  - {R: 8, C: 64, gate: true}
  - {R: 3, C: 5}
baselines: [eager, compile, vendor]
)";

const char* k_kernel = R"(// row softmax for the measure test
#include "kf_abi.h"
#include <math.h>
extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KF_FLOAT32 || in[0].ndim != 2) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  long rows = in[0].shape[0], cols = in[0].shape[1];
  for (long r = 0; r < rows; ++r) {
    float m = -INFINITY, s = 0;
    for (long c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
    for (long c = 0; c < cols; ++c) s += expf(x[r * cols + c] - m);
    for (long c = 0; c < cols; ++c) y[r * cols + c] = expf(x[r * cols + c] - m) / s;
  }
  return 0;
}
)";

const char* k_refusing_kernel = R"(#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) { return 7; }
)";

workload_spec tiny_spec(const temp_dir& d) {
  workload_spec s;
  auto diags = parse_spec_text(k_spec, (d.path() / "tiny-softmax.yaml").string(), &s);
  EXPECT_TRUE(diags.empty()) << (diags.empty() ? "" : diags[0].str());
  return s;
}

std::string compile_cpu(const std::string& source, const std::string& name, const temp_dir& d) {
  compile_options o;
  o.cache_root = d.path() / "cache";
  compiler cc(o);
  compile_result r = cc.compile({source, device_kind::cpu, "", {}, name});
  EXPECT_TRUE(r.ok) << r.error << "\n" << r.log;
  return r.so_path;
}

const nlohmann::json* find_result(const nlohmann::json& results, const std::string& impl) {
  for (const auto& r : results)
    if (r.value("impl", "") == impl) return &r;
  return nullptr;
}

TEST(measure_worker, cpu_protocol_samples_floors_and_unavailable_baselines) {
  temp_dir d;
  workload_spec spec = tiny_spec(d);
  std::string good = compile_cpu(k_kernel, "softmax", d);
  std::string refusing = compile_cpu(k_refusing_kernel, "refuses", d);
  worker_client worker({.device = parse_device("cpu")});
  nlohmann::json request{
      {"cmd", "measure"},
      {"spec", to_json(spec)},
      {"impls",
       {{{"kind", "kernel"}, {"name", "mine"}, {"so", good}},
        {{"kind", "kernel"}, {"name", "refuses"}, {"so", refusing}},
        {{"kind", "eager"}},
        {{"kind", "vendor"}},
        {{"kind", "compile"}, {"pt2", nlohmann::json::object()}, {"skipped", {{"R=8,C=64", {{"default", "skipped: no python"}}}}}}}},
      {"cases", nlohmann::json::array()},
      {"stopping", {{"min_samples", 10}, {"max_noise", 0.5}, {"min_seconds", 0.0}, {"timeout_s", 3}, {"hot", "auto"}}}};
  worker_outcome o = worker.request(request, std::chrono::seconds(120));
  ASSERT_TRUE(o.ok()) << o.describe() << "\n" << o.stderr_tail;
  const nlohmann::json& r = o.response;
  ASSERT_TRUE(r.value("ok", false)) << r.dump(2);

  // Only the gated case is timed.
  for (const auto& res : r["results"]) EXPECT_EQ(res["case"], "R=8,C=64") << res.dump();
  for (const char* impl : {"mine", "eager"}) {
    const nlohmann::json* t = find_result(r["results"], impl);
    ASSERT_NE(t, nullptr) << impl << " in " << r["results"].dump(2);
    EXPECT_TRUE((*t)["available"].get<bool>());
    EXPECT_GE((*t)["cold"]["samples_us"].size(), 10u) << impl;
    EXPECT_EQ((*t)["cold"]["discarded"], 0) << impl;
    EXPECT_GT((*t)["cold"]["median_us"].get<double>(), 0) << impl;
    EXPECT_FALSE((*t)["cold"]["stop"].get<std::string>().empty());
  }
  const nlohmann::json* refuses = find_result(r["results"], "refuses");
  ASSERT_NE(refuses, nullptr);
  EXPECT_EQ((*refuses)["error"], "launch returned 7");
  const nlohmann::json* vendor = find_result(r["results"], "vendor");
  ASSERT_NE(vendor, nullptr);
  EXPECT_FALSE((*vendor)["available"].get<bool>());
  EXPECT_NE((*vendor)["not_available"].get<std::string>().find("not available on cpu"), std::string::npos);
  const nlohmann::json* compiled = find_result(r["results"], "compile");
  ASSERT_NE(compiled, nullptr);
  EXPECT_EQ((*compiled)["not_available"], "skipped: no python");

  // Floors: 8 x 64 float32 in and out, read once.
  const nlohmann::json& f = r["floor"]["R=8,C=64"];
  EXPECT_DOUBLE_EQ(f["bytes"].get<double>(), 2 * 8 * 64 * 4);
  EXPECT_GT(f["bandwidth_floor_us"].get<double>(), 0);
  EXPECT_GT(f["physical_floor_us"].get<double>(), 0);  // the cpu has no L2 entry: every byte counts, at 1.25x
  EXPECT_LT(f["physical_floor_us"].get<double>(), f["bandwidth_floor_us"].get<double>());
  EXPECT_GE(f["floor_us"].get<double>(), f["launch_floor_us"].get<double>());
  EXPECT_GT(r["copy_bandwidth_gbs"].get<double>(), 0);
  EXPECT_GE(r["launch_floor"]["cold"]["samples_us"].size(), 10u);
  EXPECT_EQ(r["env"]["device"], "cpu");
  EXPECT_FALSE(r["env"]["torch"].get<std::string>().empty());
}

TEST(measure_worker, bad_requests_are_said) {
  temp_dir d;
  workload_spec spec = tiny_spec(d);
  worker_client worker({.device = parse_device("cpu")});
  nlohmann::json stopping{{"min_samples", 2}, {"max_noise", 1.0}, {"min_seconds", 0.0}, {"timeout_s", 1}};
  worker_outcome unknown_kind = worker.request(
      {{"cmd", "measure"}, {"spec", to_json(spec)}, {"impls", {{{"kind", "magic"}}}}, {"stopping", stopping}},
      std::chrono::seconds(120));
  ASSERT_TRUE(unknown_kind.ok()) << unknown_kind.describe();
  EXPECT_FALSE(unknown_kind.response["ok"].get<bool>());
  EXPECT_NE(unknown_kind.response["error"].get<std::string>().find("unknown impl kind"), std::string::npos);
  worker_outcome unknown_case = worker.request({{"cmd", "measure"}, {"spec", to_json(spec)}, {"impls", {{{"kind", "eager"}}}},
                                                {"cases", {"R=9,C=9"}}, {"stopping", stopping}},
                                               std::chrono::seconds(120));
  ASSERT_TRUE(unknown_case.ok());
  EXPECT_FALSE(unknown_case.response["ok"].get<bool>());
  EXPECT_NE(unknown_case.response["error"].get<std::string>().find("no case"), std::string::npos);
}

}  // namespace
}  // namespace kf
