// group_norm_cuda: GroupNorm / LayerNorm / RMSNorm with a fused activation (SiLU, GELU) and casts, emitted as
// one CUDA translation unit. Strategies: a warp, a block or a cluster of CTAs (distributed shared memory) per
// row, the row cached in registers when it fits (one read of x), or `split`: a statistics kernel over many
// blocks per row writing partials to a fixed device buffer, then an apply kernel (optionally in reverse block
// order, to start on what is still in L2), or `team`: co-resident blocks (a cooperative launch), a team of them
// per row, each keeping its segment of the row in shared memory from the statistics to the apply step, so rows
// far larger than one SM still read x from DRAM once, or `stream`: statistics and apply items over segments in
// ticket order, the apply step a few MiB behind the statistics so it reads x back from L2, or `ring`: the same
// tickets, each block keeping the segments it takes in a ring of shared-memory slots until their rows' statistics
// are in (x read once, from DRAM only). Statistics: sums shifted by the row's first element, plain sums, or two
// passes. This file emits the variant's constants, types, casts and activation; the fixed code is in
// group_norm_cuda_rows.cuh, _grid.cuh, _ring.cuh and _launch.cuh, emitted in that order.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

// Values a thread keeps in registers at most (chunks x vec): more spill.
constexpr int k_max_cached = 64;

// The strategies that spread a row over many blocks (statistics meeting in device memory); `fit` hands their
// launches to the per-row kernels where the rows fit.
bool grid_strategy(const std::string& st) { return st == "split" || st == "team" || st == "stream" || st == "ring"; }

