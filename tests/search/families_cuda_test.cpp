// The CUDA families: which graphs they cover, their knob constraints and defaults, and that their sources
// compile with nvcc for every value of every knob. No GPU needed (nvcc only; skipped where the build has none).
// To keep nvcc invocations few, each family's variants are compiled together as one translation unit: every
// variant's `namespace kfk` and `kf_launch` are renamed apart.
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "search/dispatch.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "covering_sets.h"
#include "exec/compile.h"
#include "search_test_specs.h"
#include "spec/spec_parse.h"
#include "store/kernel_header.h"
#include "util/fs.h"
#include "util/subprocess.h"
#include "verify/static_scan.h"

namespace kf {
namespace {

const family& cuda_family(const std::string& name) {
  auto* f = find_family(name, device_kind::cuda);
  if (!f) throw std::runtime_error("no cuda family " + name);
  return *f;
}

// One translation unit holding several emitted candidates side by side.
// Every variant in one translation unit, as a dispatch kernel composes its parts (search/dispatch.h): one nvcc
// run per family, and the composition itself compiled for every knob value of every CUDA family.
std::string combine(const std::vector<std::string>& sources) {
  if (sources.size() == 1) return sources.front();
  std::vector<int64_t> up_to;
  for (size_t i = 0; i + 1 < sources.size(); ++i) up_to.push_back(static_cast<int64_t>(i) + 1);
  return compose_dispatch(sources, up_to);
}

struct family_case {
  std::string family;
  workload_spec rich;                  // the spec the covering sets are drawn for
  std::vector<workload_spec> others;   // further graphs: their defaults join the translation unit
  // Further graphs with knobs changed from their default: paths the covering sets of `rich` reach in one dtype only.
  std::vector<std::pair<workload_spec, knob_values>> extra = {};
};

// The seed workloads of the repository (workloads/*.yaml).
std::vector<workload_spec> seeds() {
  std::vector<workload_spec> out;
  for (auto& path : find_specs(KFORGE_SOURCE_DIR "/workloads")) out.push_back(load_spec(path));
  return out;
}

std::vector<family_case> cases() {
  using namespace test;
  std::vector<family_case> out = {
      {"row_softmax_cuda", softmax_spec(true, true), {softmax_spec(), softmax_spec(false, false, 4, dtype::float16)}},
      {"group_norm_cuda", group_norm_spec(), {group_norm_spec(false, dtype::float32)}},
      {"pool_cuda", pool_spec(), {pool_spec("channels_last", dtype::bfloat16)}},
  };
  // pool_cuda's flat small-batch reads in every dtype it stores (their vectors hold 2, 4 or 8 elements).
  for (auto t : {dtype::float32, dtype::float64, dtype::bfloat16})
    out.back().extra.push_back(
        {pool_spec("contiguous", t), {{"small_threads", "64"}, {"small_direct", "2"}, {"small_tpp", "8"}}});
  // ... and its direct reads with one-warp blocks.
  out.back().extra.push_back(
      {pool_spec("contiguous", dtype::float64), {{"small_threads", "32"}, {"small_direct", "1"}, {"small_tpp", "4"}}});
  // The channels_last kernels take their own knobs (emit fixes them for NCHW): covering sets of their own, and the
  // warp kernel's reduce-scatter in every vector width (2, 4 or 8 elements of 16 bytes).
  out.push_back({"pool_cuda", pool_spec("channels_last"), {}});
  for (auto t : {dtype::float32, dtype::float64, dtype::bfloat16})
    out.back().extra.push_back({pool_spec("channels_last", t), {{"small_cl_warp", "2"}, {"small_cl_loop", "0"}}});
  // group_norm_cuda's stream strategy on further graphs and item sizes.
  auto& gn = out[1].extra;
  gn.push_back({group_norm_spec(), {{"strategy", "stream"}, {"seg_kb", "8"}, {"lag_mb", "16"}, {"stats", "sumsq"}}});
  gn.push_back({group_norm_spec(false), {{"strategy", "stream"}, {"seg_kb", "64"}, {"lag_mb", "1"}, {"threads", "1024"}}});
  gn.push_back({group_norm_spec(false, dtype::float32), {{"strategy", "stream"}, {"seg_kb", "16"}, {"vec", "1"}}});
  gn.push_back({group_norm_spec(false, dtype::float32), {{"strategy", "stream"}, {"team_l2", "50"}, {"team_kb", "48"}}});
  gn.push_back({group_norm_spec(), {{"strategy", "stream"}, {"sm_blocks", "1"}, {"threads", "1024"}, {"lag_mb", "0"},
                                    {"l2_hint", "1"}}});
  gn.push_back({group_norm_spec(false), {{"strategy", "stream"}, {"publish", "tagged"}, {"stages", "4"}, {"seg_kb", "16"}}});
  gn.push_back({group_norm_spec(false, dtype::float32),
                {{"strategy", "stream"}, {"publish", "tagged"}, {"stages", "3"}, {"vec", "1"}}});
  // ... and its ring strategy (16-byte vectors of every element size it stores; the fewest and most slots).
  gn.push_back({group_norm_spec(), {{"strategy", "ring"}, {"ring_kb", "64"}, {"seg_kb", "8"}, {"ahead", "4"}}});
  gn.push_back({group_norm_spec(false, dtype::float32),
                {{"strategy", "ring"}, {"vec", "4"}, {"ring_kb", "128"}, {"ahead", "1"}, {"stats", "sumsq"}}});
  gn.push_back({group_norm_spec(false), {{"strategy", "ring"}, {"ring_kb", "224"}, {"seg_kb", "16"}, {"ahead", "3"}}});
  gn.push_back({group_norm_spec(true, dtype::float32),
                {{"strategy", "ring"}, {"ring_kb", "96"}, {"seg_kb", "16"}, {"team_l2", "50"}, {"team_kb", "48"}}});
  // The row-norm family: LayerNorm and RMSNorm, a residual add returning its sum (in either output order), an
  // activation after the norm; each strategy, persistent grids with weights in registers, one-pass LayerNorm.
  out.push_back({"row_norm_cuda", residual_rms_norm_spec(), {row_norm_spec(false), row_norm_spec(true, dtype::float32),
                                                          residual_rms_norm_spec(true, true)}});
  out.back().extra.push_back({row_norm_spec(false), {{"strategy", "team"}, {"team", "8"}, {"onepass", "1"}, {"waves", "2"}, {"wregs", "1"}}});
  out.back().extra.push_back({row_norm_spec(false, dtype::bfloat16), {{"strategy", "cluster"}, {"cluster", "4"}, {"block", "256"}}});
  out.back().extra.push_back({residual_rms_norm_spec(), {{"strategy", "block"}, {"block", "1024"}, {"waves", "1"}, {"wregs", "1"}}});
  // Adaptive pooling to more than 1 x 1: planes, channels_last with vectors of channels and without.
  out.push_back({"adaptive_pool_cuda", adaptive_pool_spec(), {adaptive_pool_spec("channels_last", dtype::bfloat16, 7, 7),
                                                              adaptive_pool_spec("contiguous", dtype::float64, 2, 3)}});
  out.back().extra.push_back({adaptive_pool_spec("channels_last", dtype::float32, 3, 3), {{"cvec", "4"}, {"threads", "512"}}});
  // GroupNorm of channels_last inputs: one-pass and two-pass statistics, a column a thread.
  out.push_back({"group_norm_nhwc_cuda", group_norm_spec(true, dtype::bfloat16, "channels_last"),
                 {group_norm_spec(false, dtype::float32, "channels_last"), group_norm_spec(true, dtype::float16, "channels_last")}});
  out.back().extra.push_back({group_norm_spec(false, dtype::float16, "channels_last"), {{"stats", "twopass"}, {"vec", "1"}}});
  // The column softmax: dim 1 of NCHW (register-cached by default), log_softmax over dim 0 in bfloat16, dim -2 cast
  // to bfloat16; streamed in one pass and in three, and a column a thread.
  out.push_back({"col_softmax_cuda", col_softmax_spec(), {col_softmax_spec(0, true, dtype::bfloat16),
                                                          col_softmax_spec(-2, false, dtype::float32, dtype::bfloat16)}});
  out.back().extra.push_back({col_softmax_spec(1, true), {{"cache", "stream"}, {"online", "1"}, {"ty", "1"}}});
  out.back().extra.push_back({col_softmax_spec(2, false, dtype::float64), {{"cache", "stream"}, {"online", "0"}, {"vec", "1"}}});
  out.back().extra.push_back({col_softmax_spec(1, true, dtype::bfloat16), {{"cache", "smem"}, {"ty", "4"}}});
  // The generic code generator: an elementwise pass, and each op's loop (softmax with a mask, top-k, norms, pooling).
  out.push_back({"generic_cuda", matmul_spec(), {swiglu_spec(), softmax_spec(true, true), softmax_spec(false, false, 4, dtype::float16),
                                                 pool_spec("channels_last", dtype::float64)}});
  // The pointwise family: a binary chain, and one with row-broadcast and column operands of mixed types.
  out.push_back({"pointwise_cuda", swiglu_spec(), {bias_gelu_spec(), swiglu_spec(dtype::float32)}});
  // Each seed workload's default joins its family's translation unit.
  for (auto& s : seeds())
    for (auto* f : covering_families(s, device_kind::cuda))
      for (auto& c : out)
        if (c.family == f->name()) {
          c.others.push_back(s);
          break;
        }
  return out;
}

// The names of the table's families on `device` (a family missing from a hard-coded list of a test would skip it).
std::set<std::string> table_families(device_kind device) {
  std::set<std::string> out;
  for (auto& f : families())
    if (f->device() == device) out.insert(f->name());
  return out;
}

TEST(families_cuda, compile_cases_name_every_cuda_family) {
  std::set<std::string> named;
  for (auto& c : cases()) named.insert(c.family);
  EXPECT_EQ(named, table_families(device_kind::cuda)) << "cases() above: add a case for each cuda family";
}

TEST(families_cuda, every_seed_workload_has_one_cuda_family_with_a_valid_default) {
  auto all = seeds();
  ASSERT_FALSE(all.empty()) << "no workloads/*.yaml";
  for (auto& s : all) {
    auto fams = covering_families(s, device_kind::cuda);
    ASSERT_EQ(fams.size(), 1u) << s.name;
    std::string why;
    auto v = fams[0]->default_variant(s);
    EXPECT_TRUE(fams[0]->valid(v, s, &why)) << s.name << ": " << why;
    EXPECT_NE(fams[0]->emit(s, v).find("kf_launch"), std::string::npos) << s.name;
  }
}

TEST(families_cuda, each_graph_is_covered_by_its_family) {
  using namespace test;
  const std::vector<std::pair<workload_spec, std::string>> expect = {
      {softmax_spec(), "row_softmax_cuda"},          {softmax_spec(true, true, 0, dtype::float32), "row_softmax_cuda"},
      {softmax_spec(false, false, 4), "row_softmax_cuda"}, {group_norm_spec(), "group_norm_cuda"},
      {row_norm_spec(false), "row_norm_cuda"},     {row_norm_spec(true), "row_norm_cuda"},
      {residual_rms_norm_spec(), "row_norm_cuda"},
      {pool_spec(), "pool_cuda"},                    {pool_spec("channels_last", dtype::bfloat16), "pool_cuda"},
      {swiglu_spec(), "pointwise_cuda"},  {bias_gelu_spec(), "pointwise_cuda"},
      {col_softmax_spec(), "col_softmax_cuda"},    {col_softmax_spec(-3, true, dtype::bfloat16), "col_softmax_cuda"},
      {group_norm_spec(true, dtype::bfloat16, "channels_last"), "group_norm_nhwc_cuda"},
      {adaptive_pool_spec(), "adaptive_pool_cuda"}, {adaptive_pool_spec("channels_last", dtype::bfloat16, 7, 7), "adaptive_pool_cuda"},
      {matmul_spec(), "generic_cuda"},  // no other family covers it: the fallback
  };
  std::set<std::string> named;
  for (auto& [spec, name] : expect) {
    named.insert(name);
    std::vector<std::string> names;
    for (auto* f : covering_families(spec, device_kind::cuda)) names.push_back(f->name());
    EXPECT_EQ(names, std::vector<std::string>{name}) << spec.name;
  }
  EXPECT_EQ(named, table_families(device_kind::cuda)) << "add a graph for each cuda family";
  std::string why;
  EXPECT_FALSE(cuda_family("group_norm_cuda").covers(group_norm_spec(true, dtype::bfloat16, "channels_last"), &why));
  EXPECT_NE(why.find("channels_last"), std::string::npos) << why;
  EXPECT_FALSE(cuda_family("row_softmax_cuda").covers(softmax_spec(false, false, 64), &why));
  EXPECT_NE(why.find("32"), std::string::npos) << why;
  // A softmax over an earlier dim is col_softmax's, over the last row_softmax's: each says so.
  EXPECT_FALSE(cuda_family("row_softmax_cuda").covers(col_softmax_spec(), &why));
  EXPECT_NE(why.find("col_softmax"), std::string::npos) << why;
  EXPECT_FALSE(cuda_family("col_softmax_cuda").covers(col_softmax_spec(3), &why));
  EXPECT_NE(why.find("row_softmax"), std::string::npos) << why;
}

// A column softmax's defaults: the widest vector every timed case's inner dim holds whole, enough rows of threads
// along the dim to fill the chip and to cache a thread's share in registers, streamed where it cannot be.
TEST(families_cuda, col_softmax_defaults_follow_the_shape) {
  const family& f = cuda_family("col_softmax_cuda");
  auto spec_of = [](std::vector<int64_t> shape, int dim, dtype in = dtype::float16) {
    auto spec = test::col_softmax_spec(dim, false, in);
    spec.inputs[0].shape.clear();
    for (auto d : shape) spec.inputs[0].shape.push_back(test::lit(d));
    spec.cases = {test::make_case({}, true)};
    return spec;
  };
  std::string why;
  // ADE20K's 150 classes over 128 x 128 maps, 8 images: 4-value vectors, every value of a column in registers.
  auto seg = spec_of({8, 150, 128, 128}, 1);
  auto v = f.default_variant(seg);
  EXPECT_TRUE(f.valid(v, seg, &why)) << why;
  EXPECT_EQ(v.at("vec"), "4");
  EXPECT_EQ(v.at("online"), "0");
  EXPECT_LE(std::stoi(v.at("chunks")) * std::stoi(v.at("vec")), 32) << "registers for more than one block an SM";
  EXPECT_EQ(v.at("cache"), "regs");
  EXPECT_LE(std::stoi(v.at("chunks")) * std::stoi(v.at("ty")) / 150, 1) << "cache no larger than the dim needs";
  EXPECT_GE(std::stoi(v.at("chunks")) * std::stoi(v.at("ty")), 150);
  // An inner dim of 7 x 7: no vector divides it.
  EXPECT_EQ(f.default_variant(spec_of({2, 19, 7, 7}, 1)).at("vec"), "1");
  // 4096 values along the dim do not fit 32 rows of threads' registers: streamed, in three passes (the max, the
  // sum, the write: online's exp and branch a value cost more than two reads from L2).
  auto tall = spec_of({1, 4096, 64, 64}, 1, dtype::float32);
  v = f.default_variant(tall);
  EXPECT_TRUE(f.valid(v, tall, &why)) << why;
  EXPECT_EQ(v.at("vec"), "4");
  EXPECT_EQ(v.at("cache"), "stream");
  EXPECT_EQ(v.at("online"), "0");
  // A dim of 3 never gets more rows of threads than values.
  EXPECT_LE(std::stoi(f.default_variant(spec_of({1, 3, 8, 8}, 1)).at("ty")), 4);
}

// Short rows take teams with up to 4 vectors a thread, fewer where the rows are too few to give every other SM a CTA
// (of 128 threads) at 4: one vector a thread for T5's 768 rows of 64 at B=1, two for GPT-2's 1536 rows of 128,
// four for 98,304 rows of 512.
TEST(families_cuda, softmax_short_rows_spread_over_the_sms_when_few) {
  auto chunks_for = [](std::vector<int64_t> shape) {
    auto spec = test::softmax_spec();
    spec.inputs[0].shape.clear();
    for (auto d : shape) spec.inputs[0].shape.push_back(test::lit(d));
    spec.cases = {test::make_case({}, true)};
    const auto v = cuda_family("row_softmax_cuda").default_variant(spec);
    EXPECT_EQ(v.at("strategy"), "warp");
    return v.at("chunks");
  };
  EXPECT_EQ(chunks_for({1, 12, 64, 64}), "1");
  EXPECT_EQ(chunks_for({1, 12, 128, 128}), "2");
  EXPECT_EQ(chunks_for({16, 12, 512, 512}), "4");
  EXPECT_EQ(chunks_for({4, 12, 1024, 1024}), "4");
}

TEST(families_cuda, defaults_are_valid_and_follow_the_shape) {
  for (auto& c : cases()) {
    const family& f = cuda_family(c.family);
    std::string why;
    EXPECT_TRUE(f.valid(f.default_variant(c.rich), c.rich, &why)) << c.family << ": " << why;
    for (auto& s : c.others) EXPECT_TRUE(f.valid(f.default_variant(s), s, &why)) << c.family << ": " << why;
  }
  // Few long rows take a team of co-resident CTAs per row (every SM); many short ones a warp; top-k always a warp.
  auto vocab = test::softmax_spec();
  vocab.inputs[0].shape = {test::lit(8), test::lit(262144)};
  vocab.cases = {test::make_case({}, true)};
  auto v = cuda_family("row_softmax_cuda").default_variant(vocab);
  EXPECT_EQ(v.at("strategy"), "grid");
  EXPECT_EQ(v.at("split"), "auto");  // sized at launch from the resident CTAs
  EXPECT_EQ(v.at("chunks"), "4");     // 33 CTAs a row at two an SM: 7944 values a CTA, 256 threads x 4 x 8
  EXPECT_EQ(v.at("vec"), "8");        // 16 bytes of bfloat16 out
  EXPECT_EQ(v.at("stream_store"), "1");
  auto vocab32 = vocab;               // Gemma's: float32 out, 16-byte stores of 4 values, the same chunks
  vocab32.graph.pop_back();
  const auto v32 = cuda_family("row_softmax_cuda").default_variant(vocab32);
  EXPECT_EQ(v32.at("strategy"), "grid");
  EXPECT_EQ(v32.at("vec"), "4");
  EXPECT_EQ(v32.at("chunks"), "4");
  auto llama = vocab;
  llama.inputs[0].shape = {test::lit(512), test::lit(128256)};
  const auto lv = cuda_family("row_softmax_cuda").default_variant(llama);
  EXPECT_EQ(lv.at("strategy"), "cluster");  // 512 rows fill the GPU; 8 CTAs a row, streamed past 65536 values
  EXPECT_EQ(lv.at("cluster"), "8");
  EXPECT_EQ(lv.at("threads"), "256");
  EXPECT_EQ(lv.at("chunks"), "4");
  EXPECT_EQ(lv.at("unroll"), "2");
  llama.inputs[0].shape = {test::lit(512), test::lit(40000)};
  const auto mv = cuda_family("row_softmax_cuda").default_variant(llama);
  EXPECT_EQ(mv.at("cluster"), "8");  // 5 CTAs' registers hold it: the power of two above, one read
  EXPECT_EQ(mv.at("unroll"), "1");
  llama.inputs[0].shape = {test::lit(4096), test::lit(32768)};
  EXPECT_EQ(cuda_family("row_softmax_cuda").default_variant(llama).at("strategy"), "block");  // a block holds it
  llama.inputs[0].shape = {test::lit(1), test::lit(128256)};
  const auto fv = cuda_family("row_softmax_cuda").default_variant(llama);
  EXPECT_EQ(fv.at("strategy"), "grid");
  EXPECT_EQ(fv.at("chunks"), "1");  // 264 CTAs for one row: 486 values a CTA
  // Row norms: teams for short rows, a block for rows of thousands, a cluster for few very long rows.
  const family& rn = cuda_family("row_norm_cuda");
  EXPECT_EQ(rn.default_variant(test::row_norm_spec(false)).at("strategy"), "team");
  EXPECT_EQ(rn.default_variant(test::residual_rms_norm_spec()).at("strategy"), "team");  // rows of 1000
  EXPECT_EQ(rn.default_variant(load_spec(KFORGE_SOURCE_DIR "/workloads/qwen25-7b-rmsnorm.yaml")).at("strategy"), "block");
  auto wide = test::row_norm_spec(true, dtype::float32);
  wide.inputs[0].shape = {test::sym("R"), test::lit(262144)};
  wide.inputs[1].shape = {test::lit(262144)};
  wide.graph[0].args["normalized_shape"] = {262144};
  EXPECT_EQ(rn.default_variant(wide).at("strategy"), "cluster");
  EXPECT_EQ(cuda_family("row_softmax_cuda").default_variant(test::softmax_spec(false, false, 4)).at("strategy"), "warp");
  // A GroupNorm of 32 big groups (SD3.5 VAE) streams segments of them, the apply step trailing the statistics.
  auto gn = test::group_norm_spec();
  gn.inputs[0].shape = {test::lit(1), test::lit(32), test::lit(512), test::lit(512)};
  gn.cases = {test::make_case({}, true)};
  const auto gv = cuda_family("group_norm_cuda").default_variant(gn);
  EXPECT_EQ(gv.at("strategy"), "stream");
  // ... its second read hinted in L2, with no slack behind the items in flight (measured on the H200).
  EXPECT_EQ(gv.at("l2_hint"), "1");
  EXPECT_EQ(gv.at("lag_mb"), "0");
  EXPECT_EQ(gv.at("stream_store"), "1");
  // ... and hands launches whose rows fit the registers of a block or of a cluster of 2 (64 values a thread) to
  // that per-row kernel, which then reads its cluster and chunks knobs. No shape of this spec fits a pair (8 rows of
  // 2^20): 256 threads, as before the knob.
  EXPECT_EQ(gv.at("fit"), "1");
  EXPECT_EQ(gv.at("cluster"), "2");
  EXPECT_EQ(gv.at("threads"), "256");
  EXPECT_EQ(knob_int(gv, "chunks") * knob_int(gv, "vec"), 64);
  const family& gf = cuda_family("group_norm_cuda");
  EXPECT_EQ(gf.canonical_knobs(gn, gv).at("cluster"), "2");
  EXPECT_EQ(gf.canonical_knobs(gn, gv).at("chunks"), gv.at("chunks"));
  auto no_fit = gv;
  no_fit["fit"] = "0";  // the grid kernels alone: their fallback's chunks and no cluster
  EXPECT_EQ(gf.canonical_knobs(gn, no_fit).at("cluster"), "8");
  EXPECT_EQ(gf.canonical_knobs(gn, no_fit).at("chunks"), "4");
  auto block = gv;
  block["strategy"] = "block";  // a per-row strategy has nothing to hand over
  EXPECT_EQ(gf.canonical_knobs(gn, block).at("fit"), "0");
  std::string why;
  auto small = gv;
  small["threads"] = "64";  // a cluster's CTA wants 128 threads or more
  EXPECT_FALSE(gf.valid(small, gn, &why));
  EXPECT_NE(why.find("fit=1"), std::string::npos) << why;
  // SDXL's mid-resolution GroupNorm (64 rows of 40,960 halves) fits clusters of 2 x 512 threads: 512 threads.
  auto sdxl = test::group_norm_spec();
  sdxl.inputs[0].shape = {test::lit(2), test::lit(1280), test::lit(32), test::lit(32)};
  sdxl.inputs[1].shape = sdxl.inputs[2].shape = {test::lit(1280)};
  sdxl.graph[0].args["num_groups"] = 32;
  sdxl.cases = {test::make_case({}, true)};
  EXPECT_EQ(gf.default_variant(sdxl).at("threads"), "512");
  EXPECT_EQ(gf.default_variant(sdxl).at("fit"), "1");
}

// A held-out row op can have any row length and any row count: each row family's default must stay valid and keep
// its register cache within a block's registers (at most 32768 cached floats a block: 32 a thread at 1024 threads,
// where the 64-register cap of a 1024-thread block would otherwise spill them).
TEST(families_cuda, row_defaults_are_valid_and_fit_their_registers_at_any_row_length) {
  const family& rn = cuda_family("row_norm_cuda");
  const family& sm = cuda_family("row_softmax_cuda");
  for (dtype t : {dtype::bfloat16, dtype::float32})
    for (int64_t n : {64, 100, 1000, 4096, 5120, 16384, 32768, 40000, 65536, 128256, 262144, 1048576})
      for (int64_t rows : {1, 8, 300, 4096}) {
        const std::string at = fmt::format("{} rows of {} {}", rows, n, dtype_name(t));
        std::string why;
        auto norm = test::row_norm_spec(true, t);
        norm.inputs[0].shape = {test::lit(rows), test::lit(n)};
        norm.inputs[1].shape = {test::lit(n)};
        norm.graph[0].args["normalized_shape"] = {n};
        const auto nv = rn.default_variant(norm);
        EXPECT_TRUE(rn.valid(nv, norm, &why)) << "row_norm_cuda, " << at << ": " << why;
        EXPECT_LE(knob_int(nv, "chunks") * knob_int(nv, "vec") * knob_int(nv, "block"), 32768) << "row_norm_cuda, " << at;
        auto soft = test::softmax_spec(false, true, 0, t);
        soft.inputs[0].shape = {test::lit(rows), test::lit(n)};
        soft.cases = {test::make_case({}, true)};
        const auto sv = sm.default_variant(soft);
        EXPECT_TRUE(sm.valid(sv, soft, &why)) << "row_softmax_cuda, " << at << ": " << why;
        EXPECT_LE(knob_int(sv, "chunks") * knob_int(sv, "vec") * knob_int(sv, "threads"), 32768) << "row_softmax_cuda, " << at;
      }
}

// The same for the families whose defaults follow tensor sizes: GroupNorm from 1x1 to 1024x1024 images and 4 to
// 2560 channels in 1 to 32 groups, pooling from 1x1 to 56x56 maps, pointwise chains from one element to 2^28.
TEST(families_cuda, size_defaults_are_valid_at_any_size) {
  std::string why;
  int covered = 0;
  const family& gn = cuda_family("group_norm_cuda");
  for (const char* format : {"contiguous", "channels_last"})
    for (dtype t : {dtype::bfloat16, dtype::float32})
      for (int64_t c : {4, 64, 320, 2560})
        for (int64_t groups : {1, 4, 32})
          for (int64_t hw : {1, 7, 16, 128, 1024})
            for (int64_t n : {1, 8}) {
              if (c % groups) continue;
              auto spec = test::group_norm_spec(true, t, format);
              spec.inputs[0].shape = {test::lit(n), test::lit(c), test::lit(hw), test::lit(hw)};
              spec.inputs[1].shape = spec.inputs[2].shape = {test::lit(c)};
              spec.graph[0].args["num_groups"] = groups;
              spec.cases = {test::make_case({}, true)};
              if (!gn.covers(spec, nullptr)) continue;
              ++covered;
              EXPECT_TRUE(gn.valid(gn.default_variant(spec), spec, &why))
                  << fmt::format("group_norm_cuda, {} {} [{}, {}, {}, {}] in {} groups: {}", format, dtype_name(t), n, c, hw, hw, groups, why);
            }
  EXPECT_EQ(covered, 220);  // every contiguous shape; channels_last GroupNorm is not this family's
  covered = 0;
  const family& pool = cuda_family("pool_cuda");
  for (const char* format : {"contiguous", "channels_last"})
    for (int64_t c : {3, 64, 2048})
      for (int64_t hw : {1, 7, 56})
        for (int64_t n : {1, 256}) {
          auto spec = test::pool_spec(format);
          spec.inputs[0].shape = {test::lit(n), test::lit(c), test::lit(hw), test::lit(hw)};
          spec.cases = {test::make_case({}, true)};
          if (!pool.covers(spec, nullptr)) continue;
          ++covered;
          EXPECT_TRUE(pool.valid(pool.default_variant(spec), spec, &why))
              << fmt::format("pool_cuda, {} [{}, {}, {}, {}]: {}", format, n, c, hw, hw, why);
        }
  EXPECT_EQ(covered, 36);
  const family& pw = cuda_family("pointwise_cuda");
  for (dtype t : {dtype::bfloat16, dtype::float32})
    for (int64_t rows : {1, 3, 4096, 65536})
      for (int64_t d : {1, 7, 256, 4096}) {
        auto spec = test::swiglu_spec(t);
        spec.inputs[0].shape = spec.inputs[1].shape = {test::lit(rows), test::lit(d)};
        spec.cases = {test::make_case({}, true)};
        EXPECT_TRUE(pw.valid(pw.default_variant(spec), spec, &why))
            << fmt::format("pointwise_cuda, {} [{}, {}]: {}", dtype_name(t), rows, d, why);
      }
}

// row_softmax's `head` changes only rows longer than the register cache: where every row fits, both values emit one
// kernel (the proposer skips a move to a source the tree holds); where rows are longer, head=1 is its own kernel.
TEST(families_cuda, row_softmax_head_only_matters_for_rows_longer_than_the_cache) {
  const family& sm = cuda_family("row_softmax_cuda");
  const auto s = test::softmax_spec();  // rows of 64 values
  knob_values v = sm.default_variant(s);
  EXPECT_EQ(v.at("head"), "0");
  knob_values h = v;
  h["head"] = "1";
  EXPECT_EQ(sm.emit(s, h), sm.emit(s, v));
  auto vocab = test::softmax_spec(false, true);
  vocab.inputs[0].shape = {test::lit(512), test::lit(128256)};
  vocab.cases = {test::make_case({}, true)};
  v = sm.default_variant(vocab);  // a cluster of 8 x 256 threads x 32 values: 65536 of the row
  h = v;
  h["head"] = "1";
  const std::string with = sm.emit(vocab, h);
  EXPECT_NE(with, sm.emit(vocab, v));
  EXPECT_NE(with.find("constexpr bool k_head = true;"), std::string::npos);
}

// ragged=1 compiles the ragged path in where some case (gated or not) has rows that are not a whole number of
// vectors; the default takes it where a gated case has them. Where no case has them, at vec=1 and under top-k the
// knob is canonically 0 (the same kernel). A stored winner recorded before the knob re-emits with 0 (`before`).
TEST(families_cuda, row_softmax_ragged_path_only_where_a_case_has_ragged_rows) {
  const family& sm = cuda_family("row_softmax_cuda");
  auto with = [&](const workload_spec& s, knob_values changes) {
    knob_values v = sm.default_variant(s);
    for (auto& [k, val] : changes) v[k] = val;
    return v;
  };
  auto emits_ragged = [&](const workload_spec& s, knob_values changes = {}) {
    return sm.emit(s, with(s, changes)).find("constexpr bool k_ragged = true;") != std::string::npos;
  };
  auto s = test::softmax_spec();  // rows of 64 (gated) and 37
  EXPECT_EQ(sm.default_variant(s).at("ragged"), "0");
  EXPECT_FALSE(emits_ragged(s));
  EXPECT_TRUE(emits_ragged(s, {{"ragged", "1"}}));
  EXPECT_FALSE(emits_ragged(s, {{"ragged", "1"}, {"vec", "1"}}));
  s.cases.pop_back();  // rows of 64 only
  EXPECT_FALSE(emits_ragged(s, {{"ragged", "1"}}));
  EXPECT_EQ(sm.canonical_knobs(s, with(s, {{"ragged", "1"}})).at("ragged"), "0");
  auto vocab = test::softmax_spec(false, true);
  vocab.inputs[0].shape = {test::sym("T"), test::lit(50257)};
  vocab.cases = {test::make_case({{"T", 4}}, true)};
  EXPECT_EQ(sm.default_variant(vocab).at("ragged"), "1");
  EXPECT_TRUE(emits_ragged(vocab));
  EXPECT_FALSE(emits_ragged(test::softmax_spec(false, false, 4), {{"ragged", "1"}}));
  const auto ks = sm.knobs();
  auto k = std::find_if(ks.begin(), ks.end(), [](const knob& x) { return x.name == "ragged"; });
  ASSERT_NE(k, ks.end());
  EXPECT_EQ(k->before, "0");
}

// cache=smem keeps a row in the narrowest type that holds the prologue's values exactly: a 16-bit input through
// widening casts, a cast's 16-bit type, and float once the prologue computes (a scale).
TEST(families_cuda, row_softmax_smem_cache_is_16_bit_only_where_exact) {
  const family& sm = cuda_family("row_softmax_cuda");
  auto spec_of = [](dtype in, std::vector<std::pair<std::string, nlohmann::json>> steps) {
    workload_spec s;
    s.name = "test-cache-type";
    s.inputs.push_back(test::tensor_input("x", {test::sym("T"), test::lit(5000)}, in));
    bool first = true;
    for (auto& [op, args] : steps) {
      if (first) args["input"] = "x";
      first = false;
      s.graph.push_back({op, args, {}});
    }
    s.cases = {test::make_case({{"T", 3}}, true)};
    return s;
  };
  auto cache_type = [&](const workload_spec& s) {
    knob_values v = sm.default_variant(s);
    v["cache"] = "smem";
    const std::string src = sm.emit(s, v);
    const auto at = src.find("using cache_t = ");
    return at == std::string::npos ? std::string("none") : src.substr(at + 16, src.find(';', at) - at - 16);
  };
  EXPECT_EQ(cache_type(spec_of(dtype::bfloat16, {{"log_softmax", {{"dim", -1}, {"dtype", "float32"}}}})),
            "__nv_bfloat16");
  EXPECT_EQ(cache_type(spec_of(dtype::bfloat16, {{"cast", {{"dtype", "float32"}}}, {"softmax", {{"dim", -1}}}})),
            "__nv_bfloat16");
  EXPECT_EQ(cache_type(spec_of(dtype::float32, {{"cast", {{"dtype", "float16"}}}, {"softmax", {{"dim", -1}}}})),
            "__half");
  EXPECT_EQ(cache_type(spec_of(dtype::float16, {{"scale", {{"factor", 0.125}}}, {"softmax", {{"dim", -1}}}})), "float");
  EXPECT_EQ(cache_type(spec_of(dtype::float32, {{"softmax", {{"dim", -1}}}})), "float");
}

TEST(families_cuda, valid_rejects_impossible_combinations) {
  const family& sm = cuda_family("row_softmax_cuda");
  auto topk = test::softmax_spec(false, false, 4);
  auto v = sm.default_variant(topk);
  std::string why;
  v["strategy"] = "block";
  EXPECT_FALSE(sm.valid(v, topk, &why));
  EXPECT_NE(why.find("warp"), std::string::npos) << why;
  v = sm.default_variant(test::softmax_spec());
  v["chunks"] = "16";
  v["vec"] = "8";
  EXPECT_FALSE(sm.valid(v, test::softmax_spec(), &why));
  v = sm.default_variant(test::softmax_spec());
  v["vec"] = "3";
  EXPECT_FALSE(sm.valid(v, test::softmax_spec(), &why));
  const family& gn = cuda_family("group_norm_cuda");
  auto g = gn.default_variant(test::group_norm_spec());
  g["strategy"] = "split";
  g["stats"] = "twopass";
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  EXPECT_NE(why.find("twopass"), std::string::npos) << why;
  g["strategy"] = "team";  // the team's blocks meet once per row: one-pass statistics only
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  g["strategy"] = "stream";  // so do the stream's statistics items
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  g["stats"] = "shifted";
  EXPECT_TRUE(gn.valid(g, test::group_norm_spec(), &why)) << why;
}

TEST(families_cuda, group_norm_ring_needs_16_byte_vectors_and_room_for_its_copies_in_flight) {
  const family& gn = cuda_family("group_norm_cuda");
  auto g = gn.default_variant(test::group_norm_spec());  // bfloat16 x: 8 elements make 16 bytes
  g["strategy"] = "ring";
  std::string why;
  EXPECT_TRUE(gn.valid(g, test::group_norm_spec(), &why)) << why;
  g["stats"] = "twopass";  // one-pass statistics, as stream's
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  g["stats"] = "sumsq";
  g["vec"] = "4";  // 8 bytes: no bulk copies
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  EXPECT_NE(why.find("16-byte"), std::string::npos) << why;
  EXPECT_TRUE(gn.valid(g, test::group_norm_spec(false, dtype::float32), &why)) << why;  // 4 floats do
  g["vec"] = "8";
  g["ring_kb"] = "64";
  g["seg_kb"] = "32";
  g["ahead"] = "1";  // two slots of 32 KiB: one in flight leaves one, not the two it needs
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  EXPECT_NE(why.find("3 slots"), std::string::npos) << why;
  g["seg_kb"] = "16";
  EXPECT_TRUE(gn.valid(g, test::group_norm_spec(), &why)) << why;
  // The stream knobs it does not read are fixed in the source; the ring's own are read.
  const std::string src = gn.emit(test::group_norm_spec(), g);
  EXPECT_NE(src.find("ring_kb=64"), std::string::npos);
  EXPECT_TRUE(knob_read(gn, test::group_norm_spec(), g, "ring_kb"));
  EXPECT_FALSE(knob_read(gn, test::group_norm_spec(), g, "lag_mb"));
  EXPECT_NE(src.find("lag_mb=0 "), std::string::npos);
}

TEST(families_cuda, group_norm_stream_stages_fit_in_shared_memory) {
  const family& gn = cuda_family("group_norm_cuda");
  auto g = gn.default_variant(test::group_norm_spec());
  g["strategy"] = "stream";
  g["stages"] = "4";
  g["seg_kb"] = "64";  // 256 KiB a block
  std::string why;
  EXPECT_FALSE(gn.valid(g, test::group_norm_spec(), &why));
  EXPECT_NE(why.find("256 KiB"), std::string::npos) << why;
  g["seg_kb"] = "32";
  EXPECT_TRUE(gn.valid(g, test::group_norm_spec(), &why)) << why;
  const std::string src = gn.emit(test::group_norm_spec(), g);
  EXPECT_NE(src.find("constexpr int k_stages = 4;"), std::string::npos);
  // Strategies that do not stream fix the knobs (one source for every value they ignore).
  g["strategy"] = "split";
  const std::string split = gn.emit(test::group_norm_spec(), g);
  EXPECT_NE(split.find("constexpr int k_stages = 2;"), std::string::npos);
  EXPECT_NE(split.find("constexpr int k_publish = pub_counter;"), std::string::npos);
}

TEST(families_cuda, pool_small_batch_launch_knobs) {
  const family& pool = cuda_family("pool_cuda");
  // 128 threads for the NCHW small launch; channels_last batch 1 of 7x7 planes: as many threads across channels as
  // leave a row of threads per position (one load each) in 256-thread blocks.
  auto nchw = test::pool_spec();
  nchw.cases = {test::make_case({{"N", 32}, {"C", 2048}}, true), test::make_case({{"N", 1}, {"C", 2048}}, true)};
  auto v = pool.default_variant(nchw);
  EXPECT_EQ(v.at("threads"), "256");
  EXPECT_EQ(v.at("small_threads"), "128");
  auto cl = test::pool_spec("channels_last");
  cl.cases = nchw.cases;
  v = pool.default_variant(cl);
  EXPECT_EQ(v.at("small_cl_threads"), "4");
  EXPECT_EQ(v.at("small_threads"), "256");
  // Flat reads need blocks of planes that make a multiple of 16 bytes: 2 planes of 7x7 fp16 do not, 8 do.
  std::string why;
  v = pool.default_variant(test::pool_spec());
  v["small_direct"] = "2";
  v["small_threads"] = "64";
  v["small_tpp"] = "32";
  EXPECT_FALSE(pool.valid(v, test::pool_spec(), &why));
  EXPECT_NE(why.find("small_direct=2"), std::string::npos) << why;
  v["small_tpp"] = "8";
  EXPECT_TRUE(pool.valid(v, test::pool_spec(), &why)) << why;
  // The small launch's block is small_threads, or threads when 0.
  v["small_threads"] = "0";
  v["threads"] = "64";
  EXPECT_TRUE(pool.valid(v, test::pool_spec(), &why)) << why;
  EXPECT_NE(pool.emit(test::pool_spec(), v).find("constexpr int k_small_threads = 64;"), std::string::npos);
  // Two kernels for the channels_last small launch: one at a time.
  v = pool.default_variant(cl);
  v["small_cl_warp"] = "2";
  EXPECT_TRUE(pool.valid(v, cl, &why)) << why;
  EXPECT_NE(pool.emit(cl, v).find("constexpr int k_small_cl_warp = 2;"), std::string::npos);
  v["small_cl_loop"] = "4";
  EXPECT_FALSE(pool.valid(v, cl, &why));
  EXPECT_NE(why.find("small_cl_loop"), std::string::npos) << why;
}

TEST(families_cuda, emitted_source_names_family_knobs_and_graph) {
  const family& f = cuda_family("row_softmax_cuda");
  auto spec = test::softmax_spec(true);
  auto v = f.default_variant(spec);
  auto src = f.emit(spec, v);
  EXPECT_EQ(src.rfind("// kforge kernel: family row_softmax_cuda, version " + std::to_string(f.version()) + "\n", 0), 0u)
      << src.substr(0, 200);
  // One header: every knob, in one list, at the value the code reads.
  auto header = parse_kernel_header(src);
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->knobs, f.canonical_knobs(spec, v));
  EXPECT_EQ(header->knobs.size(), f.knobs().size());
  EXPECT_NE(src.find("strategy=" + v.at("strategy")), std::string::npos);
  EXPECT_NE(src.find("softcap"), std::string::npos);
  EXPECT_NE(src.find("extern \"C\" int kf_launch("), std::string::npos);
  // Only the ABI header, CUDA headers and the standard library.
  std::smatch m;
  std::string rest = src;
  while (std::regex_search(rest, m, std::regex(R"(#include [<"]([^>"]+)[>"])"))) {
    const std::string h = m[1];
    EXPECT_TRUE(h == "kf_abi.h" || h.rfind("cuda", 0) == 0 || h.rfind("cooperative_groups", 0) == 0 || h == "stdint.h")
        << h;
    rest = m.suffix();
  }
  // Knobs change the source (and the tanh knob is read only when the graph has a softcap).
  auto w = v;
  w["threads"] = v.at("threads") == "64" ? "128" : "64";
  EXPECT_NE(f.emit(spec, w), src);
  auto plain = test::softmax_spec();
  plain.graph.erase(plain.graph.begin());
  plain.graph[0].args["input"] = "x";
  auto pv = f.default_variant(plain);
  EXPECT_FALSE(knob_read(f, plain, pv, "tanh"));
  auto approx = pv;
  approx["tanh"] = "approx";
  EXPECT_EQ(f.emit(plain, approx), f.emit(plain, pv));
  EXPECT_TRUE(knob_read(f, spec, v, "tanh"));
  // The fixed files are emitted without their stand-alone preamble.
  EXPECT_EQ(src.find("KF_EMITTED"), std::string::npos);
  EXPECT_EQ(src.find("_stub.cuh"), std::string::npos);
}

// canonical_knobs: what emit reads. A variant and its canonical knobs emit one source, the canonical knobs are valid
// and canonical themselves, and the header lists them all.
TEST(families_cuda, canonical_knobs_emit_the_same_source) {
  for (auto& c : cases()) {
    const family& f = cuda_family(c.family);
    for (auto& v : test::covering_sets(f, c.rich)) {
      const knob_values k = f.canonical_knobs(c.rich, v);
      std::string why;
      EXPECT_TRUE(f.valid(k, c.rich, &why)) << c.family << ": " << why;
      EXPECT_EQ(f.canonical_knobs(c.rich, k), k) << c.family;
      const std::string src = f.emit(c.rich, v);
      EXPECT_EQ(f.emit(c.rich, k), src) << c.family;
      auto header = parse_kernel_header(src);
      ASSERT_TRUE(header.has_value()) << c.family;
      EXPECT_EQ(header->family, f.name());
      EXPECT_EQ(header->version, f.version());
      EXPECT_EQ(header->knobs, k);
    }
  }
}

// A variant's source and the "knob=value" pairs its code depends on: every knob canonical_knobs does not fix for it
// (another strategy's knobs, another layout's, tanh without a softcap are fixed).
struct emitted {
  std::string source;
  std::set<std::string> read;
};

emitted emit_variant(const family& f, const workload_spec& spec, const knob_values& v) {
  emitted e{f.emit(spec, v), {}};
  const knob_values c = f.canonical_knobs(spec, v);
  for (auto& k : f.knobs())
    if (knob_read(f, spec, c, k.name)) e.read.insert(k.name + "=" + c.at(k.name));
  return e;
}

// A variant whose code reads `knob`=`value`: the default of one of `specs` with that value and up to two other knobs
// changed, the first the family accepts; nullopt when there is none.
std::optional<emitted> activating_variant(const family& f, const std::vector<workload_spec>& specs,
                                          const std::string& knob, const std::string& value) {
  const auto ks = f.knobs();
  const std::string want = knob + "=" + value;
  auto try_variant = [&](const workload_spec& spec, const knob_values& v) -> std::optional<emitted> {
    if (!f.valid(v, spec, nullptr)) return std::nullopt;
    emitted e = emit_variant(f, spec, v);
    if (!e.read.count(want)) return std::nullopt;
    return e;
  };
  for (auto& spec : specs) {
    auto base = f.default_variant(spec);
    base[knob] = value;
    if (auto e = try_variant(spec, base)) return e;
    for (size_t a = 0; a < ks.size(); ++a)
      for (auto& va : ks[a].values) {
        if (ks[a].name == knob) continue;
        auto one = base;
        one[ks[a].name] = va;
        if (auto e = try_variant(spec, one)) return e;
      }
    for (size_t a = 0; a < ks.size(); ++a)
      for (size_t b = a + 1; b < ks.size(); ++b)
        for (auto& va : ks[a].values)
          for (auto& vb : ks[b].values) {
            if (ks[a].name == knob || ks[b].name == knob) continue;
            auto two = base;
            two[ks[a].name] = va;
            two[ks[b].name] = vb;
            if (auto e = try_variant(spec, two)) return e;
          }
  }
  return std::nullopt;
}

// The variants a family case compiles: its covering sets on the rich spec, the others' defaults, the extras, and
// for each knob value none of those reads (a cluster size beside a strategy that has no cluster), a variant that
// does.
std::vector<emitted> sources_of(const family_case& c) {
  const family& f = cuda_family(c.family);
  std::vector<emitted> out;
  for (auto& s : test::covering_sets(f, c.rich)) out.push_back(emit_variant(f, c.rich, s));
  for (auto& o : c.others) out.push_back(emit_variant(f, o, f.default_variant(o)));
  std::vector<workload_spec> specs = {c.rich};
  for (auto& [spec, knobs] : c.extra) {
    auto v = f.default_variant(spec);
    for (auto& [k, val] : knobs) v[k] = val;
    std::string why;
    EXPECT_TRUE(f.valid(v, spec, &why)) << c.family << ": " << why;
    out.push_back(emit_variant(f, spec, v));
    specs.push_back(spec);
  }
  specs.insert(specs.end(), c.others.begin(), c.others.end());
  std::set<std::string> read;
  for (auto& e : out) read.insert(e.read.begin(), e.read.end());
  for (auto& k : f.knobs())
    for (auto& val : k.values)
      if (!read.count(k.name + "=" + val))
        if (auto e = activating_variant(f, specs, k.name, val)) {
          read.insert(e->read.begin(), e->read.end());
          out.push_back(std::move(*e));
        }
  return out;
}

// Every value of every knob reaches the code of some compiled source: a value no valid variant uses in its code
// (a dead value) fails here.
TEST(families_cuda, every_knob_value_reaches_an_emitted_source) {
  std::map<std::string, std::set<std::string>> shown;  // family -> "knob=value"
  for (auto& c : cases())
    for (auto& e : sources_of(c)) shown[c.family].insert(e.read.begin(), e.read.end());
  for (auto& [name, values] : shown)
    for (auto& k : cuda_family(name).knobs())
      for (auto& val : k.values)
        EXPECT_TRUE(values.count(k.name + "=" + val)) << name << ": " << k.name << "=" << val
                                                      << " reaches no compiled source's code";
}

// The static scan (the verifier's first stage) passes every source a family emits: a family whose code trips a rule
// (a helper named like a socket call, say) would fail every candidate on the GPU.
TEST(families_cuda, every_emitted_source_passes_the_static_scan) {
  for (auto& c : cases())
    for (auto& e : sources_of(c))
      for (auto& f : static_scan(e.source, {device_kind::cuda, {}}))
        ADD_FAILURE() << c.family << ": " << f.rule << " line " << f.line << ": " << f.token << " (" << f.detail << ")";
}

// row_softmax_cuda's division by magic numbers (a mask's leading dims, rows < 2^31) gives C++'s quotient for
// divisors 1 to 2^31 and numerators up to 2^31 - 1: a host program compiled by nvcc from the family's own file
// checks edge and random pairs (no GPU needed: div_of is __host__ __device__).
TEST(families_cuda, row_softmax_fast_division_is_exact_below_two_to_the_31) {
  if (std::string(KFORGE_NVCC).empty()) GTEST_SKIP() << "built without CUDA: no nvcc to compile the check";
  temp_dir dir("kf-fast-div");
  write_file_atomic(dir.path() / "check.cu", R"(#include "row_softmax_cuda.cuh"
#include <cstdio>
#include <random>
int main() {
  std::mt19937_64 g(7);
  std::vector<uint64_t> ds = {1, 2, 3, 5, 7, 12, 77, 128, 1000, 1024, 4095, 65535, 65537, (1u << 20) + 7,
                              (1u << 30) + 1, (1u << 31) - 1, 1u << 31};
  for (int i = 0; i < 2000; ++i) ds.push_back(1 + g() % (1u << 31));
  long bad = 0, checked = 0;
  for (uint64_t d : ds) {
    const kfk::fast_div f = kfk::make_fast_div((uint32_t)d);
    std::vector<uint64_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, (1u << 31) - 1, (1u << 31) - 2};
    for (int i = 0; i < 200; ++i) ns.push_back(g() % (1u << 31));
    for (uint64_t n : ns) {
      if (n >= (1u << 31)) continue;
      ++checked;
      if (kfk::div_of(f, (uint32_t)n) != n / d && bad++ < 5)
        std::printf("%llu / %llu: %u\n", (unsigned long long)n, (unsigned long long)d, kfk::div_of(f, (uint32_t)n));
    }
  }
  std::printf("checked %ld, wrong %ld\n", checked, bad);
  return bad != 0;
}
)");
  const std::string exe = (dir.path() / "check").string();
  auto build = run_process({KFORGE_NVCC, "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
                            "-I" KFORGE_SOURCE_DIR "/lib/exec", "-I" KFORGE_SOURCE_DIR "/lib/search/families", "-o",
                            exe, (dir.path() / "check.cu").string()});
  ASSERT_TRUE(build.ok()) << build.err.substr(0, 4000);
  auto r = run_process({exe});
  EXPECT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("wrong 0"), std::string::npos) << r.out;
}

