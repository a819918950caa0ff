// row_softmax_cpu: softmax / log_softmax over the last dim on the cpu, one row per OpenMP task, with the
// matched prologue (scale, softcap, additive mask, casts) and epilogue (casts, top-k) fused into the row loop.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

constexpr const char* k_kernel = R"(
typedef $IN_T$ kf_in_t;
typedef $OUT_T$ kf_out_t;
$MASK_TYPES$
enum { kf_lanes = $LANES$, kf_k = $TOPK$ };

// x[j] after the fused prologue: what the reduction sees.
static inline float kf_pro(const kf_in_t* x$MASK_PARAMS$, int64_t j) {
  float v = $LOAD_X$;
$PROLOGUE$  return v;
}

// A result on its way out: rounded through the softmax's type and each later cast.
static inline float kf_epi(float v) { return $EPILOGUE$; }

static inline bool kf_gt(float a, float b) { return a > b || (a != a && b == b); }  // NaN is largest, as in torch

// The offset of the row at multi-index idx (over x's leading dims) in t, right-aligned to x's rank;
// size-1 dims of t broadcast.
static inline int64_t kf_row_off(const kf_tensor* t, const int64_t* idx, int rank) {
  int64_t off = 0;
  int lead = rank - t->ndim;
  for (int i = 0; i + 1 < t->ndim; ++i)
    if (t->shape[i] != 1) off += idx[i + lead] * t->stride[i];
  return off;
}

// 0: handled; 1: arguments that do not match the spec; 2: a layout this kernel does not handle.
static int kf_check(const kf_tensor* in, int n_in, const kf_tensor* out, int n_out) {
  if (n_in != $N_INPUTS$ || n_out != $N_OUTPUTS$) return 1;
  const kf_tensor* x = &in[$XI$];
  const int R = $RANK$;
  if (x->dtype != $X_DT$ || x->ndim != R) return 1;
  const int64_t L = x->shape[R - 1];
  if (L > 1 && x->stride[R - 1] != 1) return 2;
  const int kf_mask_idx[] = {$MASK_INDEXES$-1};
  for (int mi : kf_mask_idx) {
    if (mi < 0) break;
    const kf_tensor* m = &in[mi];
    if (m->ndim > R) return 1;
    for (int i = 0; i < m->ndim; ++i)
      if (m->shape[i] != 1 && m->shape[i] != x->shape[i + R - m->ndim]) return 1;
    if (m->ndim > 0 && m->shape[m->ndim - 1] > 1 && m->stride[m->ndim - 1] != 1) return 2;
  }
$MASK_DTYPE_CHECKS$  const int64_t width = kf_k > 0 ? kf_k : L;
  if (kf_k > L) return 1;
  for (int o = 0; o < n_out; ++o) {
    const kf_tensor* t = &out[o];
    if (t->ndim != R || t->shape[R - 1] != width) return 1;
    for (int i = 0; i + 1 < R; ++i)
      if (t->shape[i] != x->shape[i]) return 1;
    if (width > 1 && t->stride[R - 1] != 1) return 2;
  }
  if (out[0].dtype != $OUT_DT$) return 1;
  if (n_out > 1 && out[1].dtype != KF_INT64 && out[1].dtype != KF_INT32) return 1;
  return 0;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (int rc = kf_check(in, n_in, out, n_out)) return rc;
  const kf_tensor* x = &in[$XI$];
  const int R = $RANK$;
  const int64_t L = x->shape[R - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < R; ++i) rows *= x->shape[i];
  if (rows == 0 || L == 0) return 0;
#pragma omp parallel$THREADS$
  {
    std::vector<float> sc($SCRATCH$);
    std::vector<float> tv(kf_k > 0 ? kf_k : 1);
    std::vector<int64_t> ti(kf_k > 0 ? kf_k : 1);
#pragma omp for schedule($SCHEDULE$, $CHUNK$)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t idx[KF_MAX_DIMS] = {0};
      int64_t rest = r;
      for (int i = R - 2; i >= 0; --i) {
        idx[i] = rest % x->shape[i];
        rest /= x->shape[i];
      }
      const kf_in_t* xr = (const kf_in_t*)x->data + kf_row_off(x, idx, R);
$MASK_ROWS$      kf_out_t* orow = (kf_out_t*)out[0].data + kf_row_off(&out[0], idx, R);
$CACHE$
      float m = -INFINITY, s = 0.f;
$REDUCE$
$WRITE$
    }
  }
  return 0;
}
)";

