#include <fmt/format.h>
#include <gtest/gtest.h>

#include "llm/prompt.h"
#include "llm/prompt_files.h"

namespace kf::llm {

TEST(llm_prompt, includes_context_and_failed_siblings) {
  rewrite_request r;
  r.device = "cuda (NVIDIA H200, sm_90a)";
  r.spec_yaml = "name: w";
  r.reference = "softmax(x, dim=-1)";
  r.parent_source = "PARENT_SRC";
  r.parent_timing = "100 us, floor 50 us";
  r.failed_siblings = {{"verify failed: rerun differs", "RACY"}};
  auto msgs = build_messages(r).messages;
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_NE(msgs[0].content.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(msgs[1].content.find("PARENT_SRC"), std::string::npos);
  EXPECT_NE(msgs[1].content.find("floor 50 us"), std::string::npos);
  EXPECT_NE(msgs[1].content.find("rerun differs"), std::string::npos);
  EXPECT_NE(msgs[1].content.find("RACY"), std::string::npos);
}

TEST(llm_prompt, extracts_longest_block_with_kf_launch) {
  std::string why;
  auto src = extract_source("plan\n```\nshort\n```\nthen\n```cuda\n#include \"kf_abi.h\"\nint kf_launch();\n```\n", &why);
  ASSERT_TRUE(src) << why;
  EXPECT_EQ(*src, "#include \"kf_abi.h\"\nint kf_launch();\n");
}

TEST(llm_prompt, rejects_answers_without_code_or_entry_point) {
  std::string why;
  EXPECT_FALSE(extract_source("no code here", &why));
  EXPECT_NE(why.find("no fenced"), std::string::npos);
  EXPECT_FALSE(extract_source("```\nint main() {}\n```", &why));
  EXPECT_NE(why.find("kf_launch"), std::string::npos);
}

TEST(llm_prompt, takes_an_unterminated_block) {
  std::string why;
  auto src = extract_source("```cpp\nint kf_launch() { return 0; }", &why);
  ASSERT_TRUE(src) << why;
  EXPECT_NE(src->find("return 0"), std::string::npos);
}

}  // namespace kf::llm

namespace kf::llm {

// The prompt texts are files with a version: each embedded one parses, and the rewrite and repair requests are
// those files filled in (no template syntax left, every value in its place).
TEST(llm_prompt, the_prompts_are_versioned_files_filled_in) {
  std::vector<std::string> names;
  for (auto* p : prompts()) {
    names.push_back(p->name);
    EXPECT_GE(p->version, 1) << p->name;
    EXPECT_EQ(p->text.find("<!--"), std::string::npos) << p->name << ": the opening comment is not sent";
  }
  EXPECT_EQ(names, (std::vector<std::string>{"system", "rewrite", "repair"}));
  rewrite_request r;
  r.device = "the CPU";
  r.spec_yaml = "name: w\n";
  r.reference = "- silu: {}\n";
  r.abi_header = "ABI";
  r.parent_source = "int kf_launch();\n";
  r.parent_timing = "12.00 us";
  r.tried = {{"llm:m", "10.00 us"}};
  auto b = build_messages(r);
  EXPECT_EQ(b.prompt_version, fmt::format("system:{} rewrite:{}", prompt("system").version, prompt("rewrite").version));
  for (auto* m : {&b.messages, &b.masked}) {
    ASSERT_EQ(m->size(), 2u);
    for (auto& x : *m) EXPECT_EQ(x.content.find("{{"), std::string::npos) << x.content;
  }
  const std::string& user = b.messages[1].content;
  EXPECT_NE(user.find("```cpp\nint kf_launch();\n```"), std::string::npos) << user;  // cpu: a cpp fence
  EXPECT_NE(user.find("- llm:m: 10.00 us"), std::string::npos) << user;
  EXPECT_EQ(user.find("Compiler resource report"), std::string::npos) << "an empty section is left out";
  EXPECT_EQ(user.find("\n\n\n"), std::string::npos) << user;
  EXPECT_NE(b.messages[0].content.find("OpenMP"), std::string::npos);  // the cpu's rules, not CUDA's
  EXPECT_EQ(b.messages[0].content.find("CUDA/CCCL"), std::string::npos);
  // What differs from run to run (measured times) is masked in what the replay key hashes, nothing else.
  EXPECT_EQ(b.masked[1].content.find("12.00 us"), std::string::npos);
  EXPECT_EQ(b.masked[1].content.find("10.00 us"), std::string::npos);
  EXPECT_NE(b.masked[1].content.find("int kf_launch();"), std::string::npos);

  auto m = build_repair({"did not compile", "kernel.cpp:3:1: error: 'y' was not declared\n", 2, 3});
  EXPECT_EQ(m.role, "user");
  EXPECT_NE(m.content.find("did not compile"), std::string::npos);
  EXPECT_NE(m.content.find("kernel.cpp:3:1: error: 'y' was not declared"), std::string::npos);
  EXPECT_NE(m.content.find("repair 2 of 3"), std::string::npos);
}

TEST(llm_prompt, templates_fill_values_and_sections) {
  EXPECT_EQ(render("a {{x}} b", {{"x", "{{y}}"}}), "a {{y}} b");  // values are not read as templates
  EXPECT_EQ(render("{{#x}}has {{x}}{{/x}}{{^x}}none{{/x}}", {{"x", ""}}), "none");
  EXPECT_EQ(render("{{#x}}has {{x}}{{/x}}{{^x}}none{{/x}}", {{"x", "1"}}), "has 1");
  // a line holding a section tag alone goes with its newline
  EXPECT_EQ(render("top\n{{#x}}\nmiddle {{x}}\n{{/x}}\nend\n", {{"x", ""}}), "top\nend\n");
  EXPECT_EQ(render("top\n{{#x}}\nmiddle {{x}}\n{{/x}}\nend\n", {{"x", "2"}}), "top\nmiddle 2\nend\n");
  EXPECT_DEATH(render("{{missing}}", {}), "missing");
}

}  // namespace kf::llm