int pow2_at_least(int64_t v, int cap) {
  int p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

class group_norm_cuda final : public family {
 public:
  std::string name() const override { return "group_norm_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: strategy=team (and stream's handover to it) applies GroupNorm's affine from a per-row table of the segment's
  // channels in shared memory instead of a division and a w and b load per vector. 3: one channel_affine for apply,
  // uniform_affine and that table (the same arithmetic, written once). 4: `fit`; the row-cached kernels load each
  // vector's channel's w and b with x, and team's table channels are loaded when the row starts; team_kernel takes
  // at most 64 registers a thread. 5: rows held in registers take the two-pass statistics where x is float32
  // (held_twopass). 6: that second pass also sums the deviations and corrects the mean (the corrected two-pass).
  int version() const override { return 6; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_norm(spec, why_not);
    if (!g) return false;
    if (g->what != norm_graph::kind::group_norm) {  // row_norm_cuda's strategies are built for rows
      if (why_not) *why_not = "group_norm_cuda leaves layer_norm and rms_norm to row_norm_cuda";
      return false;
    }
    bool ok = cuda_emit::storable(g->in_type) && cuda_emit::storable(g->out_type) &&
              (g->weight.empty() || cuda_emit::storable(g->weight_type)) &&
              (g->bias.empty() || cuda_emit::storable(g->bias_type));
    if (!ok && why_not) *why_not = "group_norm_cuda handles float32/float16/bfloat16/float64 tensors only";
    if (ok && spec.find_input(g->input)->memory_format != "contiguous") {
      ok = false;  // the kernels read rows (and GroupNorm's groups) as contiguous runs
      if (why_not) *why_not = "group_norm_cuda reads contiguous inputs; this one is declared " +
                              spec.find_input(g->input)->memory_format;
    }
    return ok;
  }

  std::vector<knob> knobs() const override {
    return {
        {"strategy", {"warp", "block", "cluster", "split", "team", "stream", "ring"},
         "threads per row (a group or a normalized slice)"},
        {"threads", {"64", "128", "256", "512", "1024"}, "threads per block"},
        {"vec", {"1", "2", "4", "8"}, "elements per access (16-byte loads at 8 x 16-bit)"},
        {"chunks", {"1", "2", "4", "8", "16"}, "vectors per thread kept in registers (the row cache)"},
        {"cluster", {"2", "4", "8", "16"}, "CTAs per row for strategy=cluster (16 is non-portable)"},
        {"splits", {"8", "16", "32", "64", "128", "256"}, "blocks per row for strategy=split"},
        {"stats", {"shifted", "sumsq", "twopass"}, "sums shifted by the row's first element, plain sums, or mean then variance"},
        {"reverse", {"0", "1"}, "strategy=split: apply pass in reverse order (L2 hits)"},
        {"team_kb", {"48", "96", "144", "192", "224"},
         "strategy=team: KiB of shared memory per block holding its segment (fewer KiB: more blocks per SM)"},
        {"seg_kb", {"8", "16", "32", "64"}, "strategy=stream or ring: KiB of x per work item"},
        {"ring_kb", {"64", "96", "128", "192", "224"},
         "strategy=ring: KiB of shared memory per block for its slots of seg_kb (fewer KiB: more blocks per SM)"},
        {"ahead", {"1", "2", "3", "4"},
         "strategy=ring: slots whose bulk copies stay in flight while a block reduces or applies the others"},
        {"lag_mb", {"0", "1", "2", "4", "8", "16"},
         "strategy=stream: MiB by which the apply step trails the statistics, past a row and the grid (x stays in L2)"},
        {"sm_blocks", {"0", "1", "2"},
         "strategy=stream: blocks an SM at most (0: as many as fit); fewer blocks hold fewer segments in flight, so "
         "the apply step trails the statistics by less and x stays in L2"},
        {"stages", {"2", "3", "4"},
         "strategy=stream, 16-byte vectors: segments a block holds in shared memory, the current one and the copies "
         "of its next tickets in flight",
         "2"},
        {"publish", {"counter", "tagged"},
         "strategy=stream: how a row's statistics reach its apply items: `counter` (each statistics item fences and "
         "counts itself in, the row's last one sums the records and raises a flag) or `tagged` (records stored as "
         "epoch-tagged words, no fence or atomic; each apply item sums its row's records once all are in)",
         "counter"},
        {"l2_hint", {"0", "1"},
         "strategy=stream, 16-byte vectors: the statistics read marks a segment evict-last in L2 and its apply read "
         "evict-first, so x outlasts the output stream until it is read again",
         "0"},
        {"team_l2", {"0", "25", "50", "100"},
         "strategy=stream or ring: a tensor within this % of L2 runs the team kernel instead (0: never)"},
        {"fit", {"0", "1"},
         "strategy=split, team, stream or ring: a launch whose rows each fit the registers of a block, or else of a "
         "cluster of `cluster` CTAs (`chunks` vectors a thread), all of them resident at once, runs that per-row "
         "kernel instead (x read once into registers, no barrier in global memory)",
         "0"},
        {"unroll", {"1", "2", "4"}, "unrolling of the streaming loops"},
        {"stream_store", {"0", "1"}, "evict-first stores of the output (keeps x in L2)"},
    };
  }

  // Threads a row (cluster x threads) and values a thread (chunks x vec, threads x chunks a block's share).
  std::vector<std::pair<std::string, std::string>> trades() const override {
    return {{"cluster", "threads"}, {"chunks", "vec"}, {"threads", "chunks"}};
  }

  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"strategy", "block"}, {"threads", "512"}, {"vec", "8"},     {"chunks", "4"},
                  {"cluster", "8"},      {"splits", "64"},   {"stats", "shifted"}, {"reverse", "1"},
                  {"team_kb", "192"},   {"seg_kb", "32"},      {"ring_kb", "192"},     {"ahead", "2"},
                  {"lag_mb", "4"},        {"sm_blocks", "0"},  {"stages", "2"}, {"publish", "counter"},
                  {"l2_hint", "0"},
                  {"team_l2", "0"},     {"fit", "0"},
                  {"unroll", "2"},       {"stream_store", "1"}};
    auto g = match_norm(spec, nullptr);
    if (!g) return v;
    const int vec = std::max<int>(1, std::min<int>(8, static_cast<int>(16 / dtype_size(g->in_type))));
    v["vec"] = std::to_string(vec);
    const input_spec* x = spec.find_input(g->input);
    int64_t max_n = 0, min_rows = 0;
    bool first = true, pair_fit = false;  // pair_fit: some shape's rows fit clusters of 2 x 512 threads (below)
    for (auto& shape : tuning_shapes(spec, *x)) {
      int64_t total = 1;
      for (auto d : shape) total *= d;
      int64_t n = 1;
      if (g->what == norm_graph::kind::group_norm) {
        n = shape.size() >= 2 ? total / shape[0] / g->num_groups : total;
      } else {
        for (size_t d = shape.size() - std::min<size_t>(shape.size(), g->normalized_dims); d < shape.size(); ++d)
          n *= shape[d];
      }
      const int64_t rows = n ? total / n : 0;
      pair_fit = pair_fit || (n > 256 * k_max_cached && n <= 2 * 512 * k_max_cached &&
                              rows <= cuda_emit::k_reference_sms / 2);
      max_n = std::max(max_n, n);
      min_rows = first ? rows : std::min(min_rows, rows);
      first = false;
    }
    auto chunks_for = [&](int64_t elems, int threads) {
      return pow2_at_least((elems + int64_t(threads) * vec - 1) / (int64_t(threads) * vec), 16);
    };
    if (max_n <= 1024) {
      v["strategy"] = "warp";
      v["threads"] = "128";
      v["chunks"] = std::to_string(chunks_for(max_n, 32));
    } else if (min_rows >= 2 * cuda_emit::k_reference_sms && max_n <= 16384) {
      v["strategy"] = "block";
      v["threads"] = max_n <= 4096 ? "256" : "512";
      v["chunks"] = std::to_string(chunks_for(max_n, std::stoi(v["threads"])));
    } else {
      // Few or long rows: segments of the rows in ticket order, the apply step trailing the statistics by a few
      // MiB so x comes back from L2 (DRAM sees it once, as with `team`, which holds it in shared memory but
      // serializes load, barrier and store; split reads it twice when the tensor is larger than L2; a cluster per
      // row measured slower on an H200: 16-CTA clusters schedule a few at a time).
      // A tensor within half of L2 goes to `team` instead (H200 harness, SD3.5 512x128, 16.8 MB: team with 96 KiB
      // blocks 20.7 us against 22.8-24.3 for stream; with SiLU 23.9 against 25.9-28.7).
      v["strategy"] = "stream";
      v["threads"] = "256";
      v["unroll"] = "4";
      v["team_l2"] = "50";
      v["team_kb"] = "96";
      // The second read hinted in L2 (statistics evict-last, apply evict-first) and no slack behind the items in
      // flight (H200 harness, stop 7, cold: 256x512 108.6 -> 96.3 us, 128x1024 199.7 -> 185.4; with SiLU 114.0 ->
      // 108.7 and 212.6 -> 203.5; ncu at 256x512: DRAM reads 240 -> 216 MB).
      v["l2_hint"] = "1";
      v["lag_mb"] = "0";
      // Rows that fit the registers of a block or of a cluster of 2 (64 values a thread), every row's block or
      // cluster resident at once, take that per-row kernel at launch (`fit`): no phase waits on a global barrier or
      // a bulk copy. H100, family_bench, SDXL's 2 x 1280 x 32 x 32 fp16 GroupNorm + SiLU (64 rows of 40,960), cold /
      // hot us: clusters of 2 x 512 threads 12.45 / 6.80 against 14.4 / 9.3 for team (this default before `fit`);
      // clusters of 4 x 256 threads (124 registers: 2 blocks an SM) 14.4 / 9.3, team's time, as a launch that fell
      // back to it would run (not profiled). 512 threads where some shape's rows fit such pairs.
      v["fit"] = "1";
      v["cluster"] = "2";
      v["chunks"] = std::to_string(std::max(1, k_max_cached / vec));
      if (pair_fit) v["threads"] = "512";
      const int splits = pow2_at_least((512 + min_rows - 1) / std::max<int64_t>(min_rows, 1), 256);
      v["splits"] = std::to_string(std::max(splits, 8));
    }
    if (std::stoi(v["chunks"]) * vec > k_max_cached) v["chunks"] = std::to_string(std::max(1, k_max_cached / vec));
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    if (knob_int(v, "chunks") * knob_int(v, "vec") > k_max_cached)
      return fail(fmt::format("chunks x vec > {} floats per thread would spill registers", k_max_cached));
    const auto& st = v.at("strategy");
    const bool grid = grid_strategy(st);
    if (grid && v.at("stats") == "twopass")
      return fail("strategy=" + st + " accumulates in one pass: stats=shifted or sumsq, not twopass");
    if ((st == "cluster" || (grid && v.at("fit") == "1")) && knob_int(v, "threads") < 128)
      return fail("strategy=" + st + (st == "cluster" ? "" : " with fit=1") +
                  " wants at least 128 threads per CTA (a cluster's)");
    if (st == "stream" && knob_int(v, "stages") * knob_int(v, "seg_kb") > 224)
      return fail(fmt::format("strategy=stream holds stages x seg_kb = {} KiB of shared memory a block; an SM has 227",
                              knob_int(v, "stages") * knob_int(v, "seg_kb")));
    if (st == "ring") {
      auto g = match_norm(spec, nullptr);
      if (g && knob_int(v, "vec") * static_cast<int>(dtype_size(g->in_type)) != 16)
        return fail("strategy=ring moves 16-byte vectors with bulk copies: vec x the input's element size must be 16");
      if (knob_int(v, "ring_kb") / knob_int(v, "seg_kb") < knob_int(v, "ahead") + 2)
        return fail(fmt::format("strategy=ring needs ahead + 2 = {} slots of seg_kb in ring_kb; {} / {} holds {}",
                                knob_int(v, "ahead") + 2, v.at("ring_kb"), v.at("seg_kb"),
                                knob_int(v, "ring_kb") / knob_int(v, "seg_kb")));
    }
    return true;
  }

  // Knobs only another strategy reads are fixed. The grid strategies' fallback (a block per row, for shapes their
  // counters do not fit) runs with 4 chunks, unless `fit` hands their launches to the per-row kernels, whose
  // `chunks` and `cluster` then count.
  knob_values canonical_knobs(const workload_spec&, const knob_values& v) const override {
    knob_values k = v;
    const auto& st = v.at("strategy");
    const bool segments = st == "stream" || st == "ring";
    const bool grid = grid_strategy(st);
    const bool fit = grid && v.at("fit") == "1";  // the per-row kernels' cluster and chunks matter
    if (!grid) k["fit"] = "0";
    if (st != "cluster" && !fit) k["cluster"] = "8";
    if (st != "split") k["splits"] = "64", k["reverse"] = "1";
    if (st != "team" && !(segments && v.at("team_l2") != "0")) k["team_kb"] = "192";
    if (!segments) k["seg_kb"] = "32", k["team_l2"] = "0";
    if (st != "ring") k["ring_kb"] = "192", k["ahead"] = "2";
    // ring falls back to stream only for rows longer than the device's shared memory holds: that stream launch
    // runs with the stream default's lag and hint.
    if (st != "stream")
      for (auto [knob, value] : {std::pair{"lag_mb", st == "ring" ? "0" : "4"}, {"sm_blocks", "0"},
                                 {"l2_hint", st == "ring" ? "1" : "0"}, {"stages", "2"}, {"publish", "counter"}})
        k[knob] = value;
    if (grid && !fit) k["chunks"] = "4";
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_norm(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const knob_values k = canonical_knobs(spec, v);
    std::string s = cuda_emit::prelude(*this, spec, k, g->describe()) + cuda_emit::variant(config(spec, *g, k));
    for (const char* part : {"rows", "grid", "ring", "launch"})
      s += cuda_emit::fixed_file(fmt::format("search/families/group_norm_cuda_{}.cuh", part));
    return s + cuda_emit::epilogue();
  }

 private:
  // Rows held in registers take the two-pass statistics (the mean, then the squared deviations from it) with
  // stats=twopass, and also where x is float32 whatever `stats` says: float32's tolerance is about two ulps of each
  // output, and a sum of squares around a shift (shifted, sumsq) loses 1 + (shift - mean)^2 / var of rstd's
  // precision to cancellation. A fresh UNet GroupNorm in float32 (4 x 256 x 64 x 64) failed verification by 2.4x
  // and 2.6x of that tolerance on the H200 at both defaults (shifted); PyTorch's Welford passed at 0.29x. The cost
  // is a second reduction of the row, where x is float32 alone.
  static bool held_twopass(const norm_graph& g, const knob_values& v) {
    return v.at("stats") == "twopass" || g.in_type == dtype::float32;
  }

  std::string config(const workload_spec& spec, const norm_graph& g, const knob_values& v) const {
    const bool has_w = !g.weight.empty(), has_b = !g.bias.empty();
    const bool group = g.what == norm_graph::kind::group_norm;
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\nusing w_t = {};\nusing b_t = {};\n",
                                cuda_emit::c_type(g.in_type), cuda_emit::c_type(g.out_type),
                                has_w ? cuda_emit::c_type(g.weight_type) : "float",
                                has_b ? cuda_emit::c_type(g.bias_type) : "float");
    s += fmt::format(
        "constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_split = 3, s_team = 4, s_stream = 5, s_ring = 6;\n"
        "constexpr int st_shifted = 0, st_sumsq = 1, st_twopass = 2;\n"
        "constexpr int k_strategy = s_{};\nconstexpr int k_stats = st_{};\n"
        "constexpr int NT = {};\nconstexpr int k_vec = {};\nconstexpr int k_chunks = {};\nconstexpr int k_cluster = {};\n"
        "constexpr int k_splits = {};\nconstexpr bool k_reverse = {};\nconstexpr int k_team_kb = {};\n"
        "constexpr int k_seg_kb = {};\nconstexpr int k_ring_kb = {};\nconstexpr int k_ahead = {};\n"
        "constexpr int k_lag_mb = {};\nconstexpr int k_sm_blocks = {};\n"
        "constexpr int pub_counter = 0, pub_tagged = 1;\nconstexpr int k_stages = {};\nconstexpr int k_publish = pub_{};\n"
        "constexpr bool k_l2_hint = {};\n"
        "constexpr int k_team_l2 = {};\n"
        "constexpr int k_unroll = {};\n"
        "constexpr bool k_stream_store = {};\nconstexpr bool k_fit = {};\n"
        "constexpr bool k_group = {};\nconstexpr bool k_rms = {};\nconstexpr int k_num_groups = {};\n"
        "constexpr int k_normalized_dims = {};\nconstexpr float k_eps = {};\n"
        "constexpr bool k_has_w = {};\nconstexpr bool k_has_b = {};\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\nconstexpr int k_w_input = {};\n"
        "constexpr int k_b_input = {};\n"
        "constexpr bool k_held_twopass = {};\n",
        v.at("strategy"), v.at("stats"), v.at("threads"), v.at("vec"), v.at("chunks"), v.at("cluster"),
        v.at("splits"), v.at("reverse") == "1", v.at("team_kb"), v.at("seg_kb"), v.at("ring_kb"),
        v.at("ahead"), v.at("lag_mb"), v.at("sm_blocks"), v.at("stages"), v.at("publish"),
        v.at("l2_hint") == "1", v.at("team_l2"), v.at("unroll"), v.at("stream_store") == "1", v.at("fit") == "1", group,
        g.what == norm_graph::kind::rms_norm, g.num_groups, g.normalized_dims, cuda_emit::float_literal(g.eps), has_w,
        has_b, spec.inputs.size(), input_index(spec, g.input), has_w ? input_index(spec, g.weight) : -1,
        has_b ? input_index(spec, g.bias) : -1, held_twopass(g, v));
    return s + cuda_emit::norm_pre_and_finalize(g);
  }
};

}  // namespace

std::unique_ptr<family> make_group_norm_cuda() { return std::make_unique<group_norm_cuda>(); }

}  // namespace kf
