// row_softmax_cpu: softmax / log_softmax over the last dim on the cpu, rows dealt to OpenMP threads or (`split`) a
// few long rows each split across them, with the matched prologue (scale, softcap, additive mask, casts) and epilogue
// (casts, top-k) fused into the row loop. This file emits the variant's part (its types, constants, knob-selected
// macros, the fused prologue and epilogue); the fixed code is row_softmax_cpu_part.h (a thread's part of a row),
// row_softmax_cpu_topk.h and row_softmax_cpu.h (the launch).
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

// A spec none of whose tuned cases has rows this long takes split=rows only: twice the work the launch charges a part
// of a row (kf_part_overhead, 4096 values), the shortest row that two threads could finish sooner than one (the search
// spends no evaluations on splitting attention or router rows). split's default is auto (decided at launch,
// row_softmax_cpu.h's kf_split_rows) where some case has such rows and few of them (fewer than k_split_few_rows, more
// threads than most machines have): a vocabulary's logits at T = 1 to a few. Else rows.
constexpr int64_t k_split_min_len = 8192, k_split_few_rows = 256;

struct row_counts {
  int64_t min_rows = -1, max_len = 0;  // over the tuned cases; min_rows -1: none
};

row_counts count_rows(const workload_spec& spec, const softmax_graph& g) {
  row_counts c;
  for (auto& shape : tuning_shapes(spec, *spec.find_input(g.input))) {
    if (shape.empty()) continue;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    c.min_rows = c.min_rows < 0 ? rows : std::min(c.min_rows, rows);
    c.max_len = std::max(c.max_len, shape.back());
  }
  return c;
}

