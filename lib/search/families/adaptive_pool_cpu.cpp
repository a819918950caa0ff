// adaptive_pool_cpu: pooling over windows, adaptive_avg_pool2d to an output larger than 1 x 1 (torch's adaptive
// windows), avg_pool2d (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) or max_pool2d
// (kernel, stride, padding, ceil_mode), optional flatten and casts, on the cpu; global pooling is pool_cpu's. NCHW walks each plane, channels_last
// each output position a block of channels at a time. This file emits the variant's part (its types, constants,
// knob-selected macros, the fused casts); the fixed code is adaptive_pool_cpu.h.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

class adaptive_pool_cpu final : public family {
 public:
  std::string name() const override { return "adaptive_pool_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 3: avg_pool2d's and max_pool2d's windows (and y's size at run time).
  int version() const override { return 3; }
  std::vector<std::string> selected_by() const override { return {"pool"}; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_adaptive_pool(spec, why_not);
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
        {"schedule", {"static", "dynamic"}, "how planes (NCHW) or output positions (channels_last) are dealt to threads"},
        {"channel_block",
         {"16", "64", "256", "1024", "4096"},
         "channels summed together per task (channels_last; a block short of a position's channels re-walks the "
         "window once a block, each position's run split across pages)"},
        {"accum", {"float", "double"}, "the accumulator type"},
        cpu_emit::f16_load_knob(),
    };
  }

  knob_values default_variant(const workload_spec&) const override {
    // A whole position's channels a task (up to 4096): blocks of 256 walk PSPNet's window 8 times, 512 bytes of each
    // 4 KB position a walk, a page apart. On PSPNet's [1, 2048, 64, 64] float16 bin of 6, in paired runs on this
    // repository's 2-core VM (noisy: medians moved 2x between runs), one block took 0.55-0.8x the time of blocks of
    // 256 in every pair (stop 35).
    return {{"threads", "all"}, {"schedule", "static"}, {"channel_block", "4096"}, {"accum", "float"}, {"f16_load", "bits"}};
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
    auto g = match_adaptive_pool(spec, nullptr);
    KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
    std::string code = cpu_emit::omp_macros(v.at("threads"), v.at("schedule")) + cpu_emit::pool_types(*g, v.at("accum"));
    code += fmt::format(
        "constexpr int kf_cblock = {};  // channels per task (channels_last)\n"
        "constexpr int kf_n_inputs = {}, kf_x_input = {}, kf_rank = {};\n"
        "constexpr int kf_x_dtype = {}, kf_out_dtype = {};\n"
        "constexpr int64_t kf_oh = {}, kf_ow = {};\n",
        v.at("channel_block"), spec.inputs.size(), input_index(spec, g->input), g->rank, ew::abi_code(g->in_type),
        ew::abi_code(g->out_type), g->window.out_h, g->window.out_w);
    const pool_window& win = g->window;
    code += fmt::format(
        "constexpr int kf_fixed = {};  // avg_pool2d's windows (else adaptive)\n"
        "constexpr int64_t kf_kh = {}, kf_kw = {}, kf_sh = {}, kf_sw = {}, kf_ph = {}, kf_pw = {};\n"
        "constexpr int kf_ceil = {}, kf_incl_pad = {}, kf_max = {};\nconstexpr int64_t kf_divisor = {};\n",
        win.adaptive ? 0 : 1, win.kh, win.kw, win.sh, win.sw, win.ph, win.pw, win.ceil_mode ? 1 : 0,
        win.count_include_pad ? 1 : 0, win.max ? 1 : 0, win.divisor);
    code += cpu_emit::pool_io(*g);
    return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude(v) + cpu_emit::variant(code) +
           "\n#define KF_POOL_FN static inline\n" + cpu_emit::fixed_file("search/families/pool_window.h") +
           cpu_emit::fixed_file("search/families/adaptive_pool_cpu.h");
  }
};

}  // namespace

std::unique_ptr<family> make_adaptive_pool_cpu() { return std::make_unique<adaptive_pool_cpu>(); }

}  // namespace kf
