// The cpu families: which graphs they cover, that their sources compile for every value of every knob, and that
// a compiled candidate computes the right numbers (against a double-precision reference written here).
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/kf_abi.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "../support/family_verify.h"
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
      {"layer_norm_gelu", row_norm_spec(false), "row_norm_cpu"},
      {"rms_norm_gelu", row_norm_spec(true), "row_norm_cpu"},
      {"pool", pool_spec(), "pool_cpu"},
      {"pool_cl_bf16", pool_spec("channels_last", dtype::bfloat16), "pool_cpu"},
      {"adaptive_pool", adaptive_pool_spec(), "adaptive_pool_cpu"},
      {"adaptive_pool_cl_bf16", adaptive_pool_spec("channels_last", dtype::bfloat16, 7, 7), "adaptive_pool_cpu"},
      {"swiglu", swiglu_spec(), "pointwise_cpu"},
      {"bias_gelu", bias_gelu_spec(), "pointwise_cpu"},
      {"col_softmax", col_softmax_spec(), "col_softmax_cpu"},
      {"col_log_softmax_bf16", col_softmax_spec(0, true, dtype::bfloat16, dtype::bfloat16), "col_softmax_cpu"},
      {"matmul", matmul_spec(), "generic_cpu"},  // no other family covers it: the fallback
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

