// col_softmax_cuda: softmax / log_softmax over a dim before the last (a segmentation head's classes over dim 1 of
// [B, C, H, W], attention normalized over the queries), with a fused prologue (scale, softcap, casts) and casts
// after, emitted as one CUDA translation unit. x is read as [outer, n, inner]: a thread owns `vec` neighbouring
// columns and every `ty`-th value of the reduced dim, so each load is a 16-byte vector of the contiguous inner dim
// and a block's loads of one value of the dim are side by side. The values stay in registers between the
// statistics and the write (`cache=regs`, where n fits ty x chunks), in shared memory (`cache=smem`), or are read
// again. This file emits the variant's constants, types and prologue; the fixed code is col_softmax_cuda.cuh.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

// The reduction's shape in the spec's timed cases: x as [outer, n, inner].
struct col_shape {
  int64_t n = 1, columns = 1;  // columns: outer x inner
  int64_t inner = 1;
};

std::vector<col_shape> col_shapes(const workload_spec& spec, const softmax_graph& g) {
  std::vector<col_shape> out;
  for (auto& shape : tuning_shapes(spec, *spec.find_input(g.input))) {
    if (static_cast<int>(shape.size()) != g.rank) continue;
    col_shape c;
    int64_t outer = 1;
    for (int d = 0; d < g.dim; ++d) outer *= shape[d];
    c.n = shape[g.dim];
    for (int d = g.dim + 1; d < g.rank; ++d) c.inner *= shape[d];
    c.columns = outer * c.inner;
    out.push_back(c);
  }
  return out;
}

