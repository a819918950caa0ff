// The LLM proposer against a real loopback HTTP server: what it tells the model (parent source, spec, the
// failed siblings and why), the child it makes of the answer, and how it fails; then a search driven by it.
#include <cstdlib>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/loopback_server.h"
#include "search/family.h"
#include "search/llm_proposer.h"
#include "search/roots.h"
#include "search/search_driver.h"
#include "search_fake_evaluator.h"
#include "search_test_specs.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {

const std::string k_kernel =
    "#include \"kf_abi.h\"\nextern \"C\" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) { return 0; }\n";

// An OpenAI-compatible endpoint that answers with `answers` in turn (the last one repeats) and keeps the prompts.
struct fake_model {
  test::loopback_server srv;
  std::mutex mutex;
  std::vector<std::string> prompts;
  std::vector<double> temperatures;
  std::vector<std::string> answers;
  int status = 200;
  fake_model() {
    srv.server().Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      auto body = nlohmann::json::parse(req.body);
      prompts.push_back(body["messages"].back()["content"].get<std::string>());
      temperatures.push_back(body["temperature"].get<double>());
      if (status != 200) {
        res.status = status;
        res.set_content("{\"error\": \"no such model\"}", "application/json");
        return;
      }
      const std::string& a = answers[std::min(prompts.size(), answers.size()) - 1];
      res.set_content(nlohmann::json({{"choices", {{{"message", {{"role", "assistant"}, {"content", a}}}}}}}).dump(),
                      "application/json");
    });
  }
  llm::endpoint endpoint() const {
    llm::endpoint ep;
    ep.base_url = srv.url();
    ep.model = "test-model";
    ep.timeout = std::chrono::seconds(5);
    return ep;
  }
};

std::string fenced(const std::string& code) { return "Plan: unroll.\n```cpp\n" + code + "```\n"; }

TEST(llm_proposer, tells_the_model_what_failed_and_makes_a_child_of_its_code) {
  fake_model model;
  model.answers = {fenced(k_kernel)};
  auto spec = test::softmax_spec();
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  mcts_tree tree;
  auto root = tree.add(0, family_candidate(*f, spec, f->default_variant(spec), "default"));
  tree.record(root, node_status::measured, 42.0, std::log(2.0));
  candidate bad;
  bad.source = "// a sibling that read out of bounds\n";
  bad.source_hash = "bad";
  bad.origin = "llm:test-model";
  auto sib = tree.add(root, bad);
  tree.record(sib, node_status::verify_failed, std::nullopt, std::nullopt, "reads_outside_inputs[S=64]: 12 reads");

  llm_proposer p(model.endpoint(), 1);
  auto kids = p.propose({spec, device_kind::cpu, tree, root, 1});
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(kids[0].source, k_kernel);
  EXPECT_TRUE(kids[0].family.empty());
  EXPECT_EQ(kids[0].origin, "llm:test-model");
  EXPECT_FALSE(kids[0].source_hash.empty());
  ASSERT_EQ(model.prompts.size(), 1u);
  const std::string& prompt = model.prompts[0];
  EXPECT_NE(prompt.find(tree.at(root).cand.source.substr(0, 200)), std::string::npos);  // the parent's source
  EXPECT_NE(prompt.find("softcap"), std::string::npos);                                 // the graph
  EXPECT_NE(prompt.find("kf_launch"), std::string::npos);                               // the ABI header
  EXPECT_NE(prompt.find("42.00 us"), std::string::npos);                                // the parent's time
  EXPECT_NE(prompt.find("2.00x the fastest baseline"), std::string::npos);
  EXPECT_NE(prompt.find("reads_outside_inputs[S=64]: 12 reads"), std::string::npos);   // why the sibling failed
  EXPECT_EQ(kids[0].prompt, prompt);
  // the tree keeps which prompts asked, and the conversation a repair would continue (its answer last)
  EXPECT_NE(kids[0].prompt_version.find("rewrite:"), std::string::npos) << kids[0].prompt_version;
  auto conv = nlohmann::json::parse(kids[0].conversation);
  ASSERT_EQ(conv["messages"].size(), 3u);
  EXPECT_EQ(conv["messages"][2]["role"], "assistant");
  EXPECT_EQ(conv["messages"][2]["content"], fenced(k_kernel));
  EXPECT_EQ(conv["repair"], 0);
  EXPECT_FALSE(conv["key"].get<std::string>().empty());
}