// f16_load changes the source only where the spec has a float16 value (elsewhere both values emit one source, so the
// search spends nothing on it); row_softmax_cpu takes the hardware's load there by default, the families whose loops
// vectorize with the bit operations keep them. Every cpu family with the prelude has the knob.
TEST(families_cpu, f16_load_is_read_only_where_the_spec_has_float16) {
  using namespace test;
  struct one {
    std::string family;
    workload_spec f16, other;
    std::string f16_default;
  };
  std::vector<one> all = {
      {"row_softmax_cpu", softmax_spec(true, false, 0, dtype::float16), softmax_spec(true), "hw"},
      {"pool_cpu", pool_spec("contiguous", dtype::float16), pool_spec("channels_last", dtype::bfloat16), "bits"},
      {"adaptive_pool_cpu", adaptive_pool_spec(), adaptive_pool_spec("channels_last", dtype::bfloat16), "bits"},
      {"group_norm_cpu", group_norm_spec(true, dtype::float16), group_norm_spec(), "bits"},
      {"row_norm_cpu", row_norm_spec(true, dtype::float16), row_norm_spec(true, dtype::bfloat16), "bits"},
      {"pointwise_cpu", swiglu_spec(dtype::float16), swiglu_spec(), "bits"},
      {"col_softmax_cpu", col_softmax_spec(), col_softmax_spec(1, false, dtype::bfloat16), "bits"},
  };
  std::set<std::string> with_knob;
  for (auto& f : families())
    for (auto& k : f->knobs())
      if (k.name == "f16_load") with_knob.insert(f->name());
  std::set<std::string> listed;
  for (auto& o : all) listed.insert(o.family);
  EXPECT_EQ(with_knob, listed);
  for (auto& o : all) {
    auto* f = find_family(o.family, device_kind::cpu);
    ASSERT_NE(f, nullptr) << o.family;
    EXPECT_EQ(f->default_variant(o.f16).at("f16_load"), o.f16_default) << o.family;
    EXPECT_EQ(f->default_variant(o.other).at("f16_load"), "bits") << o.family;
    auto emit_with = [&](const workload_spec& s, const char* how) {
      auto v = f->default_variant(s);
      v["f16_load"] = how;
      EXPECT_TRUE(f->valid(v, s, nullptr)) << o.family << " f16_load=" << how;
      return f->emit(s, v);
    };
    const std::string hw = emit_with(o.f16, "hw");
    EXPECT_NE(emit_with(o.f16, "bits"), hw) << o.family;
    EXPECT_NE(hw.find("#define KF_F16_LOAD_HW 1\n"), std::string::npos) << o.family;
    EXPECT_EQ(emit_with(o.other, "bits"), emit_with(o.other, "hw")) << o.family;
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

TEST(families_cpu, pointwise_covers_elementwise_chains_only) {
  auto* f = find_family("pointwise_cpu", device_kind::cpu);
  ASSERT_NE(f, nullptr);
  std::string why;
  EXPECT_FALSE(f->covers(test::matmul_spec(), &why));
  EXPECT_NE(why.find("op 1 (matmul) is not elementwise"), std::string::npos) << why;
  EXPECT_FALSE(f->covers(test::swiglu_spec(dtype::float64), &why));
  EXPECT_NE(why.find("float64"), std::string::npos) << why;
  // The bias [96] and the column [T, 1] are not the output's shape: their loops are compiled (operands 1 and 2).
  auto spec = test::bias_gelu_spec();
  auto v = f->default_variant(spec);
  const std::string src = f->emit(spec, v);
  EXPECT_NE(src.find("constexpr int kf_const_set = 6;"), std::string::npos) << src.substr(0, 4000);
  EXPECT_NE(src.find("constexpr int kf_opnd_dtype[kf_n_opnd] = {KF_FLOAT16, KF_FLOAT16, KF_FLOAT32};"), std::string::npos);
  EXPECT_NE(src.find("// computes: add -> mul -> gelu -> cast (one pass)"), std::string::npos) << src.substr(0, 600);
  // One thread deals no tasks: the schedule is not read.
  v["threads"] = "1";
  auto w = v;
  w["schedule"] = "dynamic";
  EXPECT_EQ(f->emit(spec, v), f->emit(spec, w));
  EXPECT_FALSE(knob_read(*f, spec, w, "schedule"));
  EXPECT_TRUE(knob_read(*f, spec, w, "math"));
  // A chain without exp, tanh or erf reads no math knob.
  auto plain = test::swiglu_spec();
  plain.graph[0].op = "relu";
  EXPECT_FALSE(knob_read(*f, plain, f->default_variant(plain), "math"));
}

// pointwise_cpu's kernel compiled as kforge compiles it and run on layouts that no spec expresses (a strided output,
// a transposed input, a strided or expanded operand) and on the broadcasts that pick its vectorized loops (a [D] row,
// a [T, 1] column, a [1] operand where D = 1): (x + b) * c in float32 against a double computation.
TEST(families_cpu, pointwise_runs_every_layout) {
  workload_spec spec;
  spec.name = "test-pointwise-layouts";
  spec.inputs = {test::tensor_input("x", {test::sym("T"), test::sym("D")}, dtype::float32),
                 test::tensor_input("b", {test::sym("D")}, dtype::float32),
                 test::tensor_input("c", {test::sym("T"), test::lit(1)}, dtype::float32)};
  spec.graph.push_back({"add", {{"input", "x"}, {"other", "b"}}, {}});
  spec.graph.push_back({"mul", {{"other", "c"}}, {}});
  spec.cases = {test::make_case({{"T", 5}, {"D", 37}}, true)};
  auto* f = find_family("pointwise_cpu", device_kind::cpu);
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->covers(spec, nullptr));

  // A float32 tensor over `buffer` (which the test sizes), with the given strides.
  struct view {
    std::vector<int64_t> shape, stride;
    std::vector<float> buffer;
    float& at(const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * stride[d];
      return buffer[static_cast<size_t>(off)];
    }
    kf_tensor abi(int32_t dtype = KF_FLOAT32) {
      kf_tensor t{};
      t.data = buffer.data();
      t.dtype = dtype;
      t.ndim = static_cast<int32_t>(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d], t.stride[d] = stride[d];
      return t;
    }
  };
  auto make = [](std::vector<int64_t> shape, std::vector<int64_t> stride, size_t elements) {
    return view{std::move(shape), std::move(stride), std::vector<float>(elements, -7.0f)};
  };
  struct layout {
    std::string label;
    int64_t T, D;
    view x, b, c, y;
  };
  std::vector<layout> layouts;
  for (auto [T, D] : {std::pair<int64_t, int64_t>{5, 37}, {50, 101}, {1, 37}, {6, 1}, {1, 1}})
    layouts.push_back({fmt::format("contiguous T={} D={}", T, D), T, D, make({T, D}, {D, 1}, T * D),
                       make({D}, {1}, D), make({T, 1}, {1, 1}, T), make({T, D}, {D, 1}, T * D)});
  const int64_t T = 7, D = 33;
  layouts.push_back({"output rows 40 apart", T, D, make({T, D}, {D, 1}, T * D), make({D}, {1}, D),
                     make({T, 1}, {1, 1}, T), make({T, D}, {40, 1}, T * 40)});
  layouts.push_back({"transposed x", T, D, make({T, D}, {1, T}, T * D), make({D}, {1}, D), make({T, 1}, {1, 1}, T),
                     make({T, D}, {D, 1}, T * D)});
  layouts.push_back({"b every other float", T, D, make({T, D}, {D, 1}, T * D), make({D}, {2}, 2 * D),
                     make({T, 1}, {1, 1}, T), make({T, D}, {D, 1}, T * D)});
  layouts.push_back({"c expanded to [T, D]", T, D, make({T, D}, {D, 1}, T * D), make({D}, {1}, D),
                     make({T, D}, {1, 0}, T), make({T, D}, {D, 1}, T * D)});
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (auto& l : layouts) {
    for (int64_t t = 0; t < l.T; ++t)
      for (int64_t d = 0; d < l.D; ++d) l.x.at({t, d}) = normal(gen);
    for (int64_t d = 0; d < l.D; ++d) l.b.at({d}) = normal(gen);
    for (int64_t t = 0; t < l.T; ++t) l.c.at({t, 0}) = normal(gen);
  }

  temp_dir dir("kf-pointwise-run");
  int n = 0;
  for (const knob_values& changes : std::vector<knob_values>{{}, {{"chunk", "1024"}, {"threads", "2"}, {"schedule", "dynamic"}}}) {
    auto v = f->default_variant(spec);
    for (auto& [k, x] : changes) v[k] = x;
    ASSERT_TRUE(f->valid(v, spec, nullptr));
    const auto src = dir.path() / fmt::format("pw{}.cpp", n), so = dir.path() / fmt::format("pw{}.so", n++);
    write_file_atomic(src, f->emit(spec, v));
    // As kforge compiles a cpu candidate (exec/compile.cpp): the vectorized loops are what runs.
    auto r = run_process({KFORGE_CXX_COMPILER, "-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC",
                          "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", so.string(), src.string()});
    ASSERT_TRUE(r.ok()) << r.err.substr(0, 3000);
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto launch = reinterpret_cast<kf_launch_fn>(dlsym(h, "kf_launch"));
    ASSERT_NE(launch, nullptr);
    for (auto l : layouts) {
      SCOPED_TRACE(l.label + (changes.empty() ? "" : " chunk=1024 threads=2 dynamic"));
      std::vector<kf_tensor> in = {l.x.abi(), l.b.abi(), l.c.abi()};
      kf_tensor out = l.y.abi();
      ASSERT_EQ(launch(in.data(), 3, &out, 1, nullptr), 0);
      for (int64_t t = 0; t < l.T; ++t)
        for (int64_t d = 0; d < l.D; ++d) {
          const double want = (static_cast<double>(l.x.at({t, d})) + l.b.at({d})) * l.c.at({t, 0});
          ASSERT_NEAR(l.y.at({t, d}), want, 1e-6 + 1e-6 * std::fabs(want)) << "t=" << t << " d=" << d;
        }
      int64_t untouched = 0;  // the output's gaps stay as they were
      for (float e : l.y.buffer) untouched += e == -7.0f;
      EXPECT_EQ(untouched, static_cast<int64_t>(l.y.buffer.size()) - l.T * l.D);
      // Arguments that do not match the spec: a wrong dtype, a b that does not broadcast, an input missing.
      in[1].dtype = KF_BFLOAT16;
      EXPECT_EQ(launch(in.data(), 3, &out, 1, nullptr), 1);
      in[1] = l.b.abi();
      in[1].shape[0] = l.D + 1;
      EXPECT_EQ(launch(in.data(), 3, &out, 1, nullptr), 1);
      in[1] = l.b.abi();
      EXPECT_EQ(launch(in.data(), 2, &out, 1, nullptr), 1);
    }
    // not dlclose'd: the OpenMP runtime it pulled in may still have threads parked
  }
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

// A mask written as a plain add (`add: {other: m}`, as a user writes x + m) is fused like add_mask when m broadcasts
// into x without growing it in every case; the cpu kernel passes the verifier on it. An add that grows x is not.
TEST(graph_match, an_add_of_a_broadcast_mask_is_a_softmax_mask) {
  const std::string head = R"(version: 1
name: add-mask-softmax
inputs:
  x: {shape: [B, 3, T, T], dtype: float32, init: {normal: {std: 3.0}}}
)";
  const std::string tail = R"(graph:
  - scale: {input: x, factor: 0.125}
  - add: {other: m}
  - softmax: {dim: -1}
cases:
  - {B: 2, T: 77, gate: true}
  - {B: 1, T: 33}
)";
  auto spec = test::parse(head + "  m: {shape: [1, 1, T, T], dtype: float32, init: causal_mask}\n" + tail);
  std::string why;
  auto g = match_softmax(spec, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->mask_inputs(), std::vector<std::string>{"m"});
  EXPECT_TRUE(find_family("row_softmax_cuda", device_kind::cuda)->covers(spec, &why)) << why;
  test::expect_passes(spec, "add of a causal mask", "row_softmax_cpu", device_kind::cpu);
  // An m of [2, 3, T, T] grows x where B is 1 (x + m broadcasts x): not a mask.
  auto grows = test::parse(head + "  m: {shape: [2, 3, T, T], dtype: float32, init: {normal: {std: 1.0}}}\n" + tail);
  EXPECT_FALSE(match_softmax(grows, &why).has_value());
  EXPECT_NE(why.find("does not broadcast into x in every case"), std::string::npos) << why;
}