// Two reads of the row: the max (lane-wise, then combined), then the sum of exponentials. With exp_once=0 the
// write pass takes each exp again; with exp_once=1 the sum pass keeps them in the row scratch and the write pass
// only scales (one exp per element).
constexpr const char* k_max_pass = R"(      {
        float mx[kf_lanes], sm[kf_lanes];
        for (int l = 0; l < kf_lanes; ++l) { mx[l] = -INFINITY; sm[l] = 0.f; }
        int64_t j = 0;
        for (; j + kf_lanes <= L; j += kf_lanes)
          for (int l = 0; l < kf_lanes; ++l) { float v = KF_X(j + l); mx[l] = v > mx[l] ? v : mx[l]; }
        for (int l = 0; l < kf_lanes; ++l) m = mx[l] > m ? mx[l] : m;
        for (; j < L; ++j) { float v = KF_X(j); m = v > m ? v : m; }
)";

constexpr const char* k_sum_pass = R"(        for (j = 0; j + kf_lanes <= L; j += kf_lanes)
          for (int l = 0; l < kf_lanes; ++l) sm[l] += KF_EXP(KF_X(j + l) - m);
        for (int l = 0; l < kf_lanes; ++l) s += sm[l];
        for (; j < L; ++j) s += KF_EXP(KF_X(j) - m);
      })";

constexpr const char* k_sum_pass_keep = R"(        for (j = 0; j + kf_lanes <= L; j += kf_lanes)
          for (int l = 0; l < kf_lanes; ++l) { float e = KF_EXP(KF_X(j + l) - m); sc[j + l] = e; sm[l] += e; }
        for (int l = 0; l < kf_lanes; ++l) s += sm[l];
        for (; j < L; ++j) { float e = KF_EXP(KF_X(j) - m); sc[j] = e; s += e; }
      })";

// Online softmax: running max and rescaled sum per lane in one read, then the lanes are combined.
constexpr const char* k_reduce_online = R"(      {
        float mx[kf_lanes], sm[kf_lanes];
        for (int l = 0; l < kf_lanes; ++l) { mx[l] = -INFINITY; sm[l] = 0.f; }
        int64_t j = 0;
        for (; j + kf_lanes <= L; j += kf_lanes)
          for (int l = 0; l < kf_lanes; ++l) {
            float v = KF_X(j + l);
            float mn = v > mx[l] ? v : mx[l];
            float a = mx[l] == -INFINITY ? 0.f : sm[l] * KF_EXP(mx[l] - mn);
            float b = v == -INFINITY ? 0.f : KF_EXP(v - mn);
            sm[l] = a + b;
            mx[l] = mn;
          }
        for (int l = 0; l < kf_lanes; ++l) m = mx[l] > m ? mx[l] : m;
        for (int l = 0; l < kf_lanes; ++l)
          if (mx[l] != -INFINITY) s += sm[l] * KF_EXP(mx[l] - m);
        for (; j < L; ++j) {
          float v = KF_X(j);
          float mn = v > m ? v : m;
          s = (m == -INFINITY ? 0.f : s * KF_EXP(m - mn)) + (v == -INFINITY ? 0.f : KF_EXP(v - mn));
          m = mn;
        }
      })";

constexpr const char* k_write_kept = R"(      {
        const float inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j) orow[j] = $STORE_OUT$(kf_epi(sc[j] * inv));
      })";

constexpr const char* k_write_plain = R"(      if ($LOG$) {
        // (x - m) - log s: rounding m + log s to float would lose log s next to a large m.
        const float ls = logf(s);
        for (int64_t j = 0; j < L; ++j) orow[j] = $STORE_OUT$(kf_epi((KF_X(j) - m) - ls));
      } else {
        const float inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j) orow[j] = $STORE_OUT$(kf_epi(KF_EXP(KF_X(j) - m) * inv));
      })";