TEST(families_cuda, sources_compile_for_every_knob_value) {
  if (std::string(KFORGE_NVCC).empty()) GTEST_SKIP() << "built without CUDA: no nvcc to compile candidates";
  temp_dir dir("kf-families-cuda");
  std::vector<std::future<process_result>> builds;
  std::vector<std::string> labels;
  for (auto& c : cases()) {
    std::vector<std::string> sources;
    for (auto& e : sources_of(c)) sources.push_back(std::move(e.source));
    const std::string stem = c.family + "_" + std::to_string(labels.size());
    auto src = dir.path() / (stem + ".cu");
    write_file_atomic(src, combine(sources));
    std::vector<std::string> argv = {KFORGE_NVCC, "-O1", "-std=c++17", "-c", "-Xcompiler", "-fPIC",
                                     "-gencode=arch=compute_90a,code=sm_90a", "-I" KFORGE_SOURCE_DIR "/lib/exec",
                                     "-o", (dir.path() / (stem + ".o")).string(), src.string()};
    labels.push_back(c.family + " (" + std::to_string(sources.size()) + " variants)");
    builds.push_back(std::async(std::launch::async, [argv] { return run_process(argv); }));
  }
  for (size_t i = 0; i < builds.size(); ++i) {
    auto r = builds[i].get();
    EXPECT_TRUE(r.ok()) << labels[i] << "\n" << r.err.substr(0, 4000);
  }
}