// An answer without new code is asked again with another hint and a higher temperature; after three such answers
// the node gets nothing from this call (the driver closes it).
TEST(llm_proposer, asks_again_with_another_hint_then_gives_nothing_and_a_failing_endpoint_stops_the_search) {
  auto spec = test::softmax_spec();
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  mcts_tree tree;
  auto root = tree.add(0, family_candidate(*f, spec, f->default_variant(spec), "default"));
  {
    fake_model model;
    model.answers = {"I would rather not.", fenced("int no_entry_point;\n"), fenced(tree.at(root).cand.source),
                     fenced(k_kernel)};
    llm_proposer p(model.endpoint(), 1);
    // no code, no kf_launch, the kernel it was given back: nothing new
    EXPECT_TRUE(p.propose({spec, device_kind::cpu, tree, root, 1}).empty());
    ASSERT_EQ(model.prompts.size(), 3u);
    EXPECT_EQ(model.temperatures, (std::vector<double>{0.7, 0.85, 1.0}));
    EXPECT_NE(model.prompts[0], model.prompts[1]);  // another direction each time
    EXPECT_NE(model.prompts[1], model.prompts[2]);
    ASSERT_EQ(p.propose({spec, device_kind::cpu, tree, root, 1}).size(), 1u);  // the fourth answer is usable
  }
  {
    fake_model model;
    model.status = 404;
    llm_proposer p(model.endpoint(), 1);
    try {
      p.propose({spec, device_kind::cpu, tree, root, 1});
      FAIL() << "expected infra_error";
    } catch (const infra_error& e) {
      EXPECT_NE(std::string(e.what()).find("404"), std::string::npos) << e.what();
    }
  }
}

TEST(llm_proposer, drives_a_search_configured_from_the_environment) {
  fake_model model;
  // Three distinct rewrites, then repeats (which give nothing more for that node).
  model.answers = {fenced(k_kernel), fenced("// v2\n" + k_kernel), fenced("// v3\n" + k_kernel)};
  ::setenv("KFORGE_LLM_URL", model.srv.url().c_str(), 1);
  ::setenv("KFORGE_LLM_MODEL", "test-model", 1);
  ::setenv("KFORGE_LLM_API", "openai", 1);
  temp_dir dir("kf-search-llm");
  auto spec = test::softmax_spec();
  spec.hash = "h-llm";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 4;
  o.batch = 1;
  o.proposer = "llm";
  auto out = search_driver(spec, device_kind::cpu, "cpu-x86-64", db, ev, o)
                 .run(search_roots(spec, device_kind::cpu, "cpu-x86-64", "/nonexistent").roots);
  ::unsetenv("KFORGE_LLM_URL");
  ::unsetenv("KFORGE_LLM_MODEL");
  ::unsetenv("KFORGE_LLM_API");
  int from_llm = 0;
  for (auto& r : db.load_nodes(out.search_id)) {
    if (r.cand.origin != "llm:test-model") continue;
    ++from_llm;
    EXPECT_TRUE(r.parent.has_value());
    EXPECT_FALSE(r.cand.prompt.empty());
    EXPECT_NE(r.status, node_status::pending);  // evaluated like any other candidate
  }
  EXPECT_EQ(from_llm, 3);
  EXPECT_GE(model.prompts.size(), 3u);
}

TEST(llm_proposer, without_an_endpoint_the_proposer_is_refused_with_what_to_set) {
  ::unsetenv("KFORGE_LLM_URL");
  try {
    make_proposer("llm", 1);
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("KFORGE_LLM_URL"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kf
