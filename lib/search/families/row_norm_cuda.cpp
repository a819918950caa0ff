// row_norm_cuda: LayerNorm / RMSNorm over the trailing dims with a fused elementwise prologue (a residual add whose
// sum the kernel also returns, casts, scales) and epilogue (activations, casts, a gate), as one CUDA translation
// unit. Strategies: a team of 4 to 32 threads per row (short rows, several a warp), a block per row, or a cluster of
// blocks per row (few long rows, reduced through distributed shared memory); the row held in registers between the
// statistics and the write (one read) when it fits; one-shot or persistent grids, the latter optionally holding the
// weights in registers across rows; programmatic dependent launch. The fixed code is row_norm_cuda.cuh; the
// prologue and epilogue statements come from elementwise_emit.h.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/cuda_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "spec/ops.h"
#include "util/error.h"

namespace kf {
namespace {

struct row_shapes {
  int64_t n = 0, rows = 0;  // the longest row and the most rows of the timed cases
};

row_shapes summarize(const workload_spec& spec, const row_norm_graph& g) {
  row_shapes s;
  const input_spec* x = spec.find_input(spec.inputs[g.inputs[0]].name);
  for (auto& shape : tuning_shapes(spec, *x)) {
    if (shape.empty()) continue;
    int64_t n = 1, rows = 1;
    for (size_t d = 0; d < shape.size(); ++d) (d + g.normalized_dims < shape.size() ? rows : n) *= shape[d];
    s.n = std::max(s.n, n);
    s.rows = std::max(s.rows, rows);
  }
  return s;
}

// The widest stored type the kernel accesses in vectors: operands, weights, results.
size_t widest(const row_norm_graph& g) {
  size_t w = std::max<size_t>(dtype_size(g.out), dtype_size(g.norm_in));
  for (dtype t : g.types) w = std::max<size_t>(w, dtype_size(t));
  if (!g.weight.empty()) w = std::max<size_t>(w, dtype_size(g.weight_type));
  if (!g.bias.empty()) w = std::max<size_t>(w, dtype_size(g.bias_type));
  return w;
}

int strategy_code(const std::string& s) { return s == "team" ? 0 : s == "block" ? 1 : 2; }

// The row's floats a thread of a `block`-thread CTA holds in the defaults: its registers (65536 an SM, at most
// 255 a thread) less about 40 for addresses, indices and the statistics, shared with the weight and the bias
// (`affine` of them) held as floats beside each value when they are loaded with the row. More spills: ptxas gave
// a LayerNorm with weight, bias and GELU 0.1 to 1 KB of spills a thread at 512 and 1024 threads when the
// row's 32 to 64 floats a thread were sized without its weights (tests/search/families_cuda_test.cpp compiles
// the defaults of long rows and checks that none spills).
int64_t held_per_thread(int block, int affine) {
  const int64_t regs = std::min<int64_t>(255, 65536 / block);
  return std::max<int64_t>(1, (regs - 40) / (1 + affine));
}

class row_norm_cuda final : public family {
 public:
  std::string name() const override { return "row_norm_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: wload (1 read the weights with the row); 3: fit; 4: g_rn_sms; 5: unguarded loads, packed late weights;
  // 6: the scalar path holds what its registers take (k_scalar_chunks); 7: LayerNorm's statistics around the row's
  // first element (row_shift: rows of one value exact in float32); 8: RMSNorm's held-row sums written as before 7
  // (the same PTX as version 6 gave)
  int version() const override { return 8; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_row_norm(spec, why_not);
    if (!g) return false;
    for (int k : g->inputs)
      if (spec.inputs[k].memory_format != "contiguous") {
        if (why_not) *why_not = "row_norm_cuda reads contiguous rows; input " + spec.inputs[k].name + " is declared " +
                                spec.inputs[k].memory_format;
        return false;
      }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"strategy", {"team", "block", "cluster"}, "threads per row: a team of a warp or less, a block, a cluster of blocks"},
        {"team", {"4", "8", "16", "32"}, "threads per row for strategy=team (32 / team rows a warp)"},
        {"block", {"64", "128", "256", "512", "1024"}, "threads per block"},
        {"fit", {"0", "1"}, "strategy=block: launch the fewest whole warps that hold the row in `chunks` vectors a thread "
         "(at most `block`), so that fewer chunks mean more threads, not idle registers", "0"},
        {"cluster", {"2", "4", "8", "16"}, "blocks per row for strategy=cluster (16 is non-portable)"},
        {"vec", {"1", "2", "4", "8"}, "elements per access (16 bytes at most)"},
        {"chunks", {"1", "2", "3", "4", "5", "6", "8", "12", "16"},
         "vectors per thread held in registers: rows up to chunks x vec x the row's threads are read once"},
        {"waves", {"0", "1", "2", "4"}, "0: a CTA (cluster) per row step; k: persistent, k waves of resident CTAs"},
        {"wregs", {"0", "1"}, "persistent grids: weights and bias loaded into registers once, not with each row"},
        {"wload", {"auto", "row", "late"},
         "when the weights are read: with the row, into registers (one memory latency: few rows), after the statistics "
         "and before the writes, packed as stored (fewer registers: many rows), or auto: with the row when the rows "
         "fit in one wave of CTAs",
         "row"},
        {"onepass", {"0", "1"}, "LayerNorm: sum and sum of squares in one reduction instead of mean then deviations"},
        {"store", {"default", "streaming"}, "streaming: evict-first stores of the result"},
        {"math", {"precise", "fast"}, "the epilogue's exp/tanh: libm, or the multi-function unit's (verify decides)"},
        {"pdl", {"0", "1"}, "programmatic dependent launch: the launch overlaps the previous kernel's tail"},
    };
  }

