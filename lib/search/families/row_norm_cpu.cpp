// row_norm_cpu: LayerNorm / RMSNorm over the trailing dims on the cpu, with a fused elementwise prologue (a residual
// add whose sum the kernel also returns, casts, scales) and epilogue (activations, casts, a gate), rows as OpenMP
// tasks. The knobs: threads and schedule, rows per task, float accumulators per reduction, whether a row's norm input
// is staged as floats between its reads, and the math of a transcendental prologue or epilogue (libm, or polynomials
// that vectorize). The fixed code is row_norm_cpu.h; the statements come from elementwise_emit.h.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "util/error.h"

namespace kf {
namespace {

class row_norm_cpu final : public family {
 public:
  std::string name() const override { return "row_norm_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 2: the shared cpu_elementwise.h; 3: the f16_load knob; 4: kf_ld_run and kf_st_run moved to cpu_elementwise.h; 5:
  // float16 roundings by kf_round_f16 (cpu_prelude.h: the same bits, vectorized)
  int version() const override { return 6; }

  // match_row_norm, with every tensor the kernel reads declared contiguous (it reads rows linearly).
  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_row_norm(spec, why_not);
    if (!g) return false;
    std::vector<std::string> read;
    for (int k : g->inputs) read.push_back(spec.inputs[k].name);
    if (!g->weight.empty()) read.push_back(g->weight);
    if (!g->bias.empty()) read.push_back(g->bias);
    for (auto& name : read)
      if (const input_spec* in = spec.find_input(name); in && in->memory_format != "contiguous") {
        if (why_not) *why_not = fmt::format("input {} is {}: row_norm_cpu reads contiguous rows", name, in->memory_format);
        return false;
      }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how tasks are dealt to threads"},
        {"rows_per_task", {"1", "4", "16", "64"}, "rows per OpenMP task"},
        {"lanes", {"4", "8", "16", "32"}, "float accumulators per reduction (SIMD lanes)"},
        {"cache_row", {"0", "1"},
         "1: the norm's input is staged as floats on the first read; 0: read again (from h, or through the prologue)"},
        {"math", {"libm", "poly"},
         "exp/tanh/erfc in the prologue or epilogue: libm's, or polynomials that vectorize (~1 ulp)"},
        cpu_emit::f16_load_knob(),
    };
  }

  // A float16 row is staged: converted once (F16C where the compiler targets it) rather than on each read.
  knob_values default_variant(const workload_spec& spec) const override {
    auto g = match_row_norm(spec, nullptr);
    const bool f16 = g && g->norm_in == dtype::float16;
    return {{"threads", "all"}, {"schedule", "static"},        {"rows_per_task", "4"},
            {"lanes", "32"},    {"cache_row", f16 ? "1" : "0"}, {"math", "poly"},
            {"f16_load", "bits"}};
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }

  // One thread deals no tasks (no OpenMP region: neither schedule nor rows per task is read); a graph without exp,
  // tanh or erfc reads no math.
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    if (k.count("threads") && k.at("threads") == "1") k["schedule"] = "static", k["rows_per_task"] = "4";
    if (auto g = match_row_norm(spec, nullptr); !g || !g->transcendental) k["math"] = "poly";
    cpu_emit::canonical_f16_load(spec, k);
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& given) const override;
};

