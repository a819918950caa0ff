#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/kernel_header.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {

TEST(winners, finds_the_exact_key) {
  temp_dir d;
  write_file_atomic(d.path() / "sm90-nvidia-h200.cu", "// h200\n");
  write_file_atomic(d.path() / "sm90-nvidia-h200.json", R"({"median_us": 50})");
  write_file_atomic(d.path() / "sm90-nvidia-h100.cu", "// h100\n");
  auto w = find_winner(d.path(), "sm90-nvidia-h200");
  ASSERT_TRUE(w.kernel.has_value());
  EXPECT_EQ(w.kernel->source, d.path() / "sm90-nvidia-h200.cu");
  EXPECT_FALSE(w.kernel->fallback);
  EXPECT_EQ(w.kernel->meta["median_us"], 50);
  EXPECT_TRUE(w.kernel->note.empty());
}

TEST(winners, falls_back_to_the_same_arch_and_says_so) {
  temp_dir d;
  write_file_atomic(d.path() / "sm90-nvidia-h100.cu", "// h100\n");
  write_file_atomic(d.path() / "sm80-nvidia-a100.cu", "// a100\n");
  auto w = find_winner(d.path(), "sm90-nvidia-h200");
  ASSERT_TRUE(w.kernel.has_value());
  EXPECT_TRUE(w.kernel->fallback);
  EXPECT_EQ(w.kernel->gpu_key, "sm90-nvidia-h100");
  EXPECT_THAT(w.kernel->note, ::testing::HasSubstr("using the one stored for sm90-nvidia-h100 (same architecture sm90)"));
}

TEST(winners, no_kernel_names_what_is_there) {
  temp_dir d;
  write_file_atomic(d.path() / "sm80-nvidia-a100.cu", "// a100\n");
  auto w = find_winner(d.path(), "sm90-nvidia-h200");
  EXPECT_FALSE(w.kernel.has_value());
  EXPECT_THAT(w.why, ::testing::HasSubstr("no kernel for sm90-nvidia-h200"));
  EXPECT_THAT(w.why, ::testing::HasSubstr("(it has: sm80-nvidia-a100)"));
  EXPECT_FALSE(find_winner(d.path() / "missing", "sm90-nvidia-h200").kernel.has_value());
}

TEST(winners, cpu_keys_use_cpp_sources) {
  temp_dir d;
  write_file_atomic(d.path() / "cpu-x86-64.cu", "// wrong extension\n");
  EXPECT_FALSE(find_winner(d.path(), "cpu-x86-64").kernel.has_value());
  write_file_atomic(d.path() / "cpu-aarch64.cpp", "// arm\n");
  auto w = find_winner(d.path(), "cpu-x86-64");
  ASSERT_TRUE(w.kernel.has_value());
  EXPECT_TRUE(w.kernel->fallback);
  EXPECT_EQ(kernel_extension("cpu-x86-64"), ".cpp");
  EXPECT_EQ(arch_prefix("sm90-nvidia-h200"), "sm90");
}

TEST(winners, unreadable_metadata_is_noted_not_fatal) {
  temp_dir d;
  write_file_atomic(d.path() / "sm90-nvidia-h200.cu", "// k\n");
  write_file_atomic(d.path() / "sm90-nvidia-h200.json", "{ broken");
  auto w = find_winner(d.path(), "sm90-nvidia-h200");
  ASSERT_TRUE(w.kernel.has_value());
  EXPECT_THAT(w.kernel->note, ::testing::HasSubstr("not a JSON object"));
}

TEST(winners, write_then_find) {
  temp_dir d;
  auto dir = kernels_dir(d.path() / "workloads" / "w.yaml", "w");
  EXPECT_EQ(dir, d.path() / "workloads" / "w" / "kernels");
  winner_write w;
  w.workload = "w";
  w.source = "extern \"C\" int kf_launch() { return 0; }";
  w.provenance = {"found: by hand", "measured 50.1 us (eager 330 us)\n#include <evil>"};
  w.metadata = {{"median_us", 50.1}};
  auto k = write_winner(dir, "sm90-nvidia-h200", w);
  std::string text = read_file(k.source);
  // No kernel header (a proposer's rewrite): the provenance opens the file, a blank line after it.
  EXPECT_THAT(text, ::testing::StartsWith("// kforge winner: w on sm90-nvidia-h200\n// found: by hand\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("// measured 50.1 us (eager 330 us) #include <evil>\n\nextern"));
  EXPECT_THAT(text, ::testing::EndsWith("return 0; }\n"));
  auto found = find_winner(dir, "sm90-nvidia-h200");
  ASSERT_TRUE(found.kernel.has_value());
  EXPECT_EQ(found.kernel->meta["median_us"], 50.1);
  EXPECT_EQ(found.kernel->meta["gpu_key"], "sm90-nvidia-h200");
}

TEST(winners, provenance_follows_the_kernel_header) {
  temp_dir d;
  winner_write w;
  w.workload = "w";
  w.source = format_kernel_header({"row_softmax_cpu", 3, {{"threads", "all"}}, "x -> softmax"}) + "\n#include \"kf_abi.h\"\n";
  w.provenance = {"found: by `kforge search` (template proposer) on 2026-12-01T00:00:00Z", "lineage: default"};
  auto k = write_winner(d.path(), "cpu-x86-64", w);
  const std::string text = read_file(k.source);
  EXPECT_EQ(text,
            "// kforge kernel: family row_softmax_cpu, version 3\n// knobs: threads=all\n// computes: x -> softmax\n"
            "// kforge winner: w on cpu-x86-64\n"
            "// found: by `kforge search` (template proposer) on 2026-12-01T00:00:00Z\n// lineage: default\n"
            "\n#include \"kf_abi.h\"\n");
  EXPECT_EQ(without_provenance(text), w.source);
  EXPECT_EQ(parse_kernel_header(text)->version, 3);
}

// A proposer's rewrite that kept its parent's kernel header is stored without it: its .json names no family, and
// the header would claim one (with the parent's knobs).
TEST(winners, a_familyless_rewrite_drops_the_header_it_kept) {
  temp_dir d("kf-winners-rewrite");
  winner_write w;
  w.workload = "w";
  w.source = "// kforge kernel: family row_softmax_cpu, version 3\n// knobs: threads=all\n// computes: x -> softmax\n"
             "\n#include \"kf_abi.h\"\n";
  w.provenance = {"found: by `kforge search` (llm proposer)"};
  w.metadata = {{"family", ""}};
  const std::string text = read_file(write_winner(d.path(), "cpu-x86-64", w).source);
  EXPECT_FALSE(parse_kernel_header(text).has_value()) << text;
  EXPECT_THAT(text, ::testing::StartsWith("// kforge winner: w on cpu-x86-64\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("// rewritten from: a row_softmax_cpu version 3 kernel"));
  EXPECT_THAT(text, ::testing::HasSubstr("#include \"kf_abi.h\""));
}

}  // namespace
}  // namespace kf
