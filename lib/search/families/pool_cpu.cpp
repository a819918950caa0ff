// pool_cpu: global average pooling (adaptive_avg_pool2d to 1x1, optional flatten and casts) on the cpu.
// NCHW reads each plane contiguously; channels_last sums a block of contiguous channels pixel by pixel. This file
// emits the variant's part (its types, constants, knob-selected macros, the fused casts); the fixed code is pool_cpu.h.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

class pool_cpu final : public family {
 public:
  std::string name() const override { return "pool_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 3: the f16_load knob; 4: float16 roundings by kf_round_f16 (cpu_prelude.h: the same bits, vectorized).
  // 5: kf_fold from cpu_prelude.h
  int version() const override { return 5; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_pool(spec, why_not);
    if (!g) return false;
    if (g->in_type == dtype::float64 || !is_floating(g->in_type)) {
      if (why_not) *why_not = fmt::format("x is {}: the cpu pooling takes float32/16 and bfloat16", dtype_name(g->in_type));
      return false;
    }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how planes are dealt to threads (NCHW)"},
        {"planes_per_chunk", {"1", "8", "32", "128"}, "planes per scheduling chunk (NCHW)"},
        {"vector_width", {"1", "4", "8", "16"}, "accumulators per plane (NCHW)"},
        {"channel_block", {"16", "64", "256", "1024"}, "channels summed together per task (channels_last)"},
        {"accum", {"float", "double"}, "the accumulator type"},
        cpu_emit::f16_load_knob(),
    };
  }

  // f16_load=bits: the planes' and channels' sums vectorize with it (ResNet-50's channels_last fp16 pool on a
  // 2-core VM: 687 us, 2240 with the hardware's load, which GCC 12 does not vectorize).
  knob_values default_variant(const workload_spec&) const override {
    return {{"threads", "all"},    {"schedule", "static"}, {"planes_per_chunk", "32"}, {"vector_width", "8"},
            {"channel_block", "256"}, {"accum", "float"},     {"f16_load", "bits"}};
  }

  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    cpu_emit::canonical_f16_load(spec, k);
    return k;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }

  std::string emit(const workload_spec& spec, const knob_values& given) const override {
    const knob_values v = canonical_knobs(spec, given);
    auto g = match_pool(spec, nullptr);
    KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
    std::string code = cpu_emit::omp_macros(v.at("threads"), v.at("schedule")) + cpu_emit::pool_types(*g, v.at("accum"));
    code += fmt::format(
        "constexpr int kf_lanes = {};  // accumulators per plane (NCHW)\n"
        "constexpr int kf_cblock = {};  // channels per task (channels_last)\n"
        "constexpr int kf_planes_per_chunk = {};\n"
        "constexpr int kf_n_inputs = {}, kf_x_input = {}, kf_rank = {};\n"
        "constexpr int kf_x_dtype = {}, kf_out_dtype = {};\n",
        v.at("vector_width"), v.at("channel_block"), v.at("planes_per_chunk"), spec.inputs.size(),
        input_index(spec, g->input), g->rank, ew::abi_code(g->in_type), ew::abi_code(g->out_type));
    code += cpu_emit::pool_io(*g);
    return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude(v) + cpu_emit::variant(code) +
           cpu_emit::fixed_file("search/families/pool_cpu.h");
  }
};

}  // namespace

std::unique_ptr<family> make_pool_cpu() { return std::make_unique<pool_cpu>(); }

}  // namespace kf
