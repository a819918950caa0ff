// row_softmax_cuda: softmax / log_softmax over the last dim with a fused prologue (scale, softcap, additive
// masks, casts) and epilogue (cast, top-k), emitted as one CUDA translation unit. Strategies: a warp per row,
// a block per row, or a cluster of CTAs per row reducing through distributed shared memory (few long rows).
// The row stays in registers (`chunks` 16-byte vectors per thread) or shared memory (`cache=smem`) so the
// input is read once; longer rows fall back to a statistics pass plus a write pass. This file emits the variant's
// constants, types and fused prologue; the fixed code is row_softmax_cuda.cuh.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

struct shape_summary {
  int64_t max_n = 0, min_rows = 0, max_rows = 0;
};

shape_summary summarize(const workload_spec& spec, const softmax_graph& g) {
  shape_summary s;
  const input_spec* x = spec.find_input(g.input);
  bool first = true;
  for (auto& shape : tuning_shapes(spec, *x)) {
    if (shape.empty()) continue;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    s.max_n = std::max(s.max_n, shape.back());
    s.min_rows = first ? rows : std::min(s.min_rows, rows);
    s.max_rows = std::max(s.max_rows, rows);
    first = false;
  }
  return s;
}

// Whether rows of the spec's cases are not a whole number of `vec`-element vectors: a vocabulary of 50257 or
// 51865, CLIP's 77 tokens. Every case (the verifier runs them all), or the gated ones (what the defaults are tuned
// for). With `ragged=1` such rows take the ragged path (aligned vectors with the row's ends masked,
// row_softmax_cuda.cuh) instead of one element a thread; a spec without them emits no ragged path (fewer
// instantiations to compile; any row still runs, then an element at a time). Top-k keeps the element path (its
// lists take columns in order).
bool ragged_rows(const workload_spec& spec, const softmax_graph& g, int64_t vec, bool gated_only = false) {
  const input_spec* x = spec.find_input(g.input);
  if (g.topk > 0 || vec <= 1 || !x) return false;
  std::vector<std::vector<int64_t>> shapes;
  if (gated_only) shapes = tuning_shapes(spec, *x);
  else
    for (auto& c : spec.cases) shapes.push_back(concrete_shape(*x, c));
  for (auto& shape : shapes)
    if (!shape.empty() && shape.back() % vec != 0) return true;
  return false;
}

// A thread's share of a register-cached row in the defaults (cuda_emit::k_block_cached_floats at 1024 threads).
constexpr int64_t k_thread_floats = cuda_emit::k_block_cached_floats / 1024;

// The type that holds every value the prologue produces exactly: the shared-memory row cache's element type. A
// 16-bit input stays 16-bit through widening casts (Llama-3's log_softmax(x, dtype=float32)), a cast to a 16-bit
// type makes it that type (the kernel rounds there), and any arithmetic (a scale, a mask, a softcap: computed in
// float, not rounded) makes it float unless a later cast rounds again.
dtype cached_type(const softmax_graph& g) {
  dtype t = g.in_type;
  for (auto& st : g.prologue) {
    if (st.what != elementwise_step::kind::cast) t = dtype::float32;
    else if (dtype_size(st.to) == 2) t = st.to;
    else if (st.to != dtype::float32 && st.to != dtype::float64) t = dtype::float32;
  }
  return dtype_size(t) == 2 ? t : dtype::float32;
}