// Top-k: the row's results go to scratch, then an insertion into the k best (ties: the lower index first).
constexpr const char* k_write_topk = R"(      {
        const float ls = logf(s), inv = 1.f / s;
        for (int64_t j = 0; j < L; ++j) sc[j] = kf_epi($LOG$ ? (KF_X(j) - m) - ls : $EXP_AT_J$ * inv);
        int n = 0;
        for (int64_t j = 0; j < L; ++j) {
          float v = sc[j];
          if (n == kf_k && !kf_gt(v, tv[kf_k - 1])) continue;
          int p = n < kf_k ? n++ : kf_k - 1;
          while (p > 0 && kf_gt(v, tv[p - 1])) { tv[p] = tv[p - 1]; ti[p] = ti[p - 1]; --p; }
          tv[p] = v;
          ti[p] = j;
        }
        for (int q = 0; q < kf_k; ++q) orow[q] = $STORE_OUT$(tv[q]);
        char* ib = (char*)out[1].data;
        const int64_t ioff = kf_row_off(&out[1], idx, R), is = out[1].stride[R - 1];
        for (int q = 0; q < kf_k; ++q) {
          if (out[1].dtype == KF_INT64) ((int64_t*)ib)[ioff + q * is] = ti[q];
          else ((int32_t*)ib)[ioff + q * is] = (int32_t)ti[q];
        }
      })";

class row_softmax_cpu final : public family {
 public:
  std::string name() const override { return "row_softmax_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  int version() const override { return 1; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_softmax(spec, why_not);
    if (!g) return false;
    for (auto& in : spec.inputs)
      if (in.type == dtype::float64 || !is_floating(in.type)) {
        if (why_not) *why_not = fmt::format("input {} is {}: the cpu softmax takes float32/16 and bfloat16", in.name, dtype_name(in.type));
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
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    bool heavy = false, log = false;
    if (auto g = match_softmax(spec, nullptr)) {
      for (auto& st : g->prologue) heavy = heavy || st.what == elementwise_step::kind::softcap;
      log = g->log;
    }
    return {{"threads", "all"},  {"schedule", "static"}, {"rows_per_chunk", "16"}, {"vector_width", "8"},
            {"unroll", "1"},     {"passes", "two"},      {"cache_row", heavy ? "1" : "0"},
            {"math", "poly"},    {"exp_once", log ? "0" : "1"}};
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not) || !covers(spec, why_not)) return false;
    if (knob_int(v, "vector_width") * knob_int(v, "unroll") > 32) {
      if (why_not) *why_not = "vector_width x unroll above 32 accumulators spills registers";
      return false;
    }
    return true;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override;
};