class row_softmax_cpu final : public family {
 public:
  std::string name() const override { return "row_softmax_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  // 3: `split` (a row split across the team: each thread's segment reduced, the statistics combined, each segment
  // written; top-k merged from the segments' lists), the fixed code in three files.
  // 4: the f16_load knob; 5: float16 roundings by kf_round_f16 and float16 stores by kf_st_f16_sel (cpu_prelude.h:
  // the same bits, in loops that vectorize). 6: a top-k of the row's values or of their sigmoid, without a softmax
  // (kf_row_op).
  int version() const override { return 6; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_softmax(spec, why_not);
    if (!g) return false;
    for (auto& in : spec.inputs)
      if (in.type == dtype::float64 || (!is_floating(in.type) && in.type != dtype::boolean)) {
        if (why_not) *why_not = fmt::format("input {} is {}: the cpu softmax takes float32/16 and bfloat16 (and bool masks)", in.name, dtype_name(in.type));
        return false;
      }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"1", "2", "4", "all"}, "OpenMP threads (all: OpenMP's default)"},
        {"schedule", {"static", "dynamic"}, "how rows are dealt to threads"},
        {"rows_per_chunk", {"1", "4", "16", "64"}, "rows per scheduling chunk"},
        {"vector_width", {"1", "4", "8", "16"}, "independent accumulators per reduction (SIMD lanes)"},
        {"unroll", {"1", "2", "4"}, "lane groups per loop step (multiplies the accumulators)"},
        {"passes", {"two", "online"}, "two: max then sum of exponentials; online: both in one read"},
        {"cache_row", {"0", "1"}, "1: the prologue's result is staged in a float row (computed once)"},
        {"math", {"libm", "poly"}, "exp/tanh: libm's, or a polynomial that vectorizes (~1 ulp)"},
        {"exp_once", {"0", "1"}, "1: the sum pass keeps the exponentials in a row scratch; the write pass only scales (two passes, softmax only)"},
        {"split",
         {"rows", "auto", "within"},
         "rows: rows dealt whole to threads; within: each row split across the threads (a segment each, the "
         "statistics combined); auto: at launch, within where the rows are too few to keep every thread busy (specs with "
         "rows of 8192 values or more)",
         "rows"},
        cpu_emit::f16_load_knob(),
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    // split=auto for a few long rows: a Qwen2 vocabulary log-softmax (one row of 151936 float16 logits plus a mask)
    // ran 3.65x slower than eager on one thread while the others idled (docs/results.md, stop 24). A heavy prologue is
    // staged once (cache_row=1) rather than recomputed by each of the three reads: a softcap's tanh, or a rounding to
    // float16, whose store (kf_st_f16: branches, lrintf) does not vectorize. On that row, on 2 cores, the search timed
    // this default with cache_row=0 at 2007 us and with cache_row=1 (split=within, the same split at T=1) at 426.
    bool heavy = false, log = false, few_long = false;
    if (auto g = match_softmax(spec, nullptr)) {
      for (auto& st : g->prologue)
        heavy = heavy || st.what == elementwise_step::kind::softcap || st.to == dtype::float16;
      log = g->log;
      const row_counts c = count_rows(spec, *g);
      few_long = c.max_len >= k_split_min_len && c.min_rows >= 0 && c.min_rows < k_split_few_rows;
    }
    return {{"threads", "all"},  {"schedule", "static"}, {"rows_per_chunk", "16"}, {"vector_width", "8"},
            {"unroll", "1"},     {"passes", "two"},      {"cache_row", heavy ? "1" : "0"},
            {"math", "poly"},    {"exp_once", log ? "0" : "1"}, {"split", few_long ? "auto" : "rows"},
            // The hardware's float16 load: a softmax's loops are not vectorized with the bit operations either; on
            // this repository's 2-core VM a BLOOM-style fp16 ALiBi softmax ran 416 -> 171 us, a Qwen2-style masked
            // fp16 vocabulary log-softmax 524 -> 252 (docs/results.md, stop 26).
            {"f16_load", cpu_emit::has_float16(spec) ? "hw" : "bits"}};
  }

  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    if (k.count("threads") && k.at("threads") == "1") k["split"] = "rows";  // a team of one splits nothing
    // Without a softmax there are no statistics: the passes, the exponential's knobs and the row cache do nothing.
    if (auto g = match_softmax(spec, nullptr); g && g->op != softmax_graph::row_op::softmax) {
      k["passes"] = "two";
      k["exp_once"] = "0";
      k["cache_row"] = "0";
      k["math"] = "poly";
      k["unroll"] = "1";
      k["vector_width"] = "8";
    }
    cpu_emit::canonical_f16_load(spec, k);
    return k;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not) || !covers(spec, why_not)) return false;
    if (knob_int(v, "vector_width") * knob_int(v, "unroll") > 32) {
      if (why_not) *why_not = "vector_width x unroll above 32 accumulators spills registers";
      return false;
    }
    if (v.at("split") != "rows" && count_rows(spec, *match_softmax(spec, nullptr)).max_len < k_split_min_len) {
      if (why_not)
        *why_not = fmt::format("split={}: no tuned case has rows of {} values or more; shorter rows are dealt whole",
                               v.at("split"), k_split_min_len);
      return false;
    }
    return true;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override;
};

