// The AOTInductor export cache with stand-in interpreters: a missing python, a python without torch, and a
// shell script that plays python-with-torch (so caching and keys are tested without a real export).
#include "compile/export_cache.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "exec/device.h"
#include "util/fs.h"

namespace kf {
namespace {

workload_spec tiny_spec() {
  workload_spec s;
  s.name = "tiny";
  s.hash = "0123abcd";
  case_spec c;
  c.name = "N=4";
  c.bindings = {{"N", 4}};
  c.gate = true;
  s.cases.push_back(c);
  return s;
}

std::filesystem::path write_script(const temp_dir& d, const std::string& name, const std::string& body) {
  auto p = d.path() / name;
  write_file_atomic(p, "#!/bin/sh\n" + body);
  std::filesystem::permissions(p, std::filesystem::perms::owner_all);
  return p;
}

export_options options_in(const temp_dir& d, const std::string& python) {
  export_options o;
  o.cache_root = d.path() / "cache";
  o.python = python;
  o.script = d.path() / "export.py";
  write_file_atomic(o.script, "# stand-in exporter\n");
  return o;
}

TEST(export_cache, missing_python_is_skipped_not_zero) {
  temp_dir d;
  export_cache cache(options_in(d, (d.path() / "no-such-python").string()));
  EXPECT_EQ(cache.unavailable().rfind("skipped: no python interpreter", 0), 0u) << cache.unavailable();
  export_outcome o = cache.get(tiny_spec(), "N=4", "cuda", "sm90-nvidia-h200", "default");
  EXPECT_FALSE(o.ok());
  EXPECT_TRUE(o.pt2.empty());
  nlohmann::json impl = cache.impl_for(tiny_spec(), {"N=4"}, "cuda", "sm90-nvidia-h200");
  EXPECT_TRUE(impl["pt2"].empty());
  EXPECT_EQ(impl["skipped"]["N=4"]["max-autotune"].get<std::string>().rfind("skipped: ", 0), 0u);
}

TEST(export_cache, python_without_torch_is_skipped_with_the_reason) {
  temp_dir d;
  auto py = write_script(d, "python", "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n");
  export_cache cache(options_in(d, py.string()));
  EXPECT_NE(cache.unavailable().find("cannot import torch"), std::string::npos) << cache.unavailable();
  EXPECT_NE(cache.unavailable().find("No module named 'torch'"), std::string::npos) << cache.unavailable();
  EXPECT_FALSE(cache.get(tiny_spec(), "N=4", "cpu", "cpu-x86-64", "default").ok());
}

// Plays python: `-c ...` prints a torch version; otherwise it is the exporter: counts its runs, fails for
// max-autotune, and writes the --out file.
const char* k_fake_python = R"(
if [ "$1" = "-c" ]; then echo "9.9.9+fake"; exit 0; fi
echo run >> "$(dirname "$0")/runs"
out=""; mode=""; spec=""
while [ $# -gt 0 ]; do
  case "$1" in --out) out="$2"; shift;; --mode) mode="$2"; shift;; --spec) spec="$2"; shift;;
    --bench-lock) echo "$2" >> "$(dirname "$0")/locks"; shift;; esac
  shift
done
grep -q '"name":"tiny"' "$spec" || { echo "spec json not passed" >&2; exit 3; }
if [ "$mode" = "max-autotune" ]; then echo "RuntimeError: autotune blew up"; exit 1; fi
echo package > "$out"
)";