// A bool mask filled before the softmax (x.masked_fill(mask, value), as Hugging Face writes causal and padding masks)
// is a prologue step: the families load it as bytes and put the value (float16's lowest, -inf) where it is true. The
// cpu kernel passes the verifier on a causal [1, 1, S, S] mask with a one-column case and on a random [B, 1, 1, S]
// padding mask before a widening log_softmax; a float mask given to masked_fill is refused by the spec.
TEST(graph_match, a_bool_mask_filled_before_a_softmax_is_a_prologue_step) {
  const std::filesystem::path dir = std::filesystem::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "families";
  const family* cuda_family = find_family("row_softmax_cuda", device_kind::cuda);
  const workload_spec causal = load_spec((dir / "bool-causal-softmax-f16.yaml").string());
  std::string why;
  auto g = match_softmax(causal, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->mask_inputs(), std::vector<std::string>{"causal"});
  EXPECT_EQ(g->describe(), "x[float16] -> scale(0.125) -> masked_fill(causal, -65504) -> softmax(float16)");
  EXPECT_TRUE(cuda_family->covers(causal, &why)) << why;
  const std::string cuda = cuda_family->emit(causal, cuda_family->default_variant(causal));
  EXPECT_NE(cuda.find("using mask0_t = bool;"), std::string::npos);
  EXPECT_NE(cuda.find("x = m0 != 0.f ? to_f(from_f<__half>(-65504.0f)) : x;"), std::string::npos);
  test::expect_passes(causal, "bool causal mask", "row_softmax_cpu", device_kind::cpu);
  const workload_spec pad = load_spec((dir / "bool-padding-log-softmax-bf16.yaml").string());
  g = match_softmax(pad, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->prologue.at(0).value, -INFINITY);
  EXPECT_NE(cuda_family->emit(pad, cuda_family->default_variant(pad)).find("x = m0 != 0.f ? -INFINITY : x;"),
            std::string::npos);
  test::expect_passes(pad, "bool padding mask", "row_softmax_cpu", device_kind::cpu);
  // torch.where(keep, x, value): the value where the mask is false (a random mask: some rows of 5 are all false,
  // where every column gets bfloat16's lowest and the softmax is uniform).
  const workload_spec keep = load_spec((dir / "where-causal-softmax-bf16.yaml").string());
  g = match_softmax(keep, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_TRUE(g->prologue.at(1).fill_where_false);
  EXPECT_NE(g->describe().find("-> where(keep, x, -3.3895313892515355e+38)"), std::string::npos) << g->describe();
  EXPECT_NE(cuda_family->emit(keep, cuda_family->default_variant(keep)).find("x = m0 != 0.f ? x : to_f(from_f<__nv_bfloat16>("),
            std::string::npos);
  test::expect_passes(keep, "where of a bool mask", "row_softmax_cpu", device_kind::cpu);
}

// adaptive_avg_pool2d to more than 1 x 1 (VGG's 7 x 7 head, PSPNet's 2, 3 and 6 bins) is adaptive_pool's: torch's
// windows, overlapping where the input does not divide (13 rows into 6, 10 columns into 4 or 7), in both layouts;
// global pooling stays pool's. Before this family such a spec fell to the generic code (0.15x eager on the cpu).
// A top-k without a softmax is the row family's too: of the values (a prologue may come first) or of their sigmoid;
// a sigmoid with no top-k after it is elementwise (pointwise's), and a column softmax takes neither.
TEST(graph_match, a_topk_of_the_values_or_their_sigmoid_is_a_row_op) {
  const std::filesystem::path dir = std::filesystem::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "families";
  std::string why;
  const workload_spec router = load_spec((dir / "sigmoid-router-topk-f32.yaml").string());
  auto g = match_softmax(router, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->op, softmax_graph::row_op::sigmoid);
  EXPECT_EQ(g->topk, 8);
  EXPECT_EQ(g->describe(), "x[float32] -> sigmoid(float32) -> topk(8)");
  const workload_spec sampler = load_spec((dir / "scaled-masked-topk-bf16.yaml").string());
  g = match_softmax(sampler, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->op, softmax_graph::row_op::identity);
  EXPECT_EQ(g->softmax_type, dtype::float32);  // the cast before the top-k
  EXPECT_EQ(g->mask_inputs(), std::vector<std::string>{"banned"});
  const family* cuda_family = find_family("row_softmax_cuda", device_kind::cuda);
  ASSERT_TRUE(cuda_family->covers(router, &why)) << why;
  EXPECT_NE(cuda_family->emit(router, cuda_family->default_variant(router)).find("constexpr int k_row_op = 1;"),
            std::string::npos);
  EXPECT_NE(cuda_family->emit(sampler, cuda_family->default_variant(sampler)).find("constexpr int k_row_op = 2;"),
            std::string::npos);
  const family* cpu_family = find_family("row_softmax_cpu", device_kind::cpu);
  EXPECT_NE(cpu_family->emit(router, cpu_family->default_variant(router)).find("return 1.0f / (1.0f + expf(-v));"),
            std::string::npos);

  workload_spec alone = router;
  alone.graph.pop_back();  // sigmoid(x) alone
  EXPECT_FALSE(match_softmax(alone, &why));
  EXPECT_NE(why.find("a sigmoid is fused here only before a top-k"), std::string::npos) << why;
  workload_spec after = router;
  after.graph.push_back(after.graph.front());  // topk -> sigmoid: nothing may follow the top-k
  EXPECT_FALSE(match_softmax(after, &why));
  EXPECT_FALSE(match_col_softmax(router, &why));
  EXPECT_NE(why.find("op 1 (sigmoid): not a fusable softmax prologue op"), std::string::npos) << why;
}

TEST(graph_match, adaptive_pooling_to_more_than_one_is_adaptive_pool) {
  std::string why;
  EXPECT_FALSE(match_pool(test::adaptive_pool_spec(), &why).has_value());
  EXPECT_NE(why.find("adaptive_pool takes the others"), std::string::npos) << why;
  EXPECT_FALSE(match_adaptive_pool(test::pool_spec(), &why).has_value());
  auto g = match_adaptive_pool(test::adaptive_pool_spec(), &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->describe(), "x[float16] -> adaptive_avg_pool2d(6, 4) -> cast(float32)");
  EXPECT_EQ(match_pool(test::pool_spec(), &why)->describe(), "x[float16] -> adaptive_avg_pool2d(1) -> flatten");
  for (auto [format, t, oh, ow] : {std::tuple{"contiguous", dtype::float16, 6, 4}, std::tuple{"channels_last", dtype::bfloat16, 7, 7},
                                   std::tuple{"contiguous", dtype::float32, 13, 3}, std::tuple{"channels_last", dtype::float32, 2, 9}}) {
    const workload_spec s = test::adaptive_pool_spec(format, t, oh, ow);
    test::expect_passes(s, fmt::format("{} {} to {} x {}", format, dtype_name(t), oh, ow), "adaptive_pool_cpu", device_kind::cpu);
  }
}

// avg_pool2d is adaptive_pool's too (the same walk over other windows): kernel, stride, padding counted or not,
// ceil_mode, divisor_override, the output's size following x's from case to case; in both layouts and three dtypes.
TEST(graph_match, avg_pool2d_is_adaptive_pool_for_every_window) {
  std::string why;
  const auto windows = test::avg_pool_windows();
  auto g = match_adaptive_pool(test::avg_pool_spec(windows[3]), &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->describe(), "x[float16] -> avg_pool2d([3, 2], stride [2, 1], padding [1, 0], ceil_mode, count_include_pad false) -> cast(float32)");
  EXPECT_FALSE(match_pool(test::avg_pool_spec(windows[0]), &why).has_value());
  const family* f = find_family("adaptive_pool_cpu", device_kind::cpu);
  for (size_t i = 0; i < windows.size(); ++i)
    for (auto [format, t] : {std::pair{"contiguous", dtype::float16}, std::pair{"channels_last", dtype::bfloat16},
                             std::pair{"contiguous", dtype::float32}}) {
      const workload_spec s = test::avg_pool_spec(windows[i], format, t);
      ASSERT_TRUE(f->covers(s, &why)) << why;
      test::expect_passes(s, fmt::format("{} {} {}", windows[i].dump(), format, dtype_name(t)), "adaptive_pool_cpu", device_kind::cpu);
    }
}

// max_pool2d is adaptive_pool's as well: the same windows, their largest values (the padding never wins).
TEST(graph_match, max_pool2d_is_adaptive_pool_for_every_window) {
  std::string why;
  const auto windows = test::max_pool_windows();
  auto g = match_adaptive_pool(test::max_pool_spec(windows[0]), &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->describe(), "x[float16] -> max_pool2d(3, stride 2, padding 1) -> cast(float32)");
  EXPECT_TRUE(g->window.max);
  for (size_t i = 0; i < windows.size(); ++i)
    for (auto [format, t] : {std::pair{"contiguous", dtype::float16}, std::pair{"channels_last", dtype::bfloat16},
                             std::pair{"contiguous", dtype::float32}}) {
      const workload_spec s = test::max_pool_spec(windows[i], format, t);
      test::expect_passes(s, fmt::format("{} {} {}", windows[i].dump(), format, dtype_name(t)), "adaptive_pool_cpu", device_kind::cpu);
    }
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

// A softmax over an earlier dim is a column softmax: x as [outer, n, inner], its dim recorded; scale and casts fuse,
// masks and top-k do not, and each matcher names the other for the dim it leaves.
TEST(graph_match, softmax_over_an_earlier_dim_is_a_column_softmax) {
  std::string why;
  auto g = match_col_softmax(test::col_softmax_spec(1, true, dtype::float16, dtype::bfloat16), &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->dim, 1);
  EXPECT_TRUE(g->log);
  EXPECT_EQ(g->prologue.size(), 1u);
  EXPECT_EQ(g->out_type, dtype::bfloat16);
  EXPECT_NE(g->describe().find("log_softmax(dim=1, float32)"), std::string::npos) << g->describe();
  auto neg = match_col_softmax(test::col_softmax_spec(-3), &why);  // dim -3 of a 4-d x is dim 1
  ASSERT_TRUE(neg.has_value()) << why;
  EXPECT_EQ(neg->dim, 1);
  EXPECT_FALSE(match_softmax(test::col_softmax_spec(), &why).has_value());
  EXPECT_NE(why.find("col_softmax"), std::string::npos) << why;
  EXPECT_FALSE(match_col_softmax(test::col_softmax_spec(-1), &why).has_value());
  EXPECT_NE(why.find("row_softmax"), std::string::npos) << why;
  EXPECT_FALSE(match_col_softmax(test::col_softmax_spec(4), &why).has_value());
  EXPECT_NE(why.find("not a dim of x"), std::string::npos) << why;
  auto masked = test::col_softmax_spec();
  masked.inputs.push_back(test::tensor_input("m", {test::sym("H"), test::sym("W")}, dtype::float32));
  masked.graph.insert(masked.graph.begin() + 1, op_call{"add_mask", {{"mask", "m"}}, {}});
  EXPECT_FALSE(match_col_softmax(masked, &why).has_value());
  EXPECT_NE(why.find("masks"), std::string::npos) << why;
  // The last dim's matcher still takes its softmax and describes it as before (stored winners' headers).
  auto row = match_softmax(test::softmax_spec(), &why);
  ASSERT_TRUE(row.has_value()) << why;
  EXPECT_EQ(row->dim, 3);
  EXPECT_EQ(row->describe().find("dim="), std::string::npos) << row->describe();
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
