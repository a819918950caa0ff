// pointwise_cpu: any chain of elementwise ops (unary, binary with broadcast operands, scale, softcap, masks, casts) as
// one pass over the output on the cpu: one read of each operand element, one write of each result, in float. The
// knobs: OpenMP threads and schedule, output elements per task (each task's runs are loops that vectorize: full and
// row operands read linearly, columns and other operands constant along a run read once), and the math (libm, or
// polynomials that vectorize). The fixed code is pointwise_cpu.h; the statements come from elementwise_emit.h.
#include <algorithm>
#include <bit>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "spec/ops.h"
#include "util/error.h"

namespace kf {
namespace {

constexpr size_t k_max_operands = 16;   // kf_elem's operand masks are ints
constexpr int k_max_const_operands = 4;  // 2^4 vectorized loops at most, one per set of operands constant along runs

using chain = pointwise_graph;

// match_pointwise, with at most k_max_operands tensor operands.
std::optional<chain> match_chain(const workload_spec& spec, std::string* why_not) {
  auto c = match_pointwise(spec, why_not);
  if (c && c->inputs.size() > k_max_operands) {
    if (why_not) *why_not = fmt::format("{} tensor operands: pointwise_cpu reads {} at most", c->inputs.size(), k_max_operands);
    return std::nullopt;
  }
  return c;
}

// The operands that are not the output's shape in some case of the spec: they may be constant along runs of the
// output (a column, a channel bias), and each set of them gets its vectorized loop. Past k_max_const_operands, none
// does (such launches take the general path).
int const_set(const workload_spec& spec, const chain& c) {
  int set = 0;
  for (auto& cs : spec.cases) {
    graph_shapes g;
    graph_error e;
    bool ok = false;
    try {
      ok = try_infer_graph(spec, cs, &g, &e);
    } catch (const std::exception&) {
    }
    for (size_t k = 0; k < c.inputs.size(); ++k)
      if (!ok || g.inputs[c.inputs[k]].shape != g.outputs().front().shape) set |= 1 << k;
  }
  return std::popcount(static_cast<unsigned>(set)) <= k_max_const_operands ? set : 0;
}

class pointwise_cpu final : public family {
 public:
  std::string name() const override { return "pointwise_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 2: the shared cpu_elementwise.h; 3: the f16_load knob; 4: the stage knob; 5: staged through cpu_elementwise.h's
  // kf_ld_run and kf_st_run (row_norm_cpu's, moved there); 6: float16 roundings by kf_round_f16 (cpu_prelude.h: the
  // same bits, vectorized)
  int version() const override { return 7; }
  bool covers(const workload_spec& spec, std::string* why_not) const override { return match_chain(spec, why_not).has_value(); }
  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how tasks are dealt to threads"},
        {"chunk", {"1024", "4096", "16384", "65536"}, "output elements per task (each task's runs are vectorized loops)"},
        {"math", {"libm", "poly"}, "exp/tanh/erfc: libm's, or polynomials that vectorize (~1 ulp; erfc 1.2e-7 relative)"},
        cpu_emit::f16_load_knob(),
        {"stage",
         {"0", "1"},
         "float16 operands and results converted a block of 256 at a time by the hardware's vector instructions "
         "(x86's F16C) into float buffers around the chain's loop (0: each value converted inside it)",
         "0"},
    };
  }
  // Staged where the spec has float16: one conversion instruction for 8 values (an fp16 exact GELU over 1M values on
  // 2 AVX-512 cores: 567 us against 750 unstaged).
  knob_values default_variant(const workload_spec& spec) const override {
    return {{"threads", "all"}, {"schedule", "static"}, {"chunk", "16384"}, {"math", "poly"}, {"f16_load", "bits"},
            {"stage", cpu_emit::has_float16(spec) ? "1" : "0"}};
  }
  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }
  // One thread deals no tasks; a chain without exp, tanh or erfc reads no math.
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    if (k.count("threads") && k.at("threads") == "1") k["schedule"] = "static";
    auto c = match_chain(spec, nullptr);
    if (c && !c->transcendental) k["math"] = "poly";
    cpu_emit::canonical_f16_load(spec, k);
    if (!cpu_emit::has_float16(spec)) k["stage"] = "0";
    return k;
  }
  std::string emit(const workload_spec& spec, const knob_values& given) const override {
    const knob_values v = canonical_knobs(spec, given);
    auto matched = match_chain(spec, nullptr);
    KF_ASSERT(matched.has_value(), "emit on a spec the family does not cover");
    const chain& c = *matched;
    std::vector<std::string> ops, idx, codes;
    for (auto& call : spec.graph) ops.push_back(call.op);
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      idx.push_back(std::to_string(c.inputs[k]));
      codes.push_back(ew::abi_code(c.types[k]));
    }
    std::string code = cpu_emit::omp_macros(v.at("threads"), v.at("schedule"));
    code += fmt::format(
        "\nconstexpr bool kf_math_poly = {};  // exp, tanh, erfc: the polynomials (true) or libm's\n"
        "constexpr int64_t kf_chunk = {};  // output elements per OpenMP task\n"
        "constexpr bool kf_stage = {};  // float16 runs through float buffers (F16C)\n"
        "constexpr int kf_n_inputs = {}, kf_out_rank = {}, kf_out_dtype = {};\n"
        "constexpr int kf_n_opnd = {};  // the chain's operands: the first op's input, then each op's tensor operand\n"
        "constexpr int kf_opnd_input[kf_n_opnd] = {{{}}};\n"
        "constexpr int kf_opnd_dtype[kf_n_opnd] = {{{}}};\n"
        "constexpr int kf_const_set = {};  // operands that may be constant along runs (a vectorized loop per subset)\n",
        v.at("math") == "poly" ? "true" : "false", v.at("chunk"), v.at("stage") == "1" ? "true" : "false", spec.inputs.size(), c.out_rank,
        ew::abi_code(c.out), c.inputs.size(), fmt::join(idx, ", "), fmt::join(codes, ", "), const_set(spec, c));
    // The chain's statements on `v`, in float (rounded only where the graph casts, as torch.compile computes).
    std::string body = "  float v = kf_ld<0, M>(p, j);\n";
    for (size_t k = 1; k < c.inputs.size(); ++k) body += fmt::format("  const float x{0} = kf_ld<{0}, M>(p, j);\n", k);
    body += ew::chain_statements(spec, c.step_types, [](size_t k) { return fmt::format("x{}", k); }, "  ");
    const std::string chain_fn = fmt::format(
        "// The chain: the result for element j of a run (operand k read by kf_ld<k, M>).\n"
        "template <int M>\nstatic inline float kf_elem(const void* const* p, int64_t j) {{\n{}  return v;\n}}\n",
        body);
    return cpu_emit::header(*this, spec, v, fmt::format("{} (one pass)", fmt::join(ops, " -> "))) + cpu_emit::prelude(v) +
           cpu_emit::variant(code) + cpu_emit::fixed_file("search/families/cpu_elementwise.h") +
           cpu_emit::fixed_file("search/families/pointwise_cpu.h") + cpu_emit::variant(chain_fn);
  }
};

}  // namespace

std::unique_ptr<family> make_pointwise_cpu() { return std::make_unique<pointwise_cpu>(); }

}  // namespace kf
