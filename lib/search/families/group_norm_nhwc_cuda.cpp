// group_norm_nhwc_cuda: GroupNorm of a channels_last [N, C, H, W] input (UNets and VAEs run in channels_last for
// their convolutions), with the casts before it, the affine, an activation and casts after, emitted as one CUDA
// translation unit. group_norm_cuda reads a group as a contiguous run, which a channels_last input never gives (a
// group is C / G channels at every position): here a stats kernel sums a tile of positions per block (each thread
// a 16-byte vector of channels, the block's totals per group added in shared memory in a fixed order, one partial
// per image, group and tile in global memory), and an apply kernel takes a tile of positions by a chunk of channels,
// turns the partials of the chunk's groups into their mean and rstd and normalizes the tile (transposed through
// shared memory into kforge's contiguous output). stats=twopass adds a kernel that sums the squared deviations from the
// mean (float32's tolerance). This file emits the variant's constants, types, casts and activation; the fixed code is
// group_norm_nhwc_cuda.cuh.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

class group_norm_nhwc_cuda final : public family {
 public:
  std::string name() const override { return "group_norm_nhwc_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: the block's per-group totals added in a fixed order (not float atomics: reruns give the same bits). 3: a
  // contiguous y through shared memory; the partials reduced by a warp a group. 4: the kernels' three position
  // walks are one (gn_walk). 5: dynamic shared memory opted in where it and the static statistics pass 48 KB.
  // 6: the apply kernel over tiles of positions by chunks of channels (`ptile`, `chunk`), reducing only its chunk's
  // groups' partials (every block reduced every group's: 35 MB of L2 reads on SD-UNet's [2, 640, 64, 64]), with
  // 16-byte stores of a contiguous y; a stats tile of at least 4 positions a thread; a warp a group adds a block's
  // per-channel sums. 7: a block's sums added in double, and stats=twopass corrects the mean by the second pass's
  // sum of deviations (v6's float block sums failed float32's tolerance on the GPU, every variant alike); a small
  // image's blocks of whole groups in one fused kernel (fuse_kb). 8: the fused kernel's statistics from every warp
  // (a warp a group left the rest idle), fewer groups a block where the blocks would not fill the SMs, and loads of
  // V / 2 or V / 4 channels where those divide a block's channels.
  int version() const override { return 8; }
  // A spec that names group_norm gets this layout's kernel too (group_norm_cuda reads contiguous inputs only).
  std::vector<std::string> selected_by() const override { return {"group_norm"}; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_norm(spec, why_not);
    if (!g) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    if (g->what != norm_graph::kind::group_norm) return fail("group_norm_nhwc_cuda runs GroupNorm only");
    if (spec.find_input(g->input)->memory_format != "channels_last" || g->rank != 4)
      return fail(
          "group_norm_nhwc_cuda reads a channels_last [N, C, H, W] input (group_norm_cuda reads contiguous ones)");
    if (!cuda_emit::storable(g->in_type) || !cuda_emit::storable(g->out_type) ||
        (!g->weight.empty() && !cuda_emit::storable(g->weight_type)) ||
        (!g->bias.empty() && !cuda_emit::storable(g->bias_type)))
      return fail("group_norm_nhwc_cuda handles float32/float16/bfloat16/float64 tensors only");
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"128", "256", "512", "1024"}, "threads per block"},
        {"vec", {"1", "2", "4", "8"}, "neighbouring channels a thread owns (16-byte loads at 8 x 16-bit)"},
        {"blocks",
         {"1", "2", "4", "8", "16"},
         "stats blocks an SM over the batch: each image's positions cut into that many tiles"},
        {"chunk", {"32", "64", "128"}, "channels an apply block normalizes"},
        {"ptile",
         {"16", "32", "64", "128"},
         "positions an apply block normalizes (a contiguous y: the run each channel's stores cover)"},
        {"fuse_kb",
         {"0", "48", "96", "192"},
         "one fused kernel where a block's whole groups (chunk channels' worth) fit in this much shared memory at "
         "every position (small images: one read, one launch, exact two-pass statistics); 0: always the stats and "
         "apply kernels",
         "0"},
        {"stats",
         {"shifted", "twopass"},
         "shifted: sums of x - (the group's first value) and of its square, one read; twopass: the mean, then the "
         "squared deviations from it (a third read, float32's precision)"},
        {"pdl",
         {"0", "1"},
         "1: launched with programmatic dependent launch, the blocks scheduled while the previous kernel on the "
         "stream finishes and waiting (griddepcontrol.wait) for its results before touching memory"},
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"threads", "256"}, {"vec", "8"},         {"blocks", "4"}, {"chunk", "64"},
                  {"ptile", "64"},    {"stats", "shifted"}, {"pdl", "1"},   {"fuse_kb", "96"}};
    auto g = match_norm(spec, nullptr);
    if (!g) return v;
    // The widest vector (16 bytes of x) that every timed case's channels are a whole number of.
    int vec = std::max(1, std::min(8, static_cast<int>(16 / dtype_size(g->in_type))));
    for (auto& shape : tuning_shapes(spec, *spec.find_input(g->input)))
      while (vec > 1 && shape.size() == 4 && shape[1] % vec != 0) vec /= 2;
    v["vec"] = std::to_string(vec);
    // float32: sums around a shift lose up to 1 + (shift - mean)^2 / var of rstd's precision, which float32's
    // tolerance (about two ulps) does not leave room for (group_norm_cuda's held rows, stop 30).
    if (g->in_type == dtype::float32 || g->in_type == dtype::float64) v["stats"] = "twopass";
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto g = match_norm(spec, nullptr);
    if (!g) return true;
    // A thread owns at most 4 channel vectors (k_slot_cap): vectors of `vec` channels, or of one where a case's
    // channels are not a whole number of them (the launch's fallback).
    const int64_t threads = std::stoll(v.at("threads")), vec = std::stoll(v.at("vec"));
    for (const case_spec& c : spec.cases) {
      const auto shape = concrete_shape(*spec.find_input(g->input), c);
      const int64_t channels = shape.at(1), per = channels % vec == 0 ? vec : 1;
      if (channels / per > 4 * threads) {
        if (why_not)
          *why_not = fmt::format("case {}: {} channels in vectors of {} are more than {} threads' 4 slots", c.name,
                                 channels, per, threads);
        return false;
      }
    }
    return true;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_norm(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const bool has_w = !g->weight.empty(), has_b = !g->bias.empty();
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\nusing w_t = {};\nusing b_t = {};\n",
                                cuda_emit::c_type(g->in_type), cuda_emit::c_type(g->out_type),
                                has_w ? cuda_emit::c_type(g->weight_type) : "float",
                                has_b ? cuda_emit::c_type(g->bias_type) : "float");
    s += fmt::format(
        "constexpr int NT = {};\nconstexpr int k_vec = {};\nconstexpr int k_blocks = {};\nconstexpr int k_chunk = {};\n"
        "constexpr int k_ptile = {};\nconstexpr int k_fuse_kb = {};\n"
        "constexpr bool k_twopass = {};\nconstexpr bool k_pdl = {};\nconstexpr int k_num_groups = {};\n"
        "constexpr float k_eps = {};\nconstexpr bool k_has_w = {};\nconstexpr bool k_has_b = {};\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\nconstexpr int k_w_input = {};\n"
        "constexpr int k_b_input = {};\nconstexpr size_t k_smem_limit = 227 * 1024;\n",
        v.at("threads"), v.at("vec"), v.at("blocks"), v.at("chunk"), v.at("ptile"), v.at("fuse_kb"),
        v.at("stats") == "twopass",
        v.at("pdl") == "1", g->num_groups, cuda_emit::float_literal(g->eps), has_w, has_b, spec.inputs.size(),
        input_index(spec, g->input), has_w ? input_index(spec, g->weight) : -1,
        has_b ? input_index(spec, g->bias) : -1);
    s += cuda_emit::norm_pre_and_finalize(*g);
    return cuda_emit::prelude(*this, spec, v, g->describe()) + cuda_emit::variant(s) +
           cuda_emit::fixed_file("search/families/group_norm_nhwc_cuda.cuh") + cuda_emit::epilogue();
  }
};

}  // namespace

std::unique_ptr<family> make_group_norm_nhwc_cuda() { return std::make_unique<group_norm_nhwc_cuda>(); }

}  // namespace kf