  // Threads a row for strategy=cluster: cluster x block.
  std::vector<std::pair<std::string, std::string>> trades() const override { return {{"cluster", "block"}}; }

  knob_values default_variant(const workload_spec& spec) const override {
    auto g = match_row_norm(spec, nullptr);
    const size_t wide = g ? widest(*g) : 4;
    const int vec = static_cast<int>(std::min<size_t>(8, 16 / wide));
    const row_shapes s = g ? summarize(spec, *g) : row_shapes{};
    const int64_t vecs = std::max<int64_t>(1, (s.n + vec - 1) / vec);
    knob_values v = {{"strategy", "block"}, {"team", "32"}, {"block", "128"}, {"fit", "1"}, {"cluster", "2"}, {"vec", std::to_string(vec)},
                     {"chunks", "1"}, {"waves", "0"}, {"wregs", "0"}, {"wload", "auto"}, {"onepass", "0"}, {"store", "default"},
                     {"math", g && (g->out == dtype::float16 || g->out == dtype::bfloat16) ? "fast" : "precise"},
                     {"pdl", "1"}};
    // The fewest chunks (of the knob's values) that hold `per_thread` vectors.
    auto chunks_for = [](int64_t per_thread) {
      for (int c : {1, 2, 3, 4, 5, 6, 8, 12, 16})
        if (c >= per_thread) return c;
      return 16;
    };
    if (vecs <= 128) {  // short rows: a team of at most a warp, a few vectors each
      int team = 4;
      while (team < 32 && (vecs + team - 1) / team > 4) team *= 2;
      v["strategy"] = "team";
      v["team"] = std::to_string(team);
      v["chunks"] = std::to_string(chunks_for((vecs + team - 1) / team));
    } else {
      // A block per row, 128 threads when the row's vectors fit in 8 a thread, more for longer rows; a thread holds
      // at most what its registers take beside the weights (held_per_thread). A row no block holds goes to the
      // fewest CTAs of a cluster (then the fewest threads) that hold it when there are too few rows to fill the GPU
      // (8 CTAs of 1024 threads stream it where none does), and is streamed past the cache otherwise.
      const int affine = g ? static_cast<int>(!g->weight.empty()) + static_cast<int>(!g->bias.empty()) : 0;
      auto cap_at = [&](int block) { return std::clamp<int64_t>(held_per_thread(block, affine) / vec, 1, 8); };
      auto per_at = [&](int block, int cl) { return (vecs + int64_t{block} * cl - 1) / (int64_t{block} * cl); };
      int block = 128, cl = 1;
      while (block < 1024 && per_at(block, 1) > 8) block *= 2;
      if (per_at(block, 1) > cap_at(block)) {
        const int most = s.rows < 2 * cuda_emit::k_reference_sms ? 8 : 1;
        bool held = false;
        for (int c = 1; c <= most && !held; c *= 2)
          for (int b = 128; b <= 1024 && !held; b *= 2)
            if (per_at(b, c) <= cap_at(b)) block = b, cl = c, held = true;
        if (!held && most > 1) block = 1024, cl = 8;
      }
      if (cl > 1) {
        v["strategy"] = "cluster";
        v["cluster"] = std::to_string(cl);
      }
      v["block"] = std::to_string(block);
      v["chunks"] = std::to_string(chunks_for(std::min(per_at(block, cl), cap_at(block))));
    }
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto g = match_row_norm(spec, why_not);
    if (!g) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    const int vec = knob_int(v, "vec"), chunks = knob_int(v, "chunks");
    if (vec * widest(*g) > 16) return fail(fmt::format("vec={} of {}-byte values is more than 16 bytes", vec, widest(*g)));
    if (vec * chunks > 64) return fail(fmt::format("chunks x vec = {} floats a thread is more than 64 registers' worth", vec * chunks));
    if (v.at("strategy") == "team" && knob_int(v, "team") > knob_int(v, "block"))
      return fail("a team is larger than its block");
    return true;
  }

  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values c = v;
    auto g = match_row_norm(spec, nullptr);
    if (c["strategy"] != "team") c["team"] = "32";
    if (c["strategy"] != "cluster") c["cluster"] = "2";
    if (c["strategy"] != "block") c["fit"] = "0";
    if (c["waves"] == "0") c["wregs"] = "0";
    if (c["wregs"] == "1") c["wload"] = "auto";  // weights held across rows: read once, before the first
    if (!g || g->what != norm_graph::kind::layer_norm) c["onepass"] = "0";
    if (!g || !g->transcendental) c["math"] = "precise";
    return c;
  }

