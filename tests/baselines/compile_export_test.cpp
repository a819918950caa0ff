// baselines/compile/export.py run as a subprocess on the cpu: a small softmax spec exports to a .pt2 package, and
// its --bench-lock makes inductor's timings wait for a lock another process holds. Skipped when python3 cannot
// import torch. (The export compiles C++ with g++: tens of seconds.)
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/spec_parse.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

const std::string k_script = KFORGE_SOURCE_DIR "/baselines/compile/export.py";

bool torch_importable(std::string* why) {
  process_options o;
  o.timeout = std::chrono::seconds(120);
  auto r = run_process({"python3", "-c", "import torch"}, o);
  *why = r.started ? r.describe() + ": " + r.err.substr(0, 200) : "python3 not found";
  return r.ok();
}

// The exporter's report: its last line of output.
nlohmann::json last_json_line(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return nlohmann::json::parse(s.substr(s.rfind('\n') + 1));
}

process_result run_export(const std::string& spec_json, const std::string& c, const std::string& out) {
  process_options o;
  o.timeout = std::chrono::minutes(20);
  return run_process({"python3", k_script, "--spec", spec_json, "--case", c, "--device", "cpu", "--out", out}, o);
}

TEST(compile_export, exports_a_small_softmax_to_pt2_on_cpu) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << "python3 cannot import torch: " << why;
  temp_dir d;
  workload_spec s;
  auto diags = parse_spec_text("version: 1\nname: t\ninputs:\n  x: {shape: [T, 24], dtype: float32}\n"
                               "graph:\n  - softmax: {input: x, dim: -1}\ncases: [{T: 3}]\n", "t.yaml", &s);
  ASSERT_TRUE(diags.empty());
  write_file_atomic(d.path() / "spec.json", to_json(s).dump());
  std::string out = (d.path() / "t.pt2").string();
  auto r = run_export((d.path() / "spec.json").string(), "T=3", out);
  ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.out << r.err;
  auto line = last_json_line(r.out);
  EXPECT_EQ(line.at("ok"), true);
  EXPECT_EQ(line.at("mode"), "default");
  EXPECT_EQ(line.at("inputs").at(0).at("shape"), nlohmann::json({3, 24}));
  EXPECT_TRUE(std::filesystem::exists(out));
  EXPECT_GT(std::filesystem::file_size(out), 1000u);
}

TEST(compile_export, unknown_case_fails_with_a_reason) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << "python3 cannot import torch: " << why;
  temp_dir d;
  workload_spec s = load_spec("qwen-router-softmax", KFORGE_SOURCE_DIR "/workloads");
  write_file_atomic(d.path() / "spec.json", to_json(s).dump());
  auto r = run_export((d.path() / "spec.json").string(), "T=9", (d.path() / "x.pt2").string());
  EXPECT_EQ(r.exit_code, 1);
  auto line = last_json_line(r.out);
  EXPECT_EQ(line.at("ok"), false);
  EXPECT_NE(line.at("error").get<std::string>().find("no case `T=9`"), std::string::npos) << line.dump();
  EXPECT_FALSE(std::filesystem::exists(d.path() / "x.pt2"));
}

// Concurrent exports on one GPU take turns to time kernels: with the lock held elsewhere, inductor's benchmarker
// waits, and runs once it is released.
TEST(compile_export, bench_lock_makes_inductor_timings_wait_for_the_lock) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << "python3 cannot import torch: " << why;
  temp_dir d;
  const auto lock = d.path() / "bench.lock", before = d.path() / "before", after = d.path() / "after";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const std::string script = fmt::format(
      "import sys; sys.path.insert(0, '{}')\n"
      "import export\n"
      "export.serialize_benchmarks('{}')\n"
      "from torch._inductor.runtime.benchmarking import benchmarker\n"
      "open('{}', 'w').close()\n"
      "benchmarker.benchmark(lambda: sum(range(100)), device='cpu')\n"
      "open('{}', 'w').close()\n",
      std::filesystem::path(k_script).parent_path().string(), lock.string(), before.string(), after.string());
  auto child = std::async(std::launch::async, [&] {
    process_options o;
    o.timeout = std::chrono::minutes(3);
    return run_process({"python3", "-c", script}, o);
  });
  // Wait for the child to reach the benchmark (importing torch takes seconds), then give it time to finish it.
  for (int i = 0; i < 1200 && !std::filesystem::exists(before); ++i)
    if (child.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) break;
  ASSERT_TRUE(std::filesystem::exists(before)) << child.get().describe() << "\n" << child.get().err;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(std::filesystem::exists(after)) << "the benchmark ran while another process held the lock";
  ASSERT_EQ(::flock(fd, LOCK_UN), 0);
  ::close(fd);
  auto r = child.get();
  EXPECT_TRUE(r.ok()) << r.describe() << "\n" << r.err.substr(0, 2000);
  EXPECT_TRUE(std::filesystem::exists(after));
}

}  // namespace
}  // namespace kf
