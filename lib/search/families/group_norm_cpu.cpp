// group_norm_cpu: GroupNorm on the cpu with a fused SiLU / GELU and casts (LayerNorm / RMSNorm are row_norm_cpu's;
// the fixed code keeps its rows path: removing it would change every source it emits). A "unit" is
// what is normalized together (a sample's group, or a row); units are OpenMP tasks. Each unit is read as
// segments of contiguous elements (channels of a group in NCHW, pixels in channels_last, one row otherwise). This file
// emits the variant's part (its types, constants, knob-selected macros, the fused casts and activation); the fixed code
// is group_norm_cpu.h.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

class group_norm_cpu final : public family {
 public:
  std::string name() const override { return "group_norm_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 3: the f16_load knob; 4: float16 roundings by kf_round_f16 and float16 stores by kf_st_f16_sel (cpu_prelude.h: the
  // same bits, in loops that vectorize). 5: kf_fold from cpu_prelude.h
  int version() const override { return 5; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_norm(spec, why_not);
    if (!g) return false;
    // Rows of the trailing dims are row_norm_cpu's: it fuses any elementwise prologue and epilogue and a returned
    // norm input, which this family's casts and one activation do not.
    if (g->what != norm_graph::kind::group_norm) {
      if (why_not)
        *why_not = fmt::format("{} over the trailing dims is row_norm_cpu's; group_norm_cpu takes group_norm",
                               norm_kind_name(g->what));
      return false;
    }
    for (auto& in : spec.inputs)
      if (in.type == dtype::float64 || !is_floating(in.type)) {
        if (why_not) *why_not = fmt::format("input {} is {}: the cpu norm takes float32/16 and bfloat16", in.name, dtype_name(in.type));
        return false;
      }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how units (groups, rows) are dealt to threads"},
        {"vector_width", {"1", "4", "8", "16"}, "independent accumulators per reduction (SIMD lanes)"},
        {"unroll", {"1", "2", "4"}, "lane groups per loop step (multiplies the accumulators)"},
        {"stats", {"two_pass", "one_pass"}, "two_pass: mean then variance; one_pass: sum and sum of squares in one read"},
        {"cache_unit", {"0", "1"}, "1: a unit is staged as floats once, then read from there"},
        {"math", {"libm", "poly"}, "exp/tanh in the activation: libm's, or a polynomial that vectorizes (~1 ulp)"},
        cpu_emit::f16_load_knob(),
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    auto g = match_norm(spec, nullptr);
    bool rms = g && g->what == norm_graph::kind::rms_norm;
    return {{"threads", "all"}, {"schedule", "static"}, {"vector_width", "8"}, {"unroll", "1"},
            {"stats", rms ? "one_pass" : "two_pass"}, {"cache_unit", "1"}, {"math", "poly"},
            {"f16_load", "bits"}};
  }

  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    cpu_emit::canonical_f16_load(spec, k);
    return k;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not) || !covers(spec, why_not)) return false;
    auto fail = [&](const char* m) {
      if (why_not) *why_not = m;
      return false;
    };
    if (knob_int(v, "vector_width") * knob_int(v, "unroll") > 32)
      return fail("vector_width x unroll above 32 accumulators spills registers");
    if (match_norm(spec, nullptr)->what == norm_graph::kind::rms_norm && v.at("stats") != "one_pass")
      return fail("rms_norm needs only the sum of squares (stats=one_pass)");
    return true;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override;
};