int pow2_at_least(int64_t v, int cap) {
  int p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

// Floats a thread keeps of its values (the register cache): chunks x vec.
constexpr int k_cached_floats = 64;
// ... and what the defaults keep, in vectors of at most 4 values. ADE20K's 150 classes over [8, 150, 128, 128] and
// [1, 150, 64, 64] float16 (a search on an H100, stop 32): 8 vectors of 8 values a thread (64 floats, 106 registers:
// two blocks of 256 threads an SM) 29.4 us, of 4 values 23.2, of 2 values 23.3; computing the max and the sum in
// one pass (online) 76.5 (an exp and a branch a value).
constexpr int k_default_floats = 32;
constexpr int k_default_vec = 4;
// Columns x rows of threads (threads x vec) whose partial statistics fit 32 KB of shared memory (two floats each).
constexpr int k_partials_floats = 4096;

class col_softmax_cuda final : public family {
 public:
  std::string name() const override { return "col_softmax_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: log_softmax as (x - max) - log sum (x - (max + log sum) lost log sum next to a large max: every candidate
  // failed a float32 Cityscapes spec's large-magnitude inputs on an H100).
  // 3: cache=smem.
  int version() const override { return 3; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_col_softmax(spec, why_not);
    if (!g) return false;
    if (!cuda_emit::storable(g->in_type) || !cuda_emit::storable(g->out_type)) {
      if (why_not) *why_not = "col_softmax_cuda handles float32/float16/bfloat16/float64 tensors only";
      return false;
    }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"64", "128", "256", "512", "1024"}, "threads per block"},
        {"ty",
         {"1", "2", "4", "8", "16", "32"},
         "threads along the reduced dim (each takes every ty-th value; their statistics meet in shared memory); "
         "threads / ty along the columns"},
        {"vec", {"1", "2", "4", "8"}, "neighbouring columns a thread owns (16-byte loads at 8 x 16-bit)"},
        {"cache",
         {"stream", "regs", "smem"},
         "regs: a thread keeps its values in registers between the statistics and the write where n fits ty x "
         "chunks; smem: the block keeps its n x (threads / ty) x vec values in shared memory as floats where they "
         "fit (x read once, each exp taken once); stream: each pass reads x again"},
        {"chunks", {"1", "2", "4", "8", "16", "32", "64"}, "cache=regs: values of the reduced dim a thread keeps"},
        {"online",
         {"0", "1"},
         "1: the max and the sum in one pass (an exp a value more); 0: the max, then the sum (streamed: x read "
         "three times)"},
        {"pdl",
         {"0", "1"},
         "1: launched with programmatic dependent launch, the blocks scheduled while the previous kernel on the "
         "stream finishes and waiting (griddepcontrol.wait) for its results before touching memory"},
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"threads", "256"}, {"ty", "8"},     {"vec", "8"}, {"cache", "regs"},
                  {"chunks", "8"},    {"online", "0"}, {"pdl", "1"}};
    auto g = match_col_softmax(spec, nullptr);
    if (!g) return v;
    // The widest vector (at most 4 values, 16 bytes of x) that every timed case's inner dim is a whole number of:
    // another case still runs, a column a thread.
    const auto shapes = col_shapes(spec, *g);
    int vec = std::max(1, std::min(k_default_vec, static_cast<int>(16 / dtype_size(g->in_type))));
    for (auto& c : shapes)
      while (vec > 1 && c.inner % vec != 0) vec /= 2;
    v["vec"] = std::to_string(vec);
    int64_t min_groups = 0, max_n = 1;
    for (auto& c : shapes) {
      const int64_t groups = (c.columns + vec - 1) / vec;
      min_groups = min_groups == 0 ? groups : std::min(min_groups, groups);
      max_n = std::max(max_n, c.n);
    }
    // Rows of threads along the reduced dim: enough that the smallest timed case has about half an H200's threads
    // (two blocks of 1024 an SM) busy, and enough that a thread's share of the longest dim fits its register cache;
    // never more rows than values, at most 32.
    const int64_t want = int64_t{cuda_emit::k_reference_sms} * 1024;
    const int per_thread = k_default_floats / vec;
    int ty = pow2_at_least((want + std::max<int64_t>(min_groups, 1) - 1) / std::max<int64_t>(min_groups, 1), 32);
    ty = std::max(ty, pow2_at_least((max_n + per_thread - 1) / per_thread, 32));
    ty = std::min(ty, pow2_at_least(max_n, 32));
    v["ty"] = std::to_string(ty);
    const int64_t share = (max_n + ty - 1) / ty;
    if (share <= per_thread) {
      v["cache"] = "regs";
      v["chunks"] = std::to_string(pow2_at_least(share, per_thread));
    } else {
      v["cache"] = "stream";  // three reads of x (the second and third mostly from L2): online's exps cost more
      v["chunks"] = "1";
    }
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    (void)spec;
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    if (v.at("cache") == "regs" && knob_int(v, "chunks") * knob_int(v, "vec") > k_cached_floats)
      return fail(fmt::format("chunks x vec > {} floats a thread would spill registers", k_cached_floats));
    if (knob_int(v, "ty") > 1 && knob_int(v, "threads") * knob_int(v, "vec") > k_partials_floats)
      return fail(fmt::format("threads x vec > {}: the partial statistics would not fit 48 KB of shared memory",
                              k_partials_floats));
    return true;
  }

  // Only the register cache reads chunks.
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    (void)spec;
    knob_values k = v;
    if (v.at("cache") != "regs") k["chunks"] = "1";
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_col_softmax(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const knob_values k = canonical_knobs(spec, v);
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\n", cuda_emit::c_type(g->in_type),
                                cuda_emit::c_type(g->out_type));
    s += fmt::format(
        "constexpr int NT = {};\nconstexpr int k_ty = {};\nconstexpr int k_vec = {};\nconstexpr int k_chunks = {};\n"
        "constexpr int k_cache = {};  // m_stream 0, m_regs 1, m_smem 2 (col_softmax_cuda.cuh)\n"
        "constexpr size_t k_smem_limit = 227 * 1024;\nconstexpr bool k_online = {};\nconstexpr bool k_log = {};\n"
        "constexpr bool k_pdl = {};\nconstexpr int k_rank = {};\nconstexpr int k_dim = {};\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\n",
        k.at("threads"), k.at("ty"), k.at("vec"), k.at("chunks"),
        k.at("cache") == "regs" ? 1 : k.at("cache") == "smem" ? 2 : 0, k.at("online") == "1",
        g->log, k.at("pdl") == "1", g->rank, g->dim, spec.inputs.size(), input_index(spec, g->input));
    s += fmt::format("\n__device__ __forceinline__ float prologue(float x) {{\n{}  return x;\n}}\n",
                     cuda_emit::prologue_code(g->prologue));
    // The softmax's own result type and the casts after it round the values; the last rounding, to the stored
    // type, is the store's.
    std::vector<dtype> chain{g->softmax_type};
    chain.insert(chain.end(), g->epilogue_casts.begin(), g->epilogue_casts.end());
    s += fmt::format("\n__device__ __forceinline__ float finalize(float x) {{\n{}  return x;\n}}\n",
                     cuda_emit::rounding_code(chain, g->out_type));
    return cuda_emit::prelude(*this, spec, k, g->describe()) + cuda_emit::variant(s) +
           cuda_emit::fixed_file("search/families/col_softmax_cuda.cuh") + cuda_emit::epilogue();
  }
};

}  // namespace

std::unique_ptr<family> make_col_softmax_cuda() { return std::make_unique<col_softmax_cuda>(); }

}  // namespace kf
