// The spec parser: the real workloads and the good corpus parse; every file of the broken corpus gives exactly
// the diagnostics its `# expect LINE:COL FIELD: MESSAGE` header lines list (location, field and message text).
#include <filesystem>
#include <fstream>
#include <regex>

#include <limits>

#include <gtest/gtest.h>

#include "spec/spec_parse.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
const std::string k_source = KFORGE_SOURCE_DIR;

std::string all_of(const std::vector<spec_diagnostic>& d) {
  std::string s;
  for (auto& x : d) s += "  " + x.str() + "\n";
  return s;
}

struct expectation {
  int line, column;
  std::string field, message;
};

std::vector<expectation> expectations(const std::string& path) {
  std::vector<expectation> out;
  std::ifstream f(path);
  std::string line;
  static const std::regex re(R"(^# expect (\d+):(\d+) (\S*): (.*)$)");
  while (std::getline(f, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back({std::stoi(m[1]), std::stoi(m[2]), m[3] == "-" ? "" : std::string(m[3]), m[4]});
  }
  return out;
}

TEST(spec_parse, seed_workloads_are_valid) {
  auto files = find_specs(k_source + "/workloads");
  ASSERT_GE(files.size(), 8u);
  for (auto& f : files) {
    workload_spec s;
    auto d = parse_spec(f, &s);
    EXPECT_TRUE(d.empty()) << f << ":\n" << all_of(d);
    EXPECT_EQ(s.name, fs::path(f).stem().string());
    EXPECT_EQ(s.hash, sha256_hex(read_file(f)));
    bool gated = false, odd = false;
    for (auto& c : s.cases) (c.gate ? gated : odd) = true;
    EXPECT_TRUE(gated && odd) << f << ": expected gated real shapes and correctness-only odd cases";
  }
}

TEST(spec_parse, good_corpus_is_valid) {
  auto files = find_specs(k_source + "/tests/data/specs/good");
  ASSERT_GE(files.size(), 3u);
  for (auto& f : files) {
    workload_spec s;
    auto d = parse_spec(f, &s);
    EXPECT_TRUE(d.empty()) << f << ":\n" << all_of(d);
  }
}

TEST(spec_parse, broken_corpus_gives_the_expected_diagnostics) {
  auto files = find_specs(k_source + "/tests/data/specs/broken");
  ASSERT_GE(files.size(), 30u);
  for (auto& f : files) {
    auto want = expectations(f);
    ASSERT_FALSE(want.empty()) << f << " has no `# expect` line";
    workload_spec s;
    auto got = parse_spec(f, &s);
    EXPECT_EQ(got.size(), want.size()) << f << ":\n" << all_of(got);
    for (auto& w : want) {
      bool found = false;
      for (auto& g : got)
        found = found || (g.loc.line == w.line && g.loc.column == w.column && g.field == w.field && g.message == w.message);
      EXPECT_TRUE(found) << f << ": expected " << w.line << ":" << w.column << " " << w.field << ": " << w.message
                         << "\ngot:\n" << all_of(got);
    }
    for (auto& g : got) EXPECT_EQ(g.loc.file, f);
  }
}

TEST(spec_parse, json_round_trip_keeps_everything) {
  workload_spec s = load_spec("qwen-router-topk", k_source + "/workloads");
  workload_spec back = spec_from_json(to_json(s));
  EXPECT_EQ(to_json(back), to_json(s));
  EXPECT_EQ(back.graph.at(1).args.at("k"), 8);
  EXPECT_EQ(back.graph.at(1).args.at("dim"), -1);
  EXPECT_EQ(back.graph.at(1).args.at("largest"), true);  // defaults are filled in
  EXPECT_EQ(back.gate.must_beat, (std::vector<std::string>{"eager", "compile"}));
  EXPECT_DOUBLE_EQ(back.gate.max_regression, 0.05);
}

TEST(spec_parse, percent_and_fraction_are_the_same_gate) {
  auto text = [](const std::string& r) {
    return "version: 1\nname: t\ninputs:\n  x: {shape: [4], dtype: float32}\ngraph:\n  - softmax: {input: x, dim: 0}\n"
           "cases: [{}]\ngate: {max_regression: " + r + "}\n";
  };
  for (auto r : {"5%", "0.05"}) {
    workload_spec s;
    auto d = parse_spec_text(text(r), "t.yaml", &s);
    EXPECT_TRUE(d.empty()) << all_of(d);
    EXPECT_DOUBLE_EQ(s.gate.max_regression, 0.05) << r;
  }
}

// rms_norm without eps: ATen takes the epsilon of its compute type (float32's for a float16 input, float64's for
// float64, after a cast too); the spec makes it explicit so eager, the float64 reference and the kernels agree.
TEST(spec_parse, rms_norm_eps_defaults_to_the_compute_type_s_epsilon) {
  auto eps_of = [](const std::string& dtype, const std::string& cast) {
    const std::string text = "version: 1\nname: t\ninputs:\n  x: {shape: [4, 8], dtype: " + dtype + "}\ngraph:\n" +
                             (cast.empty() ? "" : "  - cast: {input: x, dtype: " + cast + "}\n") +
                             "  - rms_norm: {" + (cast.empty() ? "input: x, " : "") + "normalized_shape: [8]}\ncases: [{}]\n";
    workload_spec s;
    auto d = parse_spec_text(text, "t.yaml", &s);
    EXPECT_TRUE(d.empty()) << all_of(d);
    return s.graph.back().args.value("eps", -1.0);
  };
  EXPECT_EQ(eps_of("float16", ""), static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_EQ(eps_of("bfloat16", ""), static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_EQ(eps_of("float64", ""), std::numeric_limits<double>::epsilon());
  EXPECT_EQ(eps_of("float16", "float64"), std::numeric_limits<double>::epsilon());
  workload_spec given;  // an explicit eps stays
  EXPECT_TRUE(parse_spec_text("version: 1\nname: t\ninputs:\n  x: {shape: [4, 8], dtype: float16}\ngraph:\n"
                              "  - rms_norm: {input: x, normalized_shape: [8], eps: 0.001}\ncases: [{}]\n",
                              "t.yaml", &given).empty());
  EXPECT_EQ(given.graph.back().args.value("eps", -1.0), 0.001);
}

TEST(spec_parse, load_spec_by_name_and_by_path) {
  auto dir = k_source + "/workloads";
  EXPECT_EQ(load_spec("gemma-attn-softmax", dir).name, "gemma-attn-softmax");
  EXPECT_EQ(load_spec(dir + "/gemma-attn-softmax.yaml").cases.size(), 4u);
  try {
    load_spec("gemma-atn-softmax", dir);
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean `gemma-attn-softmax`?"), std::string::npos) << e.what();
  }
}

TEST(spec_parse, load_spec_lists_every_error) {
  temp_dir d;
  write_file_atomic(d.path() / "w.yaml", "version: 2\nname: w\ninputs: {x: {shape: [4], dtype: float33}}\n"
                                          "graph: [{softmax: {input: x, dim: 0}}]\ncases: [{}]\n");
  try {
    load_spec("w", d.path().string());
    FAIL();
  } catch (const user_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("has 2 errors"), std::string::npos) << m;
    EXPECT_NE(m.find("w.yaml:1:10: version: unsupported version 2"), std::string::npos) << m;
    EXPECT_NE(m.find("w.yaml:3:33: inputs.x.dtype: unknown dtype `float33`; did you mean `float32`?"), std::string::npos) << m;
  }
}

TEST(spec_parse, case_names_follow_binding_order) {
  workload_spec s = load_spec("gemma-attn-softmax", k_source + "/workloads");
  EXPECT_EQ(s.cases.at(0).name, "B=1,H=8,S=2048");
  EXPECT_TRUE(s.cases.at(0).gate);
  EXPECT_EQ(s.cases.at(1).devices, (std::vector<std::string>{"cuda"}));
  EXPECT_FALSE(s.cases.at(2).gate);
  EXPECT_EQ(s.cases.at(2).name, "B=2,H=3,S=1000");
}

// kforge capture's share and calls on a case: optional data (kforge e2e's Amdahl prediction), checked like the rest,
// and carried through the worker's JSON.
TEST(spec_parse, a_case_may_carry_the_captures_share_and_calls) {
  const std::string head = "version: 1\nname: w\ninputs: {x: {shape: [S, 4], dtype: float32}}\n"
                           "graph: [{softmax: {input: x, dim: -1}}]\ncases:\n";
  workload_spec s;
  ASSERT_TRUE(parse_spec_text(head + "  - {S: 2, gate: true, share: 4.7%, calls: 3}\n  - {S: 5}\n", "w.yaml", &s).empty());
  ASSERT_TRUE(s.cases.at(0).share.has_value());
  EXPECT_DOUBLE_EQ(*s.cases[0].share, 0.047);
  EXPECT_EQ(s.cases[0].calls, 3);
  EXPECT_EQ(s.cases[0].name, "S=2");  // not a binding
  EXPECT_FALSE(s.cases.at(1).share.has_value());
  workload_spec back = spec_from_json(to_json(s));
  EXPECT_EQ(back.cases[0].share, s.cases[0].share);
  EXPECT_EQ(back.cases[0].calls, 3);
  EXPECT_FALSE(back.cases[1].calls.has_value());
  auto diags = parse_spec_text(head + "  - {S: 2, share: 150%, calls: 0}\n", "w.yaml", &s);
  std::string all;
  for (const auto& d : diags) all += d.str() + "\n";
  EXPECT_NE(all.find("cases[0].share: expected a fraction in [0, 1)"), std::string::npos) << all;
  EXPECT_NE(all.find("cases[0].calls: expected a count >= 1, got 0"), std::string::npos) << all;
}

TEST(hash, sha256_known_vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Families tune for the gated cases when a spec gates any (the others need only be right), otherwise for all.
TEST(spec_parse, tuning_shapes_are_the_gated_cases_when_any_is_gated) {
  const char* text = R"(version: 1
name: t
inputs:
  x: {shape: [R, 64], dtype: float32}
graph:
  - relu: {input: x}
cases: [{R: 1}, {R: 8, gate: true}, {R: 3}, {R: 9, gate: true}]
)";
  workload_spec s;
  auto d = parse_spec_text(text, "", &s);
  ASSERT_TRUE(d.empty()) << all_of(d);
  EXPECT_EQ(tuning_shapes(s, s.inputs[0]), (std::vector<std::vector<int64_t>>{{8, 64}, {9, 64}}));
  for (auto& c : s.cases) c.gate = false;
  EXPECT_EQ(tuning_shapes(s, s.inputs[0]), (std::vector<std::vector<int64_t>>{{1, 64}, {8, 64}, {3, 64}, {9, 64}}));
}

}  // namespace
}  // namespace kf
