// adaptive_pool_cuda: pooling over windows, adaptive_avg_pool2d to an output larger than 1 x 1 (torch's adaptive
// windows), avg_pool2d (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) or max_pool2d
// (kernel, stride, padding, ceil_mode), optional flatten and casts, on the GPU; global pooling is pool_cuda's. A
// contiguous x is staged: a block copies whole planes (or a band of a plane's rows) into shared memory in 16-byte
// vectors and pools them there (`stage_kb`); a channels_last x is tiled, a block a tile of positions by a chunk of channels, its means transposed
// through shared memory on their way to y (`ptile`); otherwise a thread an output value (or a vector of
// channels_last channels), a grid-stride loop over a grid of `waves` full SMs. This file emits the variant's
// constants, types and casts; the fixed code is adaptive_pool_cuda.cuh.
#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

class adaptive_pool_cuda final : public family {
 public:
  std::string name() const override { return "adaptive_pool_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: a contiguous x staged through shared memory (stage_kb). 3: avg_pool2d's windows (and y's size at run time).
  // 4: a channels_last x tiled (ptile), y's stores transposed through shared memory; per-output index divisions by
  // multiply and shift (32-bit indices where they fit). 5: avg_pool2d's and max_pool2d's fixed windows unrolled; a
  // staged block's copy loads in flight together and its outputs stored as one run.
  int version() const override { return 5; }
  std::vector<std::string> selected_by() const override { return {"pool"}; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_adaptive_pool(spec, why_not);
    if (!g) return false;
    if (!cuda_emit::storable(g->in_type) || !cuda_emit::storable(g->out_type)) {
      if (why_not) *why_not = "adaptive_pool_cuda handles float32/float16/bfloat16/float64 tensors only";
      return false;
    }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"128", "256", "512"}, "threads per block"},
        {"cvec", {"1", "2", "4", "8"}, "channels a thread owns in a channels_last x (one vector load a pixel)"},
        {"waves", {"1", "2", "4", "8"}, "the grid's most blocks: that many full SMs' worth (a grid-stride loop beyond)"},
        {"stage_kb",
         {"0", "4", "8", "16", "32"},
         "a contiguous x: shared memory a block stages its planes (or band of rows) in, in KB; 0: a thread an "
         "output, reading x where it lies"},
        {"ptile",
         {"0", "16", "32", "64"},
         "a channels_last x: output positions a block tiles (its channels' means transposed through shared memory, "
         "so y's stores are consecutive); 0: a thread an output, storing its channels OH x OW apart"},
        {"pdl", {"0", "1"}, "1: launched with programmatic dependent launch"},
    };
  }

  // cvec: 16 bytes of channels where the dtype allows (the launch falls back to one where the channels or the
  // strides do not divide). A contiguous x is staged, 8 KB a block (8 blocks of 256 threads an SM fit beside it).
  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"threads", "256"}, {"cvec", "1"}, {"waves", "4"}, {"pdl", "1"}, {"stage_kb", "8"}, {"ptile", "0"}};
    auto g = match_adaptive_pool(spec, nullptr);
    if (g && g->channels_last) {
      v["cvec"] = std::to_string(std::min<int64_t>(8, 16 / dtype_size(g->in_type)));
      v["stage_kb"] = "0";
      v["ptile"] = "32";
    }
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }

  // cvec and ptile are read only by the channels_last path, stage_kb only by the contiguous one.
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    auto g = match_adaptive_pool(spec, nullptr);
    if (g && !g->channels_last) k["cvec"] = "1", k["ptile"] = "0";
    if (g && g->channels_last) k["stage_kb"] = "0";
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& given) const override {
    std::string why;
    auto g = match_adaptive_pool(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const knob_values v = canonical_knobs(spec, given);
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\n", cuda_emit::c_type(g->in_type),
                                cuda_emit::c_type(g->out_type));
    s += fmt::format(
        "constexpr int k_threads = {};\nconstexpr int k_cvec = {};\nconstexpr int k_waves = {};\n"
        "constexpr bool k_pdl = {};\nconstexpr int k_stage_kb = {};\nconstexpr int k_ptile = {};\n"
        "constexpr int64_t k_oh = {}, k_ow = {};\nconstexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\n",
        v.at("threads"), v.at("cvec"), v.at("waves"), v.at("pdl") == "1", v.at("stage_kb"), v.at("ptile"), g->window.out_h,
        g->window.out_w, spec.inputs.size(), input_index(spec, g->input));
    const pool_window& win = g->window;
    s += fmt::format(
        "constexpr bool k_fixed = {};\nconstexpr int64_t k_kh = {}, k_kw = {}, k_sh = {}, k_sw = {}, k_ph = {}, k_pw = {};\n"
        "constexpr bool k_ceil = {}, k_incl_pad = {}, k_max = {};\nconstexpr int64_t k_divisor = {};\n",
        !win.adaptive, win.kh, win.kw, win.sh, win.sw, win.ph, win.pw, win.ceil_mode, win.count_include_pad, win.max,
        win.divisor);
    // The mean (or max) is x's type (torch pools in it), then each cast; from_f stores the last.
    std::vector<dtype> chain = {g->in_type};
    chain.insert(chain.end(), g->epilogue_casts.begin(), g->epilogue_casts.end());
    s += fmt::format("\n__device__ __forceinline__ float finalize(float x) {{\n{}  return x;\n}}\n",
                     cuda_emit::rounding_code(chain, g->out_type));
    return cuda_emit::prelude(*this, spec, v, g->describe()) + cuda_emit::variant(s) +
           "\n#define KF_POOL_FN static __host__ __device__ __forceinline__\n" +
           cuda_emit::fixed_file("search/families/pool_window.h") +
           cuda_emit::fixed_file("search/families/adaptive_pool_cuda.cuh") + cuda_emit::epilogue();
  }
};

}  // namespace

std::unique_ptr<family> make_adaptive_pool_cuda() { return std::make_unique<adaptive_pool_cuda>(); }

}  // namespace kf