std::string row_softmax_cpu::emit(const workload_spec& spec, const knob_values& v) const {
  auto g = match_softmax(spec, nullptr);
  KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
  std::string mask_types, mask_params, mask_args, mask_rows, mask_indexes, mask_checks, prologue;
  int nm = 0;
  for (auto& st : g->prologue) {
    std::string line;
    switch (st.what) {
      case elementwise_step::kind::scale: line = fmt::format("v = v * {};", cpu_emit::float_literal(st.value)); break;
      case elementwise_step::kind::softcap:
        line = fmt::format("v = KF_TANH(v * {}) * {};", cpu_emit::float_literal(1.0 / st.value),
                           cpu_emit::float_literal(st.value));
        break;
      case elementwise_step::kind::cast: break;
      case elementwise_step::kind::add_mask: {
        auto mt = spec.find_input(st.mask)->type;
        int mi = input_index(spec, st.mask);
        mask_types += fmt::format("typedef {} kf_m{}_t;\n", cpu_emit::storage_type(mt), nm);
        mask_params += fmt::format(", const kf_m{0}_t* m{0}, int64_t m{0}s", nm);
        mask_args += fmt::format("m{0}, m{0}s, ", nm);
        mask_rows += fmt::format(
            "      const kf_m{0}_t* m{0} = (const kf_m{0}_t*)in[{1}].data + kf_row_off(&in[{1}], idx, R);\n"
            "      const int64_t m{0}s = in[{1}].ndim > 0 && in[{1}].shape[in[{1}].ndim - 1] > 1 ? 1 : 0;\n",
            nm, mi);
        mask_indexes += fmt::format("{}, ", mi);
        mask_checks += fmt::format("  if (in[{}].dtype != {}) return 1;\n", mi, static_cast<int>(mt));
        line = fmt::format("v = v + {};", cpu_emit::load(mt, fmt::format("m{0}[j * m{0}s]", nm)));
        ++nm;
        break;
      }
    }
    if (!line.empty()) prologue += "  " + line + "\n";
    if (st.to == dtype::float16 || st.to == dtype::bfloat16)
      prologue += "  v = " + cpu_emit::round_through(st.to, "v") + ";\n";
  }
  std::string epi = cpu_emit::round_through(g->softmax_type, "v");
  for (auto t : g->epilogue_casts) epi = cpu_emit::round_through(t, epi);
  bool cache = v.at("cache_row") == "1";
  bool keep = v.at("exp_once") == "1" && v.at("passes") == "two" && !g->log;  // else there is nothing to keep
  std::string cache_code =
      cache ? fmt::format("      for (int64_t j = 0; j < L; ++j) sc[j] = kf_pro(xr, {}j);\n#define KF_X(j) sc[j]", mask_args)
            : fmt::format("#define KF_X(j) kf_pro(xr, {}j)", mask_args);
  std::map<std::string, std::string> t = {
      {"IN_T", cpu_emit::storage_type(g->in_type)},
      {"OUT_T", cpu_emit::storage_type(g->out_type)},
      {"MASK_TYPES", mask_types},
      {"LANES", std::to_string(knob_int(v, "vector_width") * knob_int(v, "unroll"))},
      {"TOPK", std::to_string(g->topk)},
      {"MASK_PARAMS", mask_params},
      {"LOAD_X", cpu_emit::load(g->in_type, "x[j]")},
      {"PROLOGUE", prologue},
      {"EPILOGUE", epi},
      {"N_INPUTS", std::to_string(spec.inputs.size())},
      {"N_OUTPUTS", g->topk ? "2" : "1"},
      {"XI", std::to_string(input_index(spec, g->input))},
      {"RANK", std::to_string(g->rank)},
      {"X_DT", std::to_string(static_cast<int>(g->in_type))},
      {"OUT_DT", std::to_string(static_cast<int>(g->out_type))},
      {"MASK_INDEXES", mask_indexes},
      {"MASK_DTYPE_CHECKS", mask_checks},
      {"THREADS", cpu_emit::num_threads_clause(v.at("threads"))},
      {"SCRATCH", cache || keep || g->topk ? "L" : "0"},
      {"SCHEDULE", v.at("schedule")},
      {"CHUNK", v.at("rows_per_chunk")},
      {"MASK_ROWS", mask_rows},
      {"CACHE", cache_code},
      {"REDUCE", v.at("passes") == "online" ? std::string(k_reduce_online)
                                             : std::string(k_max_pass) + (keep ? k_sum_pass_keep : k_sum_pass)},
      {"WRITE", cpu_emit::subst(g->topk ? k_write_topk : keep ? k_write_kept : k_write_plain,
                                {{"LOG", g->log ? "true" : "false"}, {"STORE_OUT", cpu_emit::store_fn(g->out_type)},
                                 {"EXP_AT_J", keep ? "sc[j]" : "KF_EXP(KF_X(j) - m)"}})},
  };
  std::string body = cpu_emit::subst(k_kernel, t);
  // The row macro is defined inside the loop; undefine it so nothing leaks past the kernel.
  body += "#undef KF_X\n";
  return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude() + cpu_emit::math_macros(v.at("math")) + body;
}

}  // namespace

std::unique_ptr<family> make_row_softmax_cpu() { return std::make_unique<row_softmax_cpu>(); }

}  // namespace kf
