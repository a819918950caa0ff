#include <gtest/gtest.h>

#include "llm/prompt.h"

namespace kf::llm {

TEST(llm_prompt, includes_context_and_failed_siblings) {
  rewrite_request r;
  r.device = "cuda (NVIDIA H200, sm_90a)";
  r.spec_yaml = "name: w";
  r.reference = "softmax(x, dim=-1)";
  r.parent_source = "PARENT_SRC";
  r.parent_timing = "100 us, floor 50 us";
  r.failed_siblings = {{"verify failed: rerun differs", "RACY"}};
  auto msgs = build_messages(r);
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