std::string row_softmax_cpu::emit(const workload_spec& spec, const knob_values& given) const {
  const knob_values v = canonical_knobs(spec, given);
  auto g = match_softmax(spec, nullptr);
  KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
  // The fused prologue, in graph order: mask k's row is at mrow[k], read at j * mstep[k] (row_softmax_cpu_part.h).
  std::string mask_types, mask_inputs, mask_dtypes, mask_bytes, prologue;
  int nm = 0;
  for (auto& st : g->prologue) {
    std::string mask_value;
    if (st.what == elementwise_step::kind::add_mask || st.what == elementwise_step::kind::masked_fill) {
      auto mt = spec.find_input(st.mask)->type;
      const char* sep = nm ? ", " : "";
      mask_types += fmt::format("typedef {} kf_m{}_t;\n", cpu_emit::storage_type(mt), nm);
      mask_inputs += fmt::format("{}{}", sep, input_index(spec, st.mask));
      mask_dtypes += sep + ew::abi_code(mt);
      mask_bytes += fmt::format("{}sizeof(kf_m{}_t)", sep, nm);
      mask_value = cpu_emit::load(mt, fmt::format("((const kf_m{0}_t*)mrow[{0}])[j * mstep[{0}]]", nm));
      ++nm;
    }
    prologue += cpu_emit::prologue_statements(st, mask_value);
  }
  std::string epi = cpu_emit::round_through(g->softmax_type, "v");
  for (auto t : g->epilogue_casts) epi = cpu_emit::round_through(t, epi);
  const bool keep = v.at("exp_once") == "1" && v.at("passes") == "two" && !g->log;  // else there is nothing to keep
  auto flag = [](bool b) { return b ? "true" : "false"; };
  std::string code = cpu_emit::math_macros(v.at("math")) + cpu_emit::omp_macros(v.at("threads"), v.at("schedule"));
  code += fmt::format("\ntypedef {} kf_in_t;\ntypedef {} kf_out_t;\n{}", cpu_emit::storage_type(g->in_type),
                      cpu_emit::storage_type(g->out_type), mask_types);
  code += fmt::format(
      "constexpr int kf_lanes = {};  // vector_width x unroll accumulators\n"
      "constexpr int kf_rows_per_chunk = {};\n"
      "constexpr int kf_split = {};  // rows dealt whole to threads (0), split across the team at launch (1: auto) or "
      "always (2)\n"
      "constexpr bool kf_online = {}, kf_cache_row = {};\n"
      "constexpr bool kf_keep_exp = {};  // exp_once with two passes and no log: the sum pass keeps the exponentials\n"
      "constexpr bool kf_log = {};\n"
      "constexpr int kf_k = {};  // top-k (0: none)\n"
      "constexpr int kf_row_op = {};  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)\n"
      "constexpr int kf_n_inputs = {}, kf_x_input = {}, kf_rank = {};\n"
      "constexpr int kf_x_dtype = {}, kf_out_dtype = {};\n"
      "constexpr int kf_n_masks = {};\n"
      "constexpr int kf_mask_input[] = {{{}}}, kf_mask_dtype[] = {{{}}};\n"
      "constexpr int64_t kf_mask_bytes[] = {{{}}};\n",
      knob_int(v, "vector_width") * knob_int(v, "unroll"), v.at("rows_per_chunk"),
      v.at("split") == "rows" ? 0 : v.at("split") == "auto" ? 1 : 2, flag(v.at("passes") == "online"),
      flag(v.at("cache_row") == "1"), flag(keep), flag(g->log), g->topk, static_cast<int>(g->op), spec.inputs.size(),
      input_index(spec, g->input), g->rank, ew::abi_code(g->in_type), ew::abi_code(g->out_type), nm,
      nm ? mask_inputs : "-1", nm ? mask_dtypes : "-1", nm ? mask_bytes : "0");
  code += fmt::format(
      "\n// x[j] after the fused prologue: what the reduction sees (mask k's row at mrow[k], its j-th value at\n"
      "// j * mstep[k]).\n"
      "static inline float kf_pro(const kf_in_t* x, const void* const*{}, const int64_t*{}, int64_t j) {{\n"
      "  float v = {};\n{}  return v;\n}}\n",
      nm ? " mrow" : "", nm ? " mstep" : "", cpu_emit::load(g->in_type, "x[j]"), prologue);
  code += fmt::format(
      "\n// A result on its way out: rounded through the softmax's type and each later cast (kf_epi), then stored as\n"
      "// the output's type (kf_store).\n"
      "static inline float kf_epi(float v) {{ return {}; }}\n"
      "// kf_row_op != 0: what the top-k ranks, before the epilogue's rounding.\n"
      "static inline float kf_map(float v) {{ return {}; }}\n"
      "static inline kf_out_t kf_store(float v) {{ return {}; }}\n",
      epi, g->op == softmax_graph::row_op::sigmoid ? "1.0f / (1.0f + expf(-v))" : "v",
      cpu_emit::store_vec(g->out_type, "v"));
  return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude(v) + cpu_emit::variant(code) +
         cpu_emit::fixed_file("search/families/row_softmax_cpu_part.h") +
         cpu_emit::fixed_file("search/families/row_softmax_cpu_topk.h") +
         cpu_emit::fixed_file("search/families/row_softmax_cpu.h");
}

}  // namespace

std::unique_ptr<family> make_row_softmax_cpu() { return std::make_unique<row_softmax_cpu>(); }

}  // namespace kf
