// col_softmax_cpu: softmax / log_softmax over a dim before the last on the cpu (a segmentation head's classes over
// dim 1 of [B, C, H, W]), with the matched prologue (scale, softcap, casts) and casts after. x is read as
// [outer, n, inner]; OpenMP threads take tiles of `tile` neighbouring columns, whose statistics are arrays walked a
// value of the reduced dim at a time (contiguous runs: loops that vectorize). This file emits the variant's part;
// the fixed code is col_softmax_cpu.h.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

// col_softmax_cpu.h's kf_stage_floats: the most floats a thread stages (n x tile).
constexpr int64_t k_stage_floats = 256 * 1024;

// Whether every case's reduced dim, `tile` columns wide, fits the staging buffer (each case runs in verification).
bool every_case_stages(const workload_spec& spec, int tile) {
  auto g = match_col_softmax(spec, nullptr);
  if (!g) return false;
  const input_spec* x = spec.find_input(g->input);
  for (auto& c : spec.cases) {
    const auto shape = concrete_shape(*x, c);
    if (static_cast<int>(shape.size()) != g->rank || shape[g->dim] * tile > k_stage_floats) return false;
  }
  return true;
}

class col_softmax_cpu final : public family {
 public:
  std::string name() const override { return "col_softmax_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 2: `stage`; log_softmax as (x - max) - log sum (x - (max + log sum) lost log sum next to a large max).
  int version() const override { return 3; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_col_softmax(spec, why_not);
    if (!g) return false;
    for (dtype t : {g->in_type, g->out_type})
      if (t != dtype::float32 && t != dtype::float16 && t != dtype::bfloat16) {
        if (why_not) *why_not = fmt::format("{}: the cpu column softmax takes float32/16 and bfloat16", dtype_name(t));
        return false;
      }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how tiles are dealt to threads"},
        {"tile", {"16", "64", "256", "1024"}, "neighbouring columns a task (the statistics' arrays)"},
        {"passes", {"two", "online"}, "stage=0: two: max then sum of exponentials; online: both in one read"},
        {"stage",
         {"0", "1"},
         "1: a tile's values after the prologue staged once as floats (n x tile, where that fits 1 MB), each value's "
         "exp taken once; 0: x read and converted in each pass"},
        {"math", {"libm", "poly"}, "exp/tanh: libm's, or a polynomial that vectorizes (~1 ulp)"},
        cpu_emit::f16_load_knob(),
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    // f16_load=bits: the loops vectorize with the bit operations, not with the hardware's scalar conversion
    // ([1, 150, 64, 64] float16 over dim 1 on 2 cores: 5.7 ms with hw, 0.35 with bits).
    (void)spec;
    return {{"threads", "all"}, {"schedule", "static"}, {"tile", "256"}, {"passes", "two"},
            {"stage", "1"},     {"math", "poly"},       {"f16_load", "bits"}};
  }

  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    cpu_emit::canonical_f16_load(spec, k);
    // Staged, the passes are the staged kernel's: `passes` is read only where some case's dim is too long to stage.
    if (k.at("stage") == "1" && every_case_stages(spec, std::stoi(k.at("tile")))) k["passes"] = "two";
    return k;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }

  std::string emit(const workload_spec& spec, const knob_values& given) const override {
    const knob_values v = canonical_knobs(spec, given);
    auto g = match_col_softmax(spec, nullptr);
    KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
    std::string prologue;
    for (auto& st : g->prologue) prologue += cpu_emit::prologue_statements(st);
    std::string epi = cpu_emit::round_through(g->softmax_type, "v");
    for (auto t : g->epilogue_casts) epi = cpu_emit::round_through(t, epi);
    std::string code = cpu_emit::math_macros(v.at("math")) + cpu_emit::omp_macros(v.at("threads"), v.at("schedule"));
    code += fmt::format("\ntypedef {} kf_in_t;\ntypedef {} kf_out_t;\n", cpu_emit::storage_type(g->in_type),
                        cpu_emit::storage_type(g->out_type));
    code += fmt::format(
        "constexpr int kf_tile = {};  // columns a task\n"
        "constexpr bool kf_online = {}, kf_log = {};\n"
        "constexpr bool kf_stage = {};  // the tile's values staged as floats where n x tile fits kf_stage_floats\n"
        "constexpr int kf_n_inputs = {}, kf_x_input = {}, kf_rank = {}, kf_dim = {};\n"
        "constexpr int kf_x_dtype = {}, kf_out_dtype = {};\n",
        v.at("tile"), v.at("passes") == "online", g->log, v.at("stage") == "1", spec.inputs.size(),
        input_index(spec, g->input), g->rank,
        g->dim, ew::abi_code(g->in_type), ew::abi_code(g->out_type));
    code += fmt::format(
        "\n// A stored x value after the fused prologue: what the reduction sees.\n"
        "static inline float kf_pro(kf_in_t x) {{\n  float v = {};\n{}  return v;\n}}\n",
        cpu_emit::load(g->in_type, "x"), prologue);
    code += fmt::format(
        "\n// A result on its way out: rounded through the softmax's type and each later cast (kf_epi), then stored "
        "as\n"
        "// the output's type (kf_store).\n"
        "static inline float kf_epi(float v) {{ return {}; }}\n"
        "static inline kf_out_t kf_store(float v) {{ return {}; }}\n",
        epi, cpu_emit::store_vec(g->out_type, "v"));
    return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude(v) + cpu_emit::variant(code) +
           cpu_emit::fixed_file("search/families/col_softmax_cpu.h");
  }
};

}  // namespace

std::unique_ptr<family> make_col_softmax_cpu() { return std::make_unique<col_softmax_cpu>(); }

}  // namespace kf
