// `kforge capture` end to end: the real binary runs a tiny model (a Python file written here) on the cpu under
// lib/capture/trace.py, writes its specs, and `kforge validate` accepts them; the JSON summary says what was found
// and what is left. Needs python3 with torch (CI has it: LibTorch comes from its wheel); skips without it.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

// The same LayerNorm + GELU at two token counts (one workload, two cases, a symbol), a scaled softmax, and
// matmuls no spec expresses.
const char* k_model = R"(import torch
import torch.nn as nn
import torch.nn.functional as F


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.proj = nn.Linear(32, 32)

    def forward(self, a, b):
        a = self.proj(F.gelu(self.norm(a)))
        b = self.proj(F.gelu(self.norm(b)))
        s = torch.softmax(torch.matmul(a, a.transpose(-1, -2)) * 0.125, dim=-1)
        return s, b


def make(device="cpu"):
    torch.manual_seed(0)
    return Tiny().to(device), (torch.randn(2, 8, 32, device=device), torch.randn(2, 24, 32, device=device))
)";

process_result kforge(std::vector<std::string> args) {
  args.insert(args.begin(), std::string(KFORGE_BINARY_DIR) + "/kforge");
  process_options o;
  o.env_set = {{"OMP_NUM_THREADS", "1"}};  // a tiny model: threads only wait for each other on CI's two cores
  o.timeout = std::chrono::minutes(3);
  return run_process(args, o);
}

bool have_torch() {
  static const bool have = [] {
    process_options o;
    o.timeout = std::chrono::minutes(2);
    return run_process({"python3", "-c", "import torch"}, o).ok();
  }();
  return have;
}

}  // namespace

TEST(capture_cmd, captures_a_tiny_model_on_the_cpu_and_its_specs_validate) {
  if (!have_torch()) GTEST_SKIP() << "python3 cannot import torch";
  temp_dir d("kf-capture");
  write_file_atomic(d.path() / "tiny.py", k_model);
  const fs::path out = d.path() / "specs", summary = d.path() / "summary.json";
  auto r = kforge({"capture", "--model", (d.path() / "tiny.py").string() + ":make", "--device", "cpu", "--out",
                   out.string(), "--json", summary.string(), "--iters", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("layer_norm -> gelu"));
  EXPECT_THAT(r.out, HasSubstr("not expressible as a spec"));

  const nlohmann::json j = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(j["device"], "cpu");
  const nlohmann::json* norm = nullptr;
  for (const auto& w : j["workloads"])
    if (w["pattern"] == "layer_norm -> gelu") norm = &w;
  ASSERT_NE(norm, nullptr) << j.dump(2);
  EXPECT_EQ((*norm)["calls"], 2);
  EXPECT_EQ((*norm)["shapes"], 2);
  ASSERT_TRUE((*norm)["file"].is_string());
  const std::string spec = read_file((*norm)["file"].get<std::string>());
  EXPECT_THAT(spec, HasSubstr("x: {shape: [2, T, 32]"));
  EXPECT_THAT(spec, HasSubstr("# Where: norm + (model)"));
  bool softmax = false;
  for (const auto& w : j["workloads"]) softmax = softmax || w["pattern"] == "scale -> softmax";
  EXPECT_TRUE(softmax) << j.dump(2);
  std::vector<std::string> left;
  for (const auto& u : j["uncovered"]) left.push_back(u["op"]);
  EXPECT_THAT(left, ::testing::Contains("aten.bmm.default"));
  double shares = j["covered_share"].get<double>();
  for (const auto& u : j["uncovered"]) shares += u["share"].get<double>();
  EXPECT_NEAR(shares, 1.0, 1e-6);

  auto v = kforge({"validate", out.string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr(std::to_string(j["workloads"].size()) + " specs checked: " +
                                std::to_string(j["workloads"].size()) + " valid"));
}

TEST(capture_cmd, a_function_the_file_lacks_is_the_users_mistake) {
  if (!have_torch()) GTEST_SKIP() << "python3 cannot import torch";
  temp_dir d("kf-capture");
  write_file_atomic(d.path() / "tiny.py", k_model);
  auto r = kforge({"capture", "--model", (d.path() / "tiny.py").string() + ":build", "--device", "cpu", "--out",
                   (d.path() / "specs").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no function build"));
  EXPECT_FALSE(fs::exists(d.path() / "specs"));
}

TEST(capture_cmd, a_kept_trace_is_analyzed_without_python_and_top_limits_what_is_written) {
  temp_dir d("kf-capture");
  const fs::path out = d.path() / "specs";
  auto r = kforge({"capture", "--from-trace", std::string(KFORGE_SOURCE_DIR) + "/tests/data/capture/llama_block.json",
                   "--top", "2", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  size_t written = 0;
  for (const auto& e : fs::directory_iterator(out)) written += e.path().extension() == ".yaml";
  EXPECT_EQ(written, 2u);
  EXPECT_THAT(r.out, HasSubstr("2 specs written"));
  auto v = kforge({"validate", out.string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  auto bad = kforge({"capture"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("needs --model"));
}
