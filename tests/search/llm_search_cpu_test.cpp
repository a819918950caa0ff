// The LLM proposer in real searches on the cpu device: a scripted loopback endpoint (cpp-httplib) answers, real
// compiles, a real kforge-worker verifying against LibTorch and timing, a real search db. The root is a kernel
// written by hand with no family and no knobs (as a generic code generator's root is), so nothing here leans on a
// kernel family. What is tested: a kernel that does not compile, or is wrong, goes back to the model with the
// compiler's or the verifier's message and its repair becomes its child; the search spends its budget; a record
// of the model's answers replays the same tree without the endpoint.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/loopback_server.h"
#include "search/search_driver.h"
#include "search/tree_export.h"
#include "search/worker_evaluator.h"
#include "search_test_specs.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

// silu over a float32 [R, D]: the roots below are built by hand (a kernel with no family), whatever family covers it.
workload_spec silu_spec() {
  workload_spec s;
  s.name = "test-llm-silu";
  s.inputs.push_back(test::tensor_input("x", {test::sym("R"), test::sym("D")}, dtype::float32));
  s.graph.push_back({"silu", {{"input", "x"}}, {}});
  s.cases = {test::make_case({{"R", 64}, {"D", 100}}, true), test::make_case({{"R", 3}, {"D", 7}}, false)};
  s.baselines = {"eager"};
  s.hash = "test-llm-silu-1";
  return s;
}

// A silu kernel as a model would write it: `body` computes y from v; `note` makes each answer its own source.
std::string silu_kernel(const std::string& body, const std::string& note = "") {
  return fmt::format(R"(// {}
#include "kf_abi.h"
#include <math.h>

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {{
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (long r = 0; r < in[0].shape[0]; ++r)
    for (long c = 0; c < in[0].shape[1]; ++c) {{
      const float v = x[r * in[0].stride[0] + c * in[0].stride[1]];
      y[r * out[0].stride[0] + c * out[0].stride[1]] = {};
    }}
  return 0;
}}
)",
                     note.empty() ? "silu" : note, body);
}
const char* k_silu = "v / (1.0f + expf(-v))";
const char* k_does_not_compile = "v / (1.0f + expf(-v)) + undeclared_bias";
const char* k_wrong = "v * 0.5f";

// The root: written by hand, no family, no knobs.
candidate hand_written_root() {
  candidate c;
  c.source = silu_kernel(k_silu, "silu, written by hand");
  c.source_hash = sha256_hex(c.source);
  c.origin = "hand-written";
  return c;
}

std::string fenced(const std::string& code) { return "Plan: as asked.\n```cpp\n" + code + "```\n"; }

// An OpenAI-compatible endpoint whose answer is `script(request number, the conversation's messages)`; it keeps
// every conversation it was sent.
struct scripted_model {
  using script_fn = std::function<std::string(int, const nlohmann::json&)>;
  test::loopback_server srv;
  std::mutex mutex;
  std::vector<nlohmann::json> conversations;
  script_fn script;
  explicit scripted_model(script_fn s) : script(std::move(s)) {
    srv.server().Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      auto body = nlohmann::json::parse(req.body);
      conversations.push_back(body["messages"]);
      const std::string a = script(static_cast<int>(conversations.size()), body["messages"]);
      res.set_content(nlohmann::json({{"choices", {{{"message", {{"role", "assistant"}, {"content", a}}}}}}}).dump(),
                      "application/json");
    });
  }
};

// Sets the endpoint variables for the llm proposer while in scope.
struct endpoint_env {
  explicit endpoint_env(const std::string& url) {
    ::setenv("KFORGE_LLM_URL", url.c_str(), 1);
    ::setenv("KFORGE_LLM_MODEL", "scripted", 1);
    ::setenv("KFORGE_LLM_API", "openai", 1);
  }
  ~endpoint_env() {
    ::unsetenv("KFORGE_LLM_URL");
    ::unsetenv("KFORGE_LLM_MODEL");
    ::unsetenv("KFORGE_LLM_API");
  }
};