  std::string emit(const workload_spec& spec, const knob_values& given) const override {
    const knob_values v = canonical_knobs(spec, given);  // what the code reads, nothing else
    std::string why;
    const auto matched = match_row_norm(spec, &why);
    KF_ASSERT(matched, "row_norm_cuda emits a spec it does not cover: {}", why);
    const row_norm_graph& g = *matched;
    std::vector<std::string> ops;
    for (auto& call : spec.graph) ops.push_back(call.op);
    std::string src = cuda_emit::prelude(*this, spec, v, fmt::format("{} (one pass over each row)", fmt::join(ops, " -> ")));
    const int vec = knob_int(v, "vec");
    auto ctype = [](dtype t) { return cuda_emit::c_type(t); };
    std::string vars = fmt::format("using out_t = {};\nusing h_t = {};\nusing w_t = {};\nusing b_t = {};\n", ctype(g.out),
                                   ctype(g.h_type), ctype(g.weight.empty() ? dtype::float32 : g.weight_type),
                                   ctype(g.bias.empty() ? dtype::float32 : g.bias_type));
    std::vector<std::string> idx, codes, aligns;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      vars += fmt::format("using t{} = {};\n", k, ctype(g.types[k]));
      idx.push_back(std::to_string(g.inputs[k]));
      codes.push_back(ew::abi_code(g.types[k]));
      aligns.push_back(std::to_string(std::min<size_t>(16, vec * dtype_size(g.types[k]))));
    }
    auto flag = [&](const char* k) { return v.at(k) == "1" ? "true" : "false"; };
    vars += fmt::format(
        "constexpr int STRAT = {};\nconstexpr int TEAM = {};\nconstexpr int BLOCK = {};\nconstexpr bool FIT = {};\n"
        "constexpr int CL = {};\n"
        "constexpr int V = {};\nconstexpr int CHUNKS = {};\nconstexpr int WAVES = {};\nconstexpr bool WREGS = {};\n"
        "constexpr int WLOAD = {};\n"
        "constexpr bool ONEPASS = {};\nconstexpr bool STREAM = {};\nconstexpr bool PDL = {};\n",
        strategy_code(v.at("strategy")), v.at("team"), v.at("block"), flag("fit"), v.at("cluster"), vec, v.at("chunks"), v.at("waves"),
        flag("wregs"), v.at("wload") == "auto" ? 0 : v.at("wload") == "row" ? 1 : 2, flag("onepass"), v.at("store") == "streaming" ? "true" : "false", flag("pdl"));
    const int y_out = g.writes_input ? 1 - g.input_output : 0;
    vars += fmt::format(
        "constexpr bool k_layer = {};\nconstexpr bool k_has_w = {};\nconstexpr bool k_has_b = {};\n"
        "constexpr float k_eps = {};\nconstexpr bool k_write_h = {};\nconstexpr int k_y_output = {};\n"
        "constexpr int k_h_output = {};\nconstexpr int KF_N_INPUTS = {};\nconstexpr int KF_NORM_DIMS = {};\n"
        "constexpr int NOPND = {};\nconstexpr int NPRO = {};\nconstexpr int k_w_input = {};\nconstexpr int k_b_input = {};\n"
        "constexpr int kf_operand_input[NOPND] = {{{}}};\nconstexpr int kf_operand_dtype[NOPND] = {{{}}};\n"
        "constexpr int kf_operand_align[NOPND] = {{{}}};\n\n",
        g.what == norm_graph::kind::layer_norm ? "true" : "false", g.weight.empty() ? "false" : "true",
        g.bias.empty() ? "false" : "true", cuda_emit::float_literal(g.eps), g.writes_input ? "true" : "false", y_out,
        g.writes_input ? g.input_output : 0, spec.inputs.size(), g.normalized_dims, g.inputs.size(), g.prologue_operands,
        g.weight.empty() ? -1 : input_index(spec, g.weight), g.bias.empty() ? -1 : input_index(spec, g.bias),
        fmt::join(idx, ", "), fmt::join(codes, ", "), fmt::join(aligns, ", "));
    vars += cuda_emit::math_functions(v.at("math") == "fast");
    vars += "\nstruct rn_args;\n"
            "template <int VV>\n__device__ __forceinline__ void kf_pro(const rn_args& a, int64_t row, int64_t col, float* x);\n"
            "template <int VV>\n__device__ __forceinline__ void kf_epi(const rn_args& a, int64_t row, int64_t col, float* y);\n";
    src += cuda_emit::variant(vars);
    src += cuda_emit::fixed_file("search/families/row_norm_cuda.cuh");
    // The prologue (ops before the norm, operands [0, NPRO)) and the epilogue (after it, the rest), on VV elements.
    auto loads = [&](size_t from, size_t to) {
      std::string s;
      for (size_t k = from; k < to; ++k)
        s += fmt::format("  float x{0}[VV];\n  load_vec<t{0}, VV>(static_cast<const t{0}*>(a.o[{0}]) + row * a.ors[{0}] + col, x{0});\n", k);
      return s;
    };
    auto operand = [](size_t k) { return fmt::format("x{}[e]", k); };
    const std::string pro = ew::chain_statements(spec, g.step_types, operand, "    ", 0, g.norm_op, 1);
    const std::string epi =
        ew::chain_statements(spec, g.step_types, operand, "    ", g.norm_op + 1, spec.graph.size(), g.prologue_operands);
    src += cuda_emit::variant(fmt::format(
        "template <int VV>\n__device__ __forceinline__ void kf_pro(const rn_args& a, int64_t row, int64_t col, float* out) {{\n{}"
        "#pragma unroll\n  for (int e = 0; e < VV; ++e) {{\n    float v = x0[e];\n{}    out[e] = kf_round_to<h_t>(v);\n  }}\n}}\n"
        "template <int VV>\n__device__ __forceinline__ void kf_epi(const rn_args& a, int64_t row, int64_t col, float* y) {{\n{}"
        "#pragma unroll\n  for (int e = 0; e < VV; ++e) {{\n    float v = y[e];\n{}    y[e] = v;\n  }}\n}}\n",
        loads(0, g.prologue_operands), pro, loads(g.prologue_operands, g.inputs.size()), epi));
    src += cuda_emit::epilogue();
    return src;
  }
};

}  // namespace

std::unique_ptr<family> make_row_norm_cuda() { return std::make_unique<row_norm_cuda>(); }

}  // namespace kf