int pow2_at_least(int64_t v, int cap) {
  int p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

class row_softmax_cuda final : public family {
 public:
  std::string name() const override { return "row_softmax_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: masks with a column stride of 1 take the vector path. 3: `team` (rows shorter than a warp's vectors share
  // it), masks' leading dims merged at launch and walked in 32-bit arithmetic where the rows allow.
  // 4: `waves` (persistent grids for strategy=warp and block). 5: the register cache loads unguarded (all chunks at
  // once). 6: strategy=grid (a team of co-resident CTAs per row) and `split`. 7: `head` (the register cache kept
  // for the first part of a row longer than it). 8: cache=smem holds 16-bit values where the prologue's are
  // (half the shared memory a CTA: more CTAs an SM), in 16-byte accesses. 9: masks' leading dims divided by magic
  // numbers (a multiply-high and a shift) where rows < 2^31. 12: a top-k of the row's values or of their sigmoid,
  // without a softmax (k_row_op: a sigmoid router, a sampler's top-k of logits). 13: fast_div moved to the prelude
  // (the same code, shared with adaptive_pool_cuda).
  int version() const override { return 13; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_softmax(spec, why_not);
    if (!g) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    if (!cuda_emit::storable(g->in_type) || !cuda_emit::storable(g->out_type))
      return fail("row_softmax_cuda handles float32/float16/bfloat16/float64 tensors only");
    for (const std::string& name : g->mask_inputs()) {
      const input_spec* m = spec.find_input(name);
      if (!m || !(cuda_emit::storable(m->type) || m->type == dtype::boolean))
        return fail("row_softmax_cuda needs floating-point masks (or bool masks of masked_fill)");
    }
    if (g->topk > 32) return fail("row_softmax_cuda's top-k keeps at most 32 values per row");
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"strategy",
         {"warp", "block", "cluster", "grid"},
         "threads per row: a warp, a block, a cluster of blocks, or a team of co-resident blocks meeting in global "
         "memory (one cooperative launch; every SM for a few long rows)"},
        {"threads", {"32", "64", "128", "256", "512", "1024"}, "threads per block (32: a warp a block, as Inductor launches short rows)"},
        {"team",
         {"auto", "4", "8", "16", "32"},
         "strategy=warp: threads per row (a warp holds 32 / team rows); auto: at launch, the narrowest team whose "
         "registers (chunks vectors a thread) hold the row",
         "32"},
        {"vec", {"1", "2", "4", "8"}, "elements per access (16-byte loads at 8 x 16-bit)"},
        {"chunks", {"1", "2", "4", "8", "16"}, "vectors per thread kept in registers (the row cache)"},
        {"cluster", {"2", "4", "8", "16"}, "CTAs per row for strategy=cluster (16 is non-portable)"},
        {"split",
         {"auto", "4", "8", "16", "32", "64", "128"},
         "strategy=grid: CTAs per row; auto: sized at launch from the CTAs resident on the device, the rows and the "
         "register cache",
         "auto"},
        {"cache", {"regs", "smem"}, "where a row lives between the statistics and the write"},
        {"online", {"0", "1"}, "one fused (max, sum) reduction instead of a max then a sum"},
        {"unroll", {"1", "2", "4"}, "unrolling of the streaming loops (rows longer than the cache)"},
        {"stream_store", {"0", "1"}, "evict-first stores of the output"},
        {"head",
         {"0", "1"},
         "rows longer than the register cache: 1 keeps their first chunks x threads x vec values in registers "
         "between the passes, so only the rest is read twice; 0 reads the whole row twice",
         "0"},
        {"ragged",
         {"0", "1"},
         "rows that are not a whole number of vectors (or views that start between two): 1 runs them on aligned "
         "vectors with each row's end vectors masked, 0 an element a thread",
         "0"},
        {"tanh",
         {"exp", "approx"},
         "softcap's tanh: one exp and one reciprocal (~1e-7) or tanh.approx.f32 (~5e-4 relative)"},
        {"fit", {"0", "1"}, "strategy=block: at run time, halve the block while the row still fits its registers"},
        {"waves",
         {"0", "1", "2", "4"},
         "strategy=warp and block: 0, a block per row group; k, persistent: k waves of resident blocks looping over "
         "the "
         "rows (fewer block launches for many short rows)",
         "0"},
        {"pdl",
         {"0", "1"},
         "1: launched with programmatic dependent launch, the blocks scheduled while the previous kernel on the "
         "stream finishes and waiting (griddepcontrol.wait) for its results before touching memory",
         "0"},
    };
  }

  // Threads a row (cluster x threads) and values a thread (chunks x vec, threads x chunks a block's share).
  std::vector<std::pair<std::string, std::string>> trades() const override {
    return {{"cluster", "threads"}, {"chunks", "vec"}, {"threads", "chunks"}};
  }

  knob_values default_variant(const workload_spec& spec) const override {
    // pdl=1: H200 harness, Qwen router [4096, 256], hot: 2.89 -> 2.54 us at 256 threads.
    knob_values v{
        {"strategy", "block"}, {"threads", "256"}, {"vec", "8"},    {"chunks", "1"},       {"cluster", "8"},
        {"cache", "regs"},     {"online", "0"},    {"unroll", "1"}, {"stream_store", "0"}, {"tanh", "exp"},
        {"fit", "1"},          {"team", "32"},     {"waves", "0"},  {"pdl", "1"},         {"split", "auto"},
        {"head", "0"},         {"ragged", "0"}};
    auto g = match_softmax(spec, nullptr);
    if (!g) return v;
    const int vec = std::min<int>(8, static_cast<int>(16 / dtype_size(g->in_type)));
    v["vec"] = std::to_string(std::max(vec, 1));
    const auto s = summarize(spec, *g);
    int64_t per_vec = std::max(vec, 1);
    const int64_t out_vec = std::max<int64_t>(1, 16 / dtype_size(g->out_type));  // 16 bytes of output
    // Where rows are many (the warp and block paths below), vectors of at most 16 bytes of output too: a thread's
    // 32 bytes of float32 from 8 bfloat16 values are stored as two 16-byte halves, each store instruction of a warp
    // then writing half of every 32-byte sector it touches (twice the L2 write requests; the cluster path measured
    // 212 -> 159 us on Llama-3's vocabulary for it, stop 26; T5's bias softmax, 98,304 rows of 512 bf16 -> float32,
    // 121.0 -> 119.2 us in whole warps, H100, stop 33).
    auto narrow_to_output = [&] {
      per_vec = std::min(per_vec, out_vec);
      v["vec"] = std::to_string(per_vec);
    };
    // The ragged path where a gated case has such rows (set below, at the final vector width; a stored winner
    // recorded before the knob keeps the element path for its odd edge cases: `before`). A ragged row's columns
    // run up to 2 vec - 2 past its length (row_softmax_cuda.cuh): the register cache holds that many more, so a row
    // just under a cache's size is not streamed for it.
    const bool ragged = ragged_rows(spec, *g, per_vec, true);
    const int64_t held_n = s.max_n + (ragged ? 2 * per_vec - 2 : 0);
    auto fit_chunks = [&](int64_t elems, int threads) {
      return std::to_string(pow2_at_least((elems + threads * per_vec - 1) / (threads * per_vec), 16));
    };
    // Measured on an H200 (docs/kernel-notes.md): few threads per row with several vectors each keep more
    // rows in flight per SM than wide blocks do; a cluster per row only when rows are too few to fill the chip.
    if (g->topk > 0 || s.max_n <= 1024) {
      // Teams sized at launch (team=auto) with 4 vectors a thread: GPT-2's 128-wide rows in teams of 4, 8 rows a
      // warp, instead of a warp whose upper half loaded nothing; its 1024-wide rows in whole warps.
      const int threads = 128;
      if (g->topk == 0) narrow_to_output();
      v["strategy"] = "warp";
      v["threads"] = std::to_string(threads);
      v["team"] = g->topk > 0 ? "32" : "auto";
      v["chunks"] = fit_chunks(held_n, 32);
      if (g->topk == 0) {
        // Up to 4 vectors a thread keep rows in flight where there are many; where rows are few and short, 4 leave
        // most SMs idle (T5's 768 rows of 64 at B=1: 12 CTAs of 128 threads). Fewer vectors a thread, then, until
        // the grid has a CTA for every other SM: the searches' winners for such cases took exactly that, T5 at
        // B=1 one vector a thread (H200, stop 30: 1.58 us) and GPT-2 at B=1 (1536 rows of 128) two.
        const int64_t vectors = s.min_rows * ((s.max_n + per_vec - 1) / per_vec);
        int c = 4;
        while (c > 1 && vectors < int64_t{c} * threads * cuda_emit::k_reference_sms / 2) c /= 2;
        v["chunks"] = std::to_string(std::max(std::stoi(v["chunks"]), c));
        // Evict-first stores where the output outgrows L2 (it is not read again before it leaves): the inputs a
        // later row reads again (a broadcast mask or bias) stay. H100, stop 33: T5's bias softmax 119.2 -> 114.9 us,
        // GPT-2's causal softmax at B=4 74.6 -> 73.7.
        if (s.max_rows * s.max_n * static_cast<int64_t>(dtype_size(g->out_type)) > (int64_t{32} << 20))
          v["stream_store"] = "1";
      }
    } else if (s.min_rows < 2 * cuda_emit::k_reference_sms && s.max_n >= 16384) {
      // Few long rows: a team of co-resident CTAs per row (strategy=grid, sized at launch), so that every SM holds
      // a segment of some row in registers. A portable cluster (8 CTAs a row) left most SMs idle: 8 rows of Gemma's
      // 262144 vocabulary ran on 64 CTAs of 512 threads, each converting, capping and exponentiating 32768 values,
      // at 17 % of the bandwidth floor on an H200 (docs/results.md, stop 22). The register cache is sized for the
      // segment a team of about two CTAs an SM gives the fewest rows.
      const int64_t resident = 2 * cuda_emit::k_reference_sms;
      const int64_t team = std::max<int64_t>(1, resident / std::max<int64_t>(1, s.min_rows));
      v["strategy"] = "grid";
      v["threads"] = "256";
      v["chunks"] = fit_chunks((held_n + team - 1) / team, 256);
      v["online"] = "1";  // one barrier of the team instead of two
      // Vectors of at most 16 bytes of output (the chunks kept: half the registers where that halves the vector, so
      // more CTAs are resident and split=auto gives each row more of them), and evict-first stores of a result
      // nothing reads again: searches of the Gemma vocabulary (8 x 262,144 bf16 -> float32) took both moves from
      // the default, on an H200 (16.16 -> 13.54 -> 12.80 us; docs/results.md, stop 23) and on an H100 (17.97 us
      // against 14.21; stop 27).
      v["vec"] = std::to_string(std::min<int64_t>(per_vec, out_vec));
      v["stream_store"] = "1";
    } else if (s.max_n > cuda_emit::k_block_cached_floats) {
      // Many rows longer than a block's registers hold (32 floats a thread at 1024 threads): a portable cluster
      // per row, 256 threads of 32 cached values each, as few CTAs as hold the row up to 8, and past that the
      // row in shared memory (below) or streamed (a statistics pass, then a write pass reading x again; unrolled
      // by 2, evict-first stores). Clusters holding such rows in registers ran slower on an H100 (Llama-3's 512
      // rows of 128,256: 8 CTAs of 512 threads 255 us, 16 of 256 threads 331, against 187 streamed; fewer CTAs an
      // SM for the registers; docs/kernel-notes.md).
      const int threads = 256;
      const int64_t per_cta = threads * k_thread_floats;
      v["strategy"] = "cluster";
      v["threads"] = std::to_string(threads);
      v["chunks"] = std::to_string(std::max<int64_t>(1, k_thread_floats / per_vec));
      v["cluster"] = std::to_string(std::max(2, pow2_at_least((held_n + per_cta - 1) / per_cta, 8)));
      v["online"] = "1";
      if (s.max_n > 8 * per_cta) {
        v["unroll"] = "2";
        v["stream_store"] = "1";
        // Longer than 8 CTAs' registers: each CTA keeps its segment in shared memory (16-bit where the prologue's
        // values are), so x is read once. Streamed twice instead, the second read hits L2 but the kernel ran at
        // 65 % of DRAM bandwidth with L2 81 % busy (ncu, H100, Llama-3's 512 x 128,256: 187 us). Vectors of at
        // most 16 bytes of output: a thread's 32 bytes of float32 stored as two 16-byte halves leave every
        // instruction writing half of each sector (same H100, same rows, shared-memory cache: 212 us at 8 values
        // a vector, 159 at 4; stop 26).
        const int64_t elem = dtype_size(cached_type(*g));
        int cl = 2;
        while (cl < 8 && (s.max_n + cl - 1) / cl * elem > 32 * 1024) cl *= 2;
        if ((s.max_n + cl - 1) / cl * elem <= 64 * 1024) {
          v["cache"] = "smem";
          v["cluster"] = std::to_string(cl);
          v["vec"] = std::to_string(std::min<int64_t>(std::stoi(v["vec"]), out_vec));  // both powers of 2
        }
      }
    } else {
      narrow_to_output();
      const int threads = std::clamp(pow2_at_least(s.max_n / (per_vec * 2), 1024), 64, 1024);
      v["threads"] = std::to_string(threads);
      v["chunks"] = fit_chunks(held_n, threads);
    }
    if (std::stoi(v["chunks"]) * std::stoi(v["vec"]) > 64) v["chunks"] = std::to_string(64 / std::stoi(v["vec"]));
    if (ragged_rows(spec, *g, std::stoi(v["vec"]), true)) v["ragged"] = "1";
    if (g->op != softmax_graph::row_op::softmax) v["chunks"] = "1";  // one streaming pass holds nothing
    // tanh stays exp-based (~1e-7): tanh.approx measured 15% faster on softcapped attention rows (H200) and
    // passed on the seed's N(0, 3) inputs, but its ~5e-4 relative error becomes up to 2.4% of a softmax value
    // for logits near the cap (verify's large_magnitude inputs): a knob for the search, not a default.
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto fail = [&](std::string m) {
      if (why_not) *why_not = std::move(m);
      return false;
    };
    if (knob_int(v, "chunks") * knob_int(v, "vec") > 64)
      return fail("chunks x vec > 64 floats per thread would spill registers");
    auto g = match_softmax(spec, nullptr);
    if (g && g->topk > 0 && (v.at("strategy") != "warp" || v.at("team") != "32"))
      return fail("top-k needs strategy=warp with team=32");
    if (v.at("strategy") == "cluster" && knob_int(v, "threads") < 128)
      return fail("strategy=cluster wants at least 128 threads per CTA");
    return true;
  }

  // Knobs that do not change this spec's kernel are fixed: another strategy's, and tanh without a softcap.
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    if (v.at("strategy") != "cluster") k["cluster"] = "8";
    if (v.at("strategy") != "block") k["fit"] = "0";
    if (v.at("strategy") != "warp") k["team"] = "32";
    if (v.at("strategy") == "cluster" || v.at("strategy") == "grid") k["waves"] = "0";
    if (v.at("strategy") != "grid") k["split"] = "auto";
    if (v.at("strategy") == "grid") k["cache"] = "regs";  // a team spreads a long row over its CTAs' registers
    bool softcap = false;
    auto g = match_softmax(spec, nullptr);
    if (g) {
      for (auto& st : g->prologue) softcap = softcap || st.what == elementwise_step::kind::softcap;
      // `head` only changes rows longer than the register cache: where every tuned row fits, it emits the same
      // kernel either way (a grid team's size is decided at launch, so its rows may not fit).
      const auto& st = v.at("strategy");
      const int64_t per_thread = knob_int(v, "chunks") * knob_int(v, "vec");
      const int64_t holds = st == "warp"    ? 32 * per_thread
                            : st == "block" ? knob_int(v, "threads") * per_thread
                            : st == "cluster" ? knob_int(v, "cluster") * knob_int(v, "threads") * per_thread
                                              : 0;
      if (holds > 0 && summarize(spec, *g).max_n <= holds) k["head"] = "0";
    }
    if (!g || !ragged_rows(spec, *g, knob_int(v, "vec"))) k["ragged"] = "0";  // no such rows: the same kernel
    if (g && g->op != softmax_graph::row_op::softmax) {  // no statistics: one pass, nothing cached or combined
      k["online"] = "0";
      k["cache"] = "regs";
      k["head"] = "0";
      k["chunks"] = "1";
    }
    if (!softcap) k["tanh"] = "exp";
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_softmax(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const knob_values k = canonical_knobs(spec, v);
    return cuda_emit::prelude(*this, spec, k, g->describe()) + cuda_emit::variant(config(spec, *g, k)) +
           cuda_emit::fixed_file("search/families/row_softmax_cuda.cuh") + cuda_emit::epilogue();
  }

 private:
  std::string config(const workload_spec& spec, const softmax_graph& g, const knob_values& v) const {
    const std::vector<std::string> masks = g.mask_inputs();
    const int nm = static_cast<int>(masks.size());
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\nusing cache_t = {};\n",
                                cuda_emit::c_type(g.in_type), cuda_emit::c_type(g.out_type),
                                cuda_emit::c_type(cached_type(g)));
    std::string mask_idx, mask_codes, mask_bytes;
    for (int k = 0; k < nm; ++k) {
      const input_spec* m = spec.find_input(masks[k]);
      s += fmt::format("using mask{}_t = {};\n", k, cuda_emit::c_type(m->type));
      mask_idx += fmt::format("{}{}", k ? ", " : "", input_index(spec, masks[k]));
      mask_codes += fmt::format("{}dtype_code<mask{}_t>::value", k ? ", " : "", k);
      mask_bytes += fmt::format("{}(int)sizeof(mask{}_t)", k ? ", " : "", k);
    }
    const auto& st = v.at("strategy");
    s += fmt::format(
        "constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_grid = 3;\n"
        "constexpr int k_strategy = s_{};\n"
        "constexpr int NT = {};\nconstexpr int k_vec = {};\nconstexpr int k_chunks = {};\nconstexpr int k_cluster = "
        "{};\nconstexpr int k_split = {};  // 0: auto\n"
        "constexpr int k_unroll = {};\nconstexpr bool k_online = {};\nconstexpr bool k_cache_smem = {};\n"
        "constexpr bool k_stream_store = {};\nconstexpr bool k_log = {};\nconstexpr int k_topk = {};\n"
        "constexpr int k_row_op = {};  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)\n"
        "constexpr bool k_fit = {};\nconstexpr bool k_pdl = {};\nconstexpr int k_team = {};  // 0: auto\n"
        "constexpr bool k_head = {};\nconstexpr bool k_ragged = {};\n"
        "constexpr int k_waves = {};\nconstexpr size_t k_smem_limit = 227 * 1024;\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\nconstexpr int k_n_masks = {};\n",
        st, v.at("threads"), v.at("vec"), v.at("chunks"), v.at("cluster"), v.at("split") == "auto" ? "0" : v.at("split"),
        v.at("unroll"),
        v.at("online") == "1" ? "true" : "false", v.at("cache") == "smem" ? "true" : "false",
        v.at("stream_store") == "1" ? "true" : "false", g.log ? "true" : "false", g.topk,
        static_cast<int>(g.op), v.at("fit") == "1" ? "true" : "false", v.at("pdl") == "1" ? "true" : "false",
        v.at("team") == "auto" ? "0" : v.at("team"), v.at("head") == "1" ? "true" : "false",
        v.at("ragged") == "1" ? "true" : "false", v.at("waves"),
        spec.inputs.size(), input_index(spec, g.input), nm);
    s += fmt::format("constexpr int k_mask_input[] = {{{}}};\n", nm ? mask_idx : "-1");
    s += fmt::format("constexpr int k_mask_dtype[] = {{{}}};\n", nm ? mask_codes : "-1");
    s += fmt::format("constexpr int k_mask_bytes[] = {{{}}};\n", nm ? mask_bytes : "1");
    // The fused prologue, in graph order, and the vector loader that applies it (to row_args `a`, defined in
    // row_softmax_cuda.cuh after this part).
    std::string params, loads, args;
    for (int k = 0; k < nm; ++k) {
      params += fmt::format(", float m{}", k);
      // `mvec` false (a ragged row whose mask vectors are not aligned with x's): the mask a value at a time.
      loads += fmt::format(
          "  float mv{0}[V];\n  const mask{0}_t* m{0} = static_cast<const mask{0}_t*>(a.mask[{0}]) + moff[{0}];\n"
          "  if (mvec) {{\n    load_vec<mask{0}_t, V>(m{0} + i * a.mask_col_stride[{0}], mv{0});\n  }} else {{\n"
          "#pragma unroll\n    for (int v = 0; v < V; ++v) load_vec<mask{0}_t, 1>(m{0} + (i + v) * "
          "a.mask_col_stride[{0}], mv{0} + v);\n  }}\n",
          k);
      args += fmt::format(", mv{}[v]", k);
    }
    s += fmt::format("\n__device__ __forceinline__ float prologue(float x{}) {{\n{}  return x;\n}}\n", params,
                     cuda_emit::prologue_code(g.prologue, v.at("tanh") == "approx" ? "tanh_approx" : "tanh_exp"));
    s += fmt::format(
        "\ntemplate <int V, typename A>\n__device__ __forceinline__ void load_row_vec(const A& a, const int64_t* moff, "
        "int64_t base, int64_t i, float* x, bool mvec = true) {{\n  (void)moff;\n  (void)mvec;\n"
        "  load_vec<in_t, V>(a.x + base + i, x);\n{}"
        "#pragma unroll\n  for (int v = 0; v < V; ++v) x[v] = prologue(x[v]{});\n}}\n",
        loads, args);
    // The softmax's own result type and any casts after it round the values before they are stored (or
    // ranked by top-k); a last rounding to the output type is left to the store (rounding twice is rounding once).
    std::vector<dtype> chain{g.softmax_type};
    chain.insert(chain.end(), g.epilogue_casts.begin(), g.epilogue_casts.end());
    // Top-k ranks the rounded values before the store: there every rounding stays.
    const std::string rounds = cuda_emit::rounding_code(chain, g.topk == 0 ? std::optional(g.out_type) : std::nullopt);
    s += fmt::format("\n__device__ __forceinline__ float finalize(float x) {{\n{}  return x;\n}}\n", rounds);
    return s;
  }
};

}  // namespace

std::unique_ptr<family> make_row_softmax_cuda() { return std::make_unique<row_softmax_cuda>(); }

}  // namespace kf