std::string row_norm_cpu::emit(const workload_spec& spec, const knob_values& given) const {
  const knob_values v = canonical_knobs(spec, given);
  auto matched = match_row_norm(spec, nullptr);
  KF_ASSERT(matched.has_value(), "emit on a spec the family does not cover");
  const row_norm_graph& g = *matched;
  std::vector<std::string> ops, idx, codes;
  for (auto& call : spec.graph) ops.push_back(call.op);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    idx.push_back(std::to_string(g.inputs[k]));
    codes.push_back(ew::abi_code(g.types[k]));
  }
  const bool has_w = !g.weight.empty(), has_b = !g.bias.empty();
  const int y_output = g.writes_input ? 1 - g.input_output : 0, h_output = g.writes_input ? g.input_output : -1;
  auto flag = [](bool b) { return b ? "true" : "false"; };
  std::string code = cpu_emit::omp_macros(v.at("threads"), v.at("schedule"));
  code += fmt::format(
      "\nconstexpr bool kf_math_poly = {};  // exp, tanh, erfc: the polynomials (true) or libm's\n"
      "constexpr bool kf_parallel = {};  // false: one thread, no OpenMP region\n"
      "constexpr int kf_lanes = {};  // float accumulators per reduction (SIMD lanes)\n"
      "constexpr int64_t kf_rows_per_task = {};  // rows per OpenMP task\n"
      "constexpr bool kf_cache_row = {};  // the norm's input staged as floats between the row's reads\n"
      "constexpr bool kf_layer = {};  // LayerNorm (mean, then squared deviations); else RMSNorm (mean square)\n"
      "constexpr double kf_eps = {:.17g};\n"
      "constexpr int kf_n_inputs = {}, kf_rank = {}, kf_norm_dims = {};\n"
      "constexpr int kf_n_outputs = {}, kf_y_output = {}, kf_h_output = {};  // kf_h_output -1: the norm's input is not "
      "returned\n"
      "constexpr int kf_in_dtype = {}, kf_out_dtype = {};  // the norm's input (h) and the result\n"
      "constexpr int kf_w_input = {}, kf_w_dtype = {}, kf_b_input = {}, kf_b_dtype = {};  // -1: none\n"
      "constexpr bool kf_has_prologue = {};  // ops before the norm; else its input is operand 0 as stored\n"
      "constexpr int kf_n_opnd = {}, kf_n_pro = {};  // the operands: the first op's input, then each op's tensor "
      "operand; [0, kf_n_pro) are the prologue's\n"
      "constexpr int kf_opnd_input[kf_n_opnd] = {{{}}};\n"
      "constexpr int kf_opnd_dtype[kf_n_opnd] = {{{}}};\n",
      flag(v.at("math") == "poly"), flag(v.at("threads") != "1"), v.at("lanes"), v.at("rows_per_task"),
      flag(v.at("cache_row") == "1"), flag(g.what == norm_graph::kind::layer_norm), g.eps, spec.inputs.size(), g.rank,
      g.normalized_dims, g.writes_input ? 2 : 1, y_output, h_output, ew::abi_code(g.h_type), ew::abi_code(g.out),
      has_w ? input_index(spec, g.weight) : -1, ew::abi_code(has_w ? g.weight_type : dtype::float32),
      has_b ? input_index(spec, g.bias) : -1, ew::abi_code(has_b ? g.bias_type : dtype::float32), flag(g.norm_op > 0),
      g.inputs.size(), g.prologue_operands, fmt::join(idx, ", "), fmt::join(codes, ", "));
  // The prologue (operands [1, prologue_operands)) and the epilogue (the rest), in float, rounded only where the graph
  // casts (as torch.compile computes); row_norm_cpu.h rounds the prologue's value through the norm's input type.
  auto loads = [](size_t from, size_t to) {
    std::string s;
    for (size_t k = from; k < to; ++k) s += fmt::format("  const float x{0} = kf_ld<{0}>(p, j);\n", k);
    return s;
  };
  auto operand = [](size_t k) { return fmt::format("x{}", k); };
  const std::string pro = ew::chain_statements(spec, g.step_types, operand, "  ", 0, g.norm_op, 1);
  const std::string epi =
      ew::chain_statements(spec, g.step_types, operand, "  ", g.norm_op + 1, spec.graph.size(), g.prologue_operands);
  const std::string fns = fmt::format(
      "// The prologue: the norm's input at element j of the row, before its rounding (operand k read by kf_ld<k>).\n"
      "static inline float kf_pro(const void* const* p, int64_t j) {{\n  float v = kf_ld<0>(p, j);\n{}{}  return v;\n}}\n"
      "// The epilogue: the result at element j, from the affine step's value v.\n"
      "static inline float kf_epi(float v, const void* const* p, int64_t j) {{\n{}{}{}  return v;\n}}\n",
      loads(1, g.prologue_operands), pro, g.prologue_operands < g.inputs.size() ? "" : "  (void)p, (void)j;\n",
      loads(g.prologue_operands, g.inputs.size()), epi);
  return cpu_emit::header(*this, spec, v, fmt::format("{}: {}", fmt::join(ops, " -> "), g.describe())) +
         cpu_emit::prelude(v) + cpu_emit::variant(code) + cpu_emit::fixed_file("search/families/cpu_elementwise.h") +
         cpu_emit::fixed_file("search/families/row_norm_cpu.h") + cpu_emit::variant(fns);
}

}  // namespace

std::unique_ptr<family> make_row_norm_cpu() { return std::make_unique<row_norm_cpu>(); }

}  // namespace kf