const std::string& last_user(const nlohmann::json& messages) {
  return messages.back()["content"].get_ref<const std::string&>();
}

// A worker evaluator on the cpu device with eager as its baseline and short timings.
struct cpu_search {
  workload_spec spec = silu_spec();
  temp_dir dir{"kf-llm-search"};
  worker_evaluator_options eo = [this] {
    worker_evaluator_options o;
    o.device = device_id{device_kind::cpu, 0};
    o.gpu_key = "cpu-test";
    o.cache_root = dir.path() / "cache";
    o.baselines = {"eager"};
    o.seeds = 2;
    o.screen_stopping = {{"min_samples", 3}, {"max_noise", 0.5}, {"min_seconds", 0.0}, {"timeout_s", 1}};
    o.full_stopping = {{"min_samples", 5}, {"max_noise", 0.5}, {"min_seconds", 0.0}, {"timeout_s", 2}};
    return o;
  }();
  worker_evaluator ev{spec, eo};
  search_db db{dir.path() / "search.db"};

  search_outcome run(search_options o) {
    o.proposer = "llm";
    return search_driver(spec, device_kind::cpu, "cpu-test", db, ev, o).run({hand_written_root()});
  }
};

// Verified and timed: screened, or measured when its screen was close enough to the best for the full protocol.
bool passed(const node_row& r) { return r.status == node_status::screened || r.status == node_status::measured; }

const node_row* by_origin(const std::vector<node_row>& rows, const std::string& origin) {
  for (auto& r : rows)
    if (r.cand.origin == origin) return &r;
  return nullptr;
}

// A kernel that does not compile goes back to the model with the compiler's error; the fixed kernel it answers is
// the failed one's child, verified and timed; the tree keeps both attempts, with the prompts' versions.
TEST(llm_search_cpu, a_kernel_that_does_not_compile_is_repaired_from_the_compilers_message) {
  scripted_model model([](int, const nlohmann::json& messages) {
    const std::string& ask = last_user(messages);
    if (ask.find("undeclared_bias") != std::string::npos && ask.find("did not compile") != std::string::npos)
      return fenced(silu_kernel(k_silu, "fixed: no bias"));
    return fenced(silu_kernel(k_does_not_compile, "with a bias"));
  });
  endpoint_env env(model.srv.url());
  cpu_search s;
  search_options o;
  o.budget = 3;
  o.batch = 1;
  auto out = s.run(o);
  EXPECT_EQ(out.stop_reason, "budget");
  EXPECT_EQ(out.evaluations, 3);
  ASSERT_EQ(model.conversations.size(), 2u);
  // The repair continues the conversation: system, the rewrite request, the broken answer, the compiler's message.
  const auto& repair = model.conversations[1];
  ASSERT_EQ(repair.size(), 4u);
  EXPECT_EQ(repair[2]["role"], "assistant");
  EXPECT_NE(repair[2]["content"].get<std::string>().find("undeclared_bias"), std::string::npos);
  const std::string& message = last_user(repair);
  EXPECT_NE(message.find("kernel.cpp:"), std::string::npos) << message;  // the compiler's own words
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  EXPECT_NE(message.find("repair 1 of 3"), std::string::npos) << message;

  auto rows = s.db.load_nodes(out.search_id);
  ASSERT_EQ(rows.size(), 3u);
  const node_row* broken = by_origin(rows, "llm:scripted");
  const node_row* fixed = by_origin(rows, "llm-repair:1:scripted");
  ASSERT_TRUE(broken && fixed);
  EXPECT_EQ(broken->status, node_status::compile_failed);
  EXPECT_EQ(broken->parent, rows[0].id);  // a child of the hand-written root
  EXPECT_EQ(fixed->parent, broken->id);   // the repair is the failed attempt's child
  EXPECT_TRUE(passed(*fixed)) << fixed->detail;
  EXPECT_NE(broken->cand.prompt_version.find("rewrite:"), std::string::npos);
  EXPECT_NE(fixed->cand.prompt_version.find("repair:"), std::string::npos);
  EXPECT_EQ(fixed->cand.prompt, message);
  // --tree shows the chain: root -> broken -> fixed
  auto tree = search_tree_json(s.db, *s.db.find_search(s.spec.name, "cpu-test"));
  ASSERT_EQ(tree["nodes"].size(), 3u);
  EXPECT_EQ(tree["nodes"][2]["parent"], tree["nodes"][1]["id"]);
  EXPECT_EQ(tree["nodes"][2]["origin"], "llm-repair:1:scripted");
  EXPECT_NE(tree["nodes"][1]["status"].get<std::string>().find("failed"), std::string::npos);
  EXPECT_FALSE(tree["nodes"][2]["prompt_version"].get<std::string>().empty());
  ASSERT_TRUE(out.winner.has_value());
}