std::string group_norm_cpu::emit(const workload_spec& spec, const knob_values& given) const {
  const knob_values v = canonical_knobs(spec, given);
  auto g = match_norm(spec, nullptr);
  KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
  std::string pro = "v";
  for (auto t : g->prologue_casts) pro = cpu_emit::round_through(t, pro);
  std::string act = cpu_emit::round_through(g->norm_type, "y");
  switch (g->act) {
    case norm_graph::activation::none: break;
    case norm_graph::activation::silu: act = fmt::format("({0}) / (1.f + KF_EXP(-({0})))", act); break;
    case norm_graph::activation::gelu: act = fmt::format("0.5f * ({0}) * (1.f + erff(({0}) * 0.70710678118654752f))", act); break;
    case norm_graph::activation::gelu_tanh:
      // 0.5 y (1 + tanh(u)) = y sigmoid(2u): the same value without 1 + tanh(u)'s cancellation on the negative
      // tail (tanh near -1 leaves an absolute error of 1e-7 on a result of 1e-4 there).
      act = fmt::format("({0}) / (1.f + KF_EXP(-1.5957691216057308f * (({0}) + 0.044715f * ({0}) * ({0}) * ({0}))))", act);
      break;
  }
  if (g->act != norm_graph::activation::none) act = cpu_emit::round_through(g->norm_type, act);
  for (auto t : g->epilogue_casts) act = cpu_emit::round_through(t, act);
  // Weight and bias: typed loads when present, 1 and 0 when absent.
  const bool has_w = !g->weight.empty(), has_b = !g->bias.empty();
  const dtype wt = has_w ? g->weight_type : dtype::float32, bt = has_b ? g->bias_type : dtype::float32;
  const char* stats =
      g->what == norm_graph::kind::rms_norm ? "rms" : v.at("stats") == "one_pass" ? "one_pass" : "two_pass";
  std::string code = cpu_emit::math_macros(v.at("math")) + cpu_emit::omp_macros(v.at("threads"), v.at("schedule"));
  code += fmt::format("\ntypedef {} kf_in_t;\ntypedef {} kf_out_t;\ntypedef {} kf_w_t;\ntypedef {} kf_b_t;\n",
                      cpu_emit::storage_type(g->in_type), cpu_emit::storage_type(g->out_type),
                      cpu_emit::storage_type(wt), cpu_emit::storage_type(bt));
  code += fmt::format(
      "constexpr int kf_lanes = {};  // vector_width x unroll accumulators\n"
      "constexpr int kf_stats_two_pass = 0, kf_stats_one_pass = 1, kf_stats_rms = 2;\n"
      "constexpr int kf_stats_kind = kf_stats_{};\n"
      "constexpr bool kf_cache_unit = {};\n"
      "constexpr int kf_n_inputs = {}, kf_x_input = {}, kf_rank = {};\n"
      "constexpr int kf_x_dtype = {}, kf_out_dtype = {};\n"
      "constexpr int kf_w_input = {}, kf_w_dtype = {}, kf_b_input = {}, kf_b_dtype = {};  // -1: none\n"
      "constexpr bool kf_group = {};  // group_norm: a unit is a sample's group; else the last kf_norm_dims dims\n"
      "constexpr int kf_groups = {}, kf_norm_dims = {};\n"
      "constexpr double kf_eps = {:.17g};\n",
      knob_int(v, "vector_width") * knob_int(v, "unroll"), stats, v.at("cache_unit") == "1" ? "true" : "false",
      spec.inputs.size(), input_index(spec, g->input), g->rank, ew::abi_code(g->in_type),
      ew::abi_code(g->out_type), has_w ? input_index(spec, g->weight) : -1, ew::abi_code(wt),
      has_b ? input_index(spec, g->bias) : -1, ew::abi_code(bt),
      g->what == norm_graph::kind::group_norm ? "true" : "false", g->num_groups, g->normalized_dims, g->eps);
  code += fmt::format(
      "\n// x's element i as the norm sees it: loaded and rounded through the casts before the norm.\n"
      "static inline float kf_load_x(const kf_in_t* p, int64_t i) {{\n  float v = {};\n  return {};\n}}\n",
      cpu_emit::load(g->in_type, "p[i]"), pro);
  code += "\n// The affine's weight and bias at channel (or element) i: 1 and 0 where the graph has none.\n";
  code += has_w ? fmt::format("static inline float kf_w(const kf_w_t* w, int64_t ws, int64_t i) {{ return {}; }}\n",
                              cpu_emit::load(g->weight_type, "w[i * ws]"))
                : "static inline float kf_w(const kf_w_t*, int64_t, int64_t) { return 1.f; }\n";
  code += has_b ? fmt::format("static inline float kf_b(const kf_b_t* b, int64_t bs, int64_t i) {{ return {}; }}\n",
                              cpu_emit::load(g->bias_type, "b[i * bs]"))
                : "static inline float kf_b(const kf_b_t*, int64_t, int64_t) { return 0.f; }\n";
  code += fmt::format(
      "\n// A normalized value on its way out: through the norm's type, the activation and the casts after it\n"
      "// (kf_act), then stored as the output's type (kf_store).\n"
      "static inline float kf_act(float y) {{ return {}; }}\n"
      "static inline kf_out_t kf_store(float v) {{ return {}; }}\n",
      act, cpu_emit::store_vec(g->out_type, "v"));
  return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude(v) + cpu_emit::variant(code) +
         cpu_emit::fixed_file("search/families/group_norm_cpu.h");
}

}  // namespace

std::unique_ptr<family> make_group_norm_cpu() { return std::make_unique<group_norm_cpu>(); }

}  // namespace kf