TEST(export_cache, exports_once_then_hits_the_cache_keyed_by_mode) {
  temp_dir d;
  auto py = write_script(d, "python", k_fake_python);
  export_cache cache(options_in(d, py.string()));
  ASSERT_EQ(cache.unavailable(), "");
  EXPECT_EQ(cache.torch_version(), "9.9.9+fake");
  export_outcome first = cache.get(tiny_spec(), "N=4", "cuda", "sm90-nvidia-h200", "default");
  ASSERT_TRUE(first.ok()) << first.skipped << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(std::filesystem::exists(first.pt2));
  EXPECT_EQ(std::filesystem::path(first.pt2).parent_path(), std::filesystem::absolute(d.path() / "cache/aoti"));
  export_outcome again = cache.get(tiny_spec(), "N=4", "cuda", "sm90-nvidia-h200", "default");
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.pt2, first.pt2);
  EXPECT_EQ(read_file(d.path() / "runs"), "run\n");  // the second get did not run the exporter
  // Another GPU key is another package.
  EXPECT_NE(cache.key(tiny_spec(), "N=4", "sm100-nvidia-b200", "default"),
            cache.key(tiny_spec(), "N=4", "sm90-nvidia-h200", "default"));
  // A failing mode is a skip with the exporter's last words, and leaves no partial file behind.
  export_outcome failed = cache.get(tiny_spec(), "N=4", "cuda", "sm90-nvidia-h200", "max-autotune");
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.skipped.find("exit code 1"), std::string::npos) << failed.skipped;
  EXPECT_NE(failed.skipped.find("autotune blew up"), std::string::npos) << failed.skipped;
  int packages = 0, manifests = 0;
  for (auto& e : std::filesystem::directory_iterator(d.path() / "cache/aoti")) {
    packages += e.path().extension() == ".pt2";
    manifests += e.path().extension() == ".json";
  }
  EXPECT_EQ(packages, 1);
  EXPECT_EQ(manifests, 1);  // beside the package: what it was made from (tests/gpu/compile_parity.py reads it)
  std::string manifest_path = first.pt2.substr(0, first.pt2.size() - 4) + ".json";
  nlohmann::json manifest = nlohmann::json::parse(read_file(manifest_path));
  EXPECT_EQ(manifest["case"], "N=4");
  EXPECT_EQ(manifest["mode"], "default");
  EXPECT_EQ(manifest["spec"]["hash"], tiny_spec().hash);
  nlohmann::json impl = cache.impl_for(tiny_spec(), {"N=4"}, "cuda", "sm90-nvidia-h200");
  EXPECT_EQ(impl["pt2"]["N=4"]["default"], first.pt2);
  EXPECT_TRUE(impl["skipped"]["N=4"].contains("max-autotune"));
}

TEST(export_cache, prefetch_exports_every_workload_once_and_impl_for_then_hits_the_cache) {
  temp_dir d;
  auto py = write_script(d, "python", k_fake_python);
  export_cache cache(options_in(d, py.string()));
  auto a = tiny_spec(), b = tiny_spec();
  b.hash = "4567ef01";  // another workload: another package
  case_spec c8;
  c8.name = "N=8";
  c8.bindings = {{"N", 8}};
  b.cases.push_back(c8);
  // default exports; max-autotune fails (the stand-in says so) and is not counted.
  int exported = cache.prefetch({{&a, {"N=4"}}, {&b, {"N=4", "N=8"}}}, "cuda", "sm90-nvidia-h200");
  EXPECT_EQ(exported, 3);
  auto runs = read_file(d.path() / "runs");
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 6);  // 3 cases x 2 modes
  nlohmann::json impl = cache.impl_for(b, {"N=4", "N=8"}, "cuda", "sm90-nvidia-h200", {"default"});
  EXPECT_TRUE(impl["pt2"]["N=8"].contains("default"));
  runs = read_file(d.path() / "runs");
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 6);  // served from the cache
  EXPECT_EQ(cache.prefetch({{&a, {"N=4"}}}, "cuda", "sm90-nvidia-h200", {"default"}), 0);
}

// GPU exports take turns at timing kernels: each gets the device's lock file; cpu exports get none.
TEST(export_cache, gpu_exports_get_the_devices_bench_lock) {
  temp_dir d;
  auto py = write_script(d, "python", k_fake_python);
  export_cache cache(options_in(d, py.string()));
  ASSERT_TRUE(cache.get(tiny_spec(), "N=4", "cpu", "cpu-x86-64", "default").ok());
  EXPECT_FALSE(std::filesystem::exists(d.path() / "locks"));
  ASSERT_TRUE(cache.get(tiny_spec(), "N=4", "cuda", "sm90-nvidia-h200", "default").ok());
  ASSERT_TRUE(cache.get(tiny_spec(), "N=4", "cuda:1", "sm90-nvidia-h200-b", "default").ok());
  // The GPU's timing lock, the one kforge's own measure requests hold (exec/device.h).
  EXPECT_EQ(read_file(d.path() / "locks"), gpu_timing_lock(parse_device("cuda:0")).string() + "\n" +
                                               gpu_timing_lock(parse_device("cuda:1")).string() + "\n");
}

TEST(export_cache, unknown_case_is_skipped) {
  temp_dir d;
  auto py = write_script(d, "python", k_fake_python);
  export_cache cache(options_in(d, py.string()));
  EXPECT_NE(cache.get(tiny_spec(), "N=5", "cuda", "k", "default").skipped.find("no case `N=5`"), std::string::npos);
}

}  // namespace
}  // namespace kf
