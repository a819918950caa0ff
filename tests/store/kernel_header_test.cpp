// The comment a kernel opens with (store/kernel_header.h): written and read back, and a stored winner's provenance
// put after it and taken off again.
#include <gtest/gtest.h>

#include "store/kernel_header.h"

namespace kf {
namespace {

const kernel_header k_header = {"group_norm_cuda", 2, {{"strategy", "stream"}, {"vec", "8"}}, "x[bfloat16] -> silu"};

TEST(kernel_header, reads_back_what_it_writes) {
  const std::string text = format_kernel_header(k_header);
  EXPECT_EQ(text,
            "// kforge kernel: family group_norm_cuda, version 2\n// knobs: strategy=stream vec=8\n"
            "// computes: x[bfloat16] -> silu\n");
  auto h = parse_kernel_header(text + "\n#include \"kf_abi.h\"\n");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->family, k_header.family);
  EXPECT_EQ(h->version, 2);
  EXPECT_EQ(h->knobs, k_header.knobs);
  EXPECT_EQ(h->computes, k_header.computes);
}

TEST(kernel_header, says_why_a_source_has_none) {
  std::string why;
  // A winner stored before families had versions opened with its provenance and a candidate comment.
  EXPECT_FALSE(parse_kernel_header("// kforge winner: w on cpu-x86-64\n// family: f\n", &why));
  EXPECT_NE(why.find("// kforge winner: w on cpu-x86-64"), std::string::npos) << why;
  EXPECT_FALSE(parse_kernel_header("// kforge kernel: family f\n// knobs: a=1\n// computes: x\n", &why));
  EXPECT_NE(why.find("names no version"), std::string::npos) << why;
  EXPECT_FALSE(parse_kernel_header("// kforge kernel: family f, version x\n// knobs: a=1\n// computes: x\n", &why));
  EXPECT_FALSE(parse_kernel_header("// kforge kernel: family f, version 1\n// knobs: a\n// computes: x\n", &why));
  EXPECT_NE(why.find("knob=value"), std::string::npos) << why;
}

TEST(kernel_header, provenance_goes_after_the_header_and_comes_off_again) {
  const std::string source = format_kernel_header(k_header) + "\n#include \"kf_abi.h\"\nint x;\n";
  const std::string stored =
      with_provenance(source, {"kforge winner: w on sm90-nvidia-h200", "measured: 1 us\n#include <evil>"});
  EXPECT_EQ(stored.find("// kforge winner: w on sm90-nvidia-h200\n// measured: 1 us #include <evil>\n\n#include"),
            format_kernel_header(k_header).size());
  EXPECT_EQ(without_provenance(stored), source);
  EXPECT_EQ(provenance_lines(stored),
            (std::vector<std::string>{"kforge winner: w on sm90-nvidia-h200", "measured: 1 us #include <evil>"}));
  EXPECT_EQ(parse_kernel_header(stored)->knobs, k_header.knobs);
  // Without a header (a proposer's rewrite), the provenance opens the file, a blank line after it.
  const std::string rewrite = "#include \"kf_abi.h\"\n";
  const std::string stored_rewrite = with_provenance(rewrite, {"kforge winner: w on cpu-x86-64"});
  EXPECT_EQ(stored_rewrite, "// kforge winner: w on cpu-x86-64\n\n#include \"kf_abi.h\"\n");
  EXPECT_EQ(without_provenance(stored_rewrite), rewrite);
  EXPECT_EQ(provenance_lines(stored_rewrite), std::vector<std::string>{"kforge winner: w on cpu-x86-64"});
  EXPECT_EQ(without_provenance(rewrite), rewrite);
  EXPECT_TRUE(provenance_lines(source).empty());
}

}  // namespace
}  // namespace kf
