// The typed measure client (pipeline/measure_call.h) against a real kforge-worker on the cpu device: what it sends
// is what the worker understands, and what it reads back is the worker's answer, failures included.
#include <chrono>

#include <gtest/gtest.h>

#include "exec/compile.h"
#include "pipeline/measure_call.h"
#include "spec/spec_parse.h"
#include "util/fs.h"

namespace kf {
namespace {

const char* k_spec = R"(version: 1
name: tiny-scale
model: test
inputs:
  x: {shape: [R, C], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - scale: {input: x, factor: 2.0}
cases:
  - {R: 8, C: 64, gate: true}
  - {R: 2, C: 3, gate: true}
  - {R: 3, C: 5}
baselines: [eager]
)";

const char* k_kernel = R"(#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream; (void)n_in; (void)n_out;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  long n = in[0].shape[0] * in[0].shape[1];
  for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i];
  return 0;
}
)";

const char* k_refusing_kernel = R"(#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) { return 7; }
)";

std::string compile_cpu(const std::string& source, const std::string& name, const temp_dir& d) {
  compile_options o;
  o.cache_root = d.path() / "cache";
  compiler cc(o);
  compile_result r = cc.compile({source, device_kind::cpu, "", {}, name});
  EXPECT_TRUE(r.ok) << r.error << "\n" << r.log;
  return r.so_path;
}

TEST(measure_call, the_request_holds_only_what_was_asked) {
  workload_spec spec;
  pipeline::measure_request q;
  q.spec = &spec;
  q.impls = {pipeline::impl_request::kernel("kernel", "/k.so"), pipeline::impl_request::kernel("slow", "/k.so", 5),
             pipeline::impl_request::of_kind("eager")};
  q.cases = {"R=8,C=64"};
  q.stopping.min_samples = 12;
  q.stopping.questions = nlohmann::json::array({{{"a", "kernel"}, {"b", "eager"}, {"threshold", 1.0}}});
  nlohmann::json j = q.to_json();
  EXPECT_EQ(j["cmd"], "measure");
  EXPECT_EQ(j["impls"][0], (nlohmann::json{{"kind", "kernel"}, {"name", "kernel"}, {"so", "/k.so"}}));
  EXPECT_EQ(j["impls"][1]["delay_us"], 5);
  EXPECT_EQ(j["impls"][2], (nlohmann::json{{"kind", "eager"}}));
  EXPECT_EQ(j["stopping"]["min_samples"], 12);
  EXPECT_FALSE(j["stopping"].contains("max_noise"));  // unset: the worker's default
  EXPECT_EQ(j["stopping"]["hot"], "auto");
  EXPECT_EQ(j["stopping"]["questions"][0]["b"], "eager");
  // The search's settings arrive as JSON and go back out unchanged.
  nlohmann::json search = {{"min_samples", 5}, {"max_noise", 0.02}, {"timeout_s", 2.0}, {"hot", false},
                           {"hot_below_us", 40.0}, {"cold_follows_hot", true}};
  nlohmann::json back = pipeline::stopping_rules::from_json(search).to_json();
  for (auto& [k, v] : search.items()) EXPECT_EQ(back[k], v) << k;
}

TEST(measure_call, reads_the_workers_answer_and_its_failures) {
  temp_dir d;
  workload_spec spec;
  auto diags = parse_spec_text(k_spec, (d.path() / "tiny-scale.yaml").string(), &spec);
  ASSERT_TRUE(diags.empty()) << diags[0].str();
  worker_client worker({.device = parse_device("cpu")});
  pipeline::measure_request q;
  q.spec = &spec;
  q.impls = {pipeline::impl_request::kernel("kernel", compile_cpu(k_kernel, "scale", d)),
             pipeline::impl_request::kernel("refuses", compile_cpu(k_refusing_kernel, "refuses", d)),
             pipeline::impl_request::of_kind("eager"), pipeline::impl_request::of_kind("vendor")};
  q.stopping.min_samples = 10;
  q.stopping.max_noise = 0.5;
  q.stopping.min_seconds = 0;
  q.stopping.timeout_s = 3;
  pipeline::measure_call c = pipeline::call_measure(worker, q, std::chrono::seconds(120));
  ASSERT_TRUE(c.ok()) << c.failure();
  for (const char* kase : {"R=8,C=64", "R=2,C=3"}) {  // every gated case, not the ungated one
    const pipeline::timed* k = c.reply.find("kernel", kase);
    ASSERT_NE(k, nullptr) << kase;
    EXPECT_TRUE(k->ok());
    EXPECT_GE(k->cold.samples_us.size(), 10u);
    EXPECT_FALSE(k->cold.stop.empty());
    const pipeline::timed* e = c.reply.find("eager", kase);
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(e->ok());
    const pipeline::timed* r = c.reply.find("refuses", kase);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->error, "launch returned 7");
    const pipeline::timed* v = c.reply.find("vendor", kase);
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(v->available);
    EXPECT_NE(v->not_available.find("cpu"), std::string::npos) << v->not_available;
    EXPECT_TRUE(c.reply.floors.contains(kase));
  }
  EXPECT_EQ(c.reply.find("kernel", "R=3,C=5"), nullptr);
  EXPECT_FALSE(c.reply.env.is_null());

  // A request the worker refuses reads as !ok with the worker's error, not as an empty success.
  q.cases = {"no-such-case"};
  pipeline::measure_call bad = pipeline::call_measure(worker, q, std::chrono::seconds(60));
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(bad.failure().empty());
  EXPECT_FALSE(bad.kernel_failed());
}

TEST(measure_call, a_garbled_answer_is_not_ok) {
  EXPECT_FALSE(pipeline::parse_measure_reply(nlohmann::json::array()).ok);
  auto no_results = pipeline::parse_measure_reply({{"ok", true}});
  EXPECT_FALSE(no_results.ok);
  EXPECT_EQ(no_results.error, "the worker's measure answer has no results");
  auto refused = pipeline::parse_measure_reply({{"ok", false}, {"error", "boom"}, {"kind", "candidate"}});
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error_kind, "candidate");
  pipeline::measure_call c = pipeline::read_measure_outcome(worker_outcome{worker_status::ok, {{"ok", false}, {"error", "boom"}, {"kind", "candidate"}}});
  EXPECT_TRUE(c.kernel_failed());
  EXPECT_EQ(c.failure(), "boom");
}

}  // namespace
}  // namespace kf