// A kernel that computes the wrong values goes back with the verifier's message (the rule, the case and the first
// wrong element); after two wrong repairs the third is right; each attempt is a node below the one before.
TEST(llm_search_cpu, a_wrong_kernel_is_repaired_from_the_verifiers_message_each_attempt_in_the_tree) {
  scripted_model model([](int n, const nlohmann::json& messages) {
    const std::string& ask = last_user(messages);
    if (ask.find("failed verification") != std::string::npos && ask.find("match on case") != std::string::npos &&
        messages.size() >= 6)  // the second repair request: two wrong answers before it
      return fenced(silu_kernel(k_silu, "right at last"));
    return fenced(silu_kernel(k_wrong, fmt::format("wrong guess {}", n)));
  });
  endpoint_env env(model.srv.url());
  cpu_search s;
  search_options o;
  o.budget = 4;
  o.batch = 1;
  auto out = s.run(o);
  EXPECT_EQ(out.evaluations, 4);
  ASSERT_EQ(model.conversations.size(), 3u);
  const std::string& message = last_user(model.conversations[1]);
  EXPECT_NE(message.find("failed verification"), std::string::npos) << message;
  EXPECT_NE(message.find("match on case R=64,D=100"), std::string::npos) << message;  // the rule and the case
  EXPECT_NE(message.find("got "), std::string::npos) << message;                      // the wrong element, its value
  EXPECT_NE(message.find("reference "), std::string::npos) << message;
  EXPECT_NE(message.find(" at ["), std::string::npos) << message;                     // and where it is

  auto rows = s.db.load_nodes(out.search_id);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].cand.origin, "llm:scripted");
  EXPECT_EQ(rows[2].cand.origin, "llm-repair:1:scripted");
  EXPECT_EQ(rows[3].cand.origin, "llm-repair:2:scripted");
  for (int i = 1; i < 4; ++i) EXPECT_EQ(rows[i].parent, rows[i - 1].id) << i;
  EXPECT_EQ(rows[1].status, node_status::verify_failed);
  EXPECT_EQ(rows[2].status, node_status::verify_failed);
  EXPECT_TRUE(passed(rows[3])) << rows[3].detail;
  EXPECT_NE(rows[1].detail.find("match"), std::string::npos) << rows[1].detail;
  // a winner found by a repair has the failed attempts in its lineage
  ASSERT_TRUE(out.winner.has_value());
  if (out.winner->id == rows[3].id) EXPECT_EQ(out.lineage.size(), 4u);
}

