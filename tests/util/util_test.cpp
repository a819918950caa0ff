#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/subprocess.h"
#include "util/suggest.h"
#include "util/text.h"

namespace kf {

TEST(suggest, finds_close_names) {
  EXPECT_EQ(did_you_mean("group_nrom", {"group_norm", "layer_norm", "softmax"}), "group_norm");
  EXPECT_EQ(did_you_mean("zzzzzzzz", {"group_norm", "softmax"}), "");
}

TEST(subprocess, captures_exit_code_and_output) {
  auto r = run_process({"sh", "-c", "echo hi; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(subprocess, kills_on_timeout) {
  process_options o;
  o.timeout = std::chrono::milliseconds(300);
  auto r = run_process({"sleep", "30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5);
}

TEST(fs, atomic_write_replaces_whole_file) {
  temp_dir d;
  auto p = d.path() / "sub" / "a.txt";
  write_file_atomic(p, "one");
  write_file_atomic(p, "two");
  EXPECT_EQ(read_file(p), "two");
}

}  // namespace kf

// A log's tail starts at a line when one starts within the kept characters, and says it was cut.
TEST(util, tail_text_keeps_the_last_lines) {
  EXPECT_EQ(kf::tail_text("short", 10), "short");
  EXPECT_EQ(kf::tail_text("first line\nsecond\nthird", 12), "...\nthird");
  EXPECT_EQ(kf::tail_text("0123456789abcdef", 4), "...cdef");  // no line within: the last characters
}