// The row_norm defaults of long rows hold what their registers take: LayerNorm with weight, bias and GELU and
// RMSNorm, 16-bit and float32, rows of 16384 to 131072 values (odd ones too, which take the scalar path), one row
// (clusters) and 600 (a block a row). ptxas gave the earlier defaults 0.4 to 1.5 KB of spills a thread; a few
// bytes (a stack slot ptxas keeps) are not counted as a spill here.
TEST(families_cuda, row_norm_defaults_of_long_rows_do_not_spill) {
  if (std::string(KFORGE_NVCC).empty()) GTEST_SKIP() << "built without CUDA: no nvcc to compile candidates";
  const family& rn = cuda_family("row_norm_cuda");
  temp_dir dir("kf-row-norm-spills");
  std::vector<std::future<process_result>> builds;
  std::vector<std::string> labels;
  for (bool rms : {false, true})
    for (dtype t : {dtype::bfloat16, dtype::float32})
      for (int64_t n : {16384, 32768, 70001, 131072})
        for (int64_t rows : {1, 600}) {
          auto spec = test::row_norm_spec(rms, t);
          spec.inputs[0].shape = {test::lit(rows), test::lit(n)};
          for (size_t i = 1; i < spec.inputs.size(); ++i) spec.inputs[i].shape = {test::lit(n)};
          spec.graph[0].args["normalized_shape"] = {n};
          const auto v = rn.default_variant(spec);
          labels.push_back(fmt::format("{} {} rows of {} {} ({})", rms ? "RMSNorm" : "LayerNorm", rows, n,
                                       dtype_name(t), fmt::join(v, " ")));
          const auto src = dir.path() / fmt::format("v{}.cu", labels.size());
          write_file_atomic(src, rn.emit(spec, v));
          std::vector<std::string> argv = {KFORGE_NVCC, "-O3", "-std=c++17", "-c", "-Xcompiler", "-fPIC",
                                           "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                                           "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", (dir.path() / "v.o").string() +
                                           std::to_string(labels.size()), src.string()};
          builds.push_back(std::async(std::launch::async, [argv] { return run_process(argv); }));
        }
  for (size_t i = 0; i < builds.size(); ++i) {
    auto r = builds[i].get();
    ASSERT_TRUE(r.ok()) << labels[i] << "\n" << r.err.substr(0, 4000);
    const resource_usage u = parse_ptxas_resources(r.err + r.out);  // the worst kernel of the unit
    EXPECT_GE(u.kernels, 4) << labels[i] << ": ptxas reported fewer kernels\n" << r.err.substr(0, 2000);
    EXPECT_LE(u.spill_stores, 32) << labels[i] << " spills\n" << r.err.substr(0, 4000);
  }
}

}  // namespace
}  // namespace kf