// With a budget of N evaluations the LLM proposer keeps expanding until N are spent: several answers per node
// (a repeated answer is asked again with another hint), rather than the search stopping as "converged".
TEST(llm_search_cpu, the_search_spends_its_budget_from_a_root_without_a_family) {
  scripted_model model([](int n, const nlohmann::json&) {
    // every third answer repeats the one before it: the proposer asks again rather than giving up on the node
    const int variant = n % 3 == 0 ? n - 1 : n;
    return fenced(silu_kernel(k_silu, fmt::format("variant {}", variant)));
  });
  endpoint_env env(model.srv.url());
  cpu_search s;
  search_options o;
  o.budget = 7;
  o.batch = 2;
  auto out = s.run(o);
  EXPECT_EQ(out.stop_reason, "budget");
  EXPECT_EQ(out.evaluations, 7);
  auto rows = s.db.load_nodes(out.search_id);
  int from_llm = 0, below_root = 0;
  for (auto& r : rows) {
    if (r.cand.origin != "llm:scripted") continue;
    ++from_llm;
    below_root += r.parent == rows[0].id;
    EXPECT_TRUE(r.cand.family.empty());
    EXPECT_NE(r.status, node_status::pending);
  }
  EXPECT_EQ(from_llm, 6);
  EXPECT_GE(below_root, 2);  // the root got several answers
  ASSERT_TRUE(out.winner.has_value());
}

// The tree as a replay must reproduce it: each node's parent, origin, source and whether it failed.
std::vector<std::string> tree_shape(search_db& db, int64_t search) {
  std::vector<std::string> out;
  auto rows = db.load_nodes(search);
  for (auto& r : rows) {
    int64_t parent = -1;
    for (size_t i = 0; i < rows.size(); ++i)
      if (r.parent && rows[i].id == *r.parent) parent = static_cast<int64_t>(i);
    out.push_back(fmt::format("{} <- {} {} {} {}", r.cand.origin, parent, r.cand.source_hash.substr(0, 12),
                              is_failure(r.status) ? "failed" : r.status == node_status::pending ? "pending" : "ok",
                              r.cand.prompt_version));
  }
  return out;
}

// --record-llm writes every request and answer; --replay-llm gives the same tree without the endpoint, and a
// replay that is asked what the record never was stops, naming the request. The budget is large enough that the
// search chooses among the root's children by their measured times (which differ from run to run): the replay
// follows the recorded search's choices.
TEST(llm_search_cpu, a_recorded_search_replays_to_the_same_tree_without_the_endpoint) {
  cpu_search s;
  const auto record = s.dir.path() / "llm.jsonl";
  search_options o;
  o.budget = 7;
  o.batch = 2;
  o.seed = 3;
  std::vector<std::string> recorded;
  {
    scripted_model model([](int n, const nlohmann::json& messages) {
      const std::string& ask = last_user(messages);
      if (ask.find("did not compile") != std::string::npos) return fenced(silu_kernel(k_silu, "fixed"));
      if (n == 1) return fenced(silu_kernel(k_does_not_compile, "first"));
      return fenced(silu_kernel(k_silu, fmt::format("rewrite {}", n)));
    });
    endpoint_env env(model.srv.url());
    o.llm_record = record.string();
    auto out = s.run(o);
    ASSERT_EQ(out.evaluations, 7);
    recorded = tree_shape(s.db, out.search_id);
    EXPECT_EQ(model.conversations.size(), 6u);  // a rewrite that fails, its repair, four more rewrites
  }
  ASSERT_TRUE(std::any_of(recorded.begin(), recorded.end(),
                          [](auto& l) { return l.starts_with("llm-repair:1:scripted"); }));
  // No endpoint now: the variables are unset, the server is gone.
  ASSERT_EQ(std::getenv("KFORGE_LLM_URL"), nullptr);
  o.llm_record.clear();
  o.llm_replay = record.string();
  o.fresh = true;
  auto again = s.run(o);
  EXPECT_EQ(again.evaluations, 7);
  EXPECT_EQ(tree_shape(s.db, again.search_id), recorded);

  // Another seed asks with other hints: the record has no answer, and the search stops saying which request.
  o.seed = 4;
  try {
    s.run(o);
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("no recorded answer for request 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kf
