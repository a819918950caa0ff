// group_norm_cpu: GroupNorm / LayerNorm / RMSNorm on the cpu with a fused SiLU / GELU and casts. A "unit" is
// what is normalized together (a sample's group, or a row); units are OpenMP tasks. Each unit is read as
// segments of contiguous elements (channels of a group in NCHW, pixels in channels_last, one row otherwise).
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

constexpr const char* k_kernel = R"(
typedef $IN_T$ kf_in_t;
typedef $OUT_T$ kf_out_t;
typedef $W_T$ kf_w_t;
typedef $B_T$ kf_b_t;
enum { kf_lanes = $LANES$ };

// Elements of a unit, as the norm sees them: straight from x, or from the staged float copy.
struct kf_src_x {
  const kf_in_t* p;
  float operator()(int64_t i) const { float v = $LOAD_X$; return $PRO_CASTS$; }
};
struct kf_src_f {
  const float* p;
  float operator()(int64_t i) const { return p[i]; }
};

static inline float kf_act(float y) { return $ACT$; }

// Mean and reciprocal standard deviation of nseg segments of len elements (segment q, element k at q*ss + k*es).
// Sums are of v - sh, sh the unit's first element (close to the mean in practice): a unit of one value sums to
// exactly 0, so its mean is exact and x - mean is 0, as eager has it (its 1/sqrt(eps) would magnify a mean off by
// an ulp); the variance does not change with the shift.
template <class S>
static void kf_stats(S src, int64_t nseg, int64_t len, int64_t ss, int64_t es, float* mean, float* rstd) {
  const double n = (double)nseg * (double)len;
  double s1 = 0, s2 = 0;
  const float sh = src(0);
  (void)sh;
$STATS$
}

template <class S>
static void kf_apply(S src, kf_out_t* o, int64_t nseg, int64_t len, int64_t ss, int64_t es, int64_t oss, int64_t oes,
                     const kf_w_t* w, int64_t ws, const kf_b_t* b, int64_t bs, int64_t wbase, bool per_seg, float mean,
                     float rstd) {
  (void)w; (void)ws; (void)b; (void)bs;
  for (int64_t q = 0; q < nseg; ++q) {
    const int64_t xo = q * ss, oo = q * oss;
    if (per_seg) {
      const float wq = $W$(wbase + q), bq = $B$(wbase + q);
      if (es == 1 && oes == 1) {
        for (int64_t k = 0; k < len; ++k) o[oo + k] = $STORE$(kf_act((src(xo + k) - mean) * rstd * wq + bq));
      } else {
        for (int64_t k = 0; k < len; ++k) o[oo + k * oes] = $STORE$(kf_act((src(xo + k * es) - mean) * rstd * wq + bq));
      }
    } else {
      for (int64_t k = 0; k < len; ++k)
        o[oo + k * oes] = $STORE$(kf_act((src(xo + k * es) - mean) * rstd * $W$(wbase + k) + $B$(wbase + k)));
    }
  }
}

// Folds dims [from, ndim) of t into one of stride *stride (size-1 dims ignored); false when they do not fold.
static bool kf_fold(const kf_tensor* t, int from, int64_t* stride) {
  int64_t expect = -1, first = 1;
  for (int i = t->ndim - 1; i >= from; --i) {
    if (t->shape[i] == 1) continue;
    if (expect < 0) first = t->stride[i];
    else if (t->stride[i] != expect) return false;
    expect = t->stride[i] * t->shape[i];
  }
  *stride = first;
  return true;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != $N_INPUTS$ || n_out != 1) return 1;
  const kf_tensor* x = &in[$XI$];
  kf_tensor* y = &out[0];
  const int R = $RANK$;
  if (x->dtype != $X_DT$ || x->ndim != R || y->dtype != $OUT_DT$ || y->ndim != R) return 1;
  for (int i = 0; i < R; ++i)
    if (y->shape[i] != x->shape[i]) return 1;
  const kf_w_t* w = 0;
  const kf_b_t* b = 0;
  int64_t ws = 0, bs = 0, wn = 0;
$AFFINE$
  int64_t units, nseg, len, ss, es, oss, oes, xs_unit = 0, os_unit = 0;
  bool per_seg;
  const int G = $GROUPS$, D = $NDIMS$;
  int64_t C = 1, sN = 0, osN = 0, sC = 0, osC = 0, cpg = 1;
  if ($IS_GROUP$) {
    C = x->shape[1];
    if (C % G != 0) return 1;
    cpg = C / G;
    int64_t P = 1, sP = 1, osP = 1;
    for (int i = 2; i < R; ++i) P *= x->shape[i];
    if (!kf_fold(x, 2, &sP) || !kf_fold(y, 2, &osP)) return 2;
    sN = x->stride[0]; osN = y->stride[0]; sC = x->stride[1]; osC = y->stride[1];
    units = x->shape[0] * G;
    per_seg = !(sC == 1 && sP != 1 && P > 1);  // channels_last: a pixel's channels are contiguous
    if (per_seg) { nseg = cpg; len = P; ss = sC; es = sP; oss = osC; oes = osP; }
    else { nseg = P; len = cpg; ss = sP; es = sC; oss = osP; oes = osC; }
    if (wn && wn != C) return 1;
  } else {
    if (D > R) return 1;
    len = 1;
    for (int i = R - D; i < R; ++i) len *= x->shape[i];
    if (!kf_fold(x, R - D, &es) || !kf_fold(y, R - D, &oes)) return 2;
    if (wn && wn != len) return 1;
    units = 1;
    for (int i = 0; i < R - D; ++i) units *= x->shape[i];
    nseg = 1; ss = 0; oss = 0; per_seg = false;
  }
  (void)xs_unit; (void)os_unit;
  if (units == 0 || nseg * len == 0) return 0;
#pragma omp parallel$THREADS$
  {
    std::vector<float> sc($CACHE$ ? nseg * len : 0);
#pragma omp for schedule($SCHEDULE$, 1)
    for (int64_t u = 0; u < units; ++u) {
      int64_t xo = 0, yo = 0, wbase = 0;
      if ($IS_GROUP$) {
        const int64_t n = u / G, g = u % G;
        xo = n * sN + g * cpg * sC;
        yo = n * osN + g * cpg * osC;
        wbase = g * cpg;
      } else {
        int64_t rest = u;
        for (int i = R - D - 1; i >= 0; --i) {
          const int64_t k = rest % x->shape[i];
          rest /= x->shape[i];
          xo += k * x->stride[i];
          yo += k * y->stride[i];
        }
      }
      kf_src_x sx{(const kf_in_t*)x->data + xo};
      kf_out_t* yb = (kf_out_t*)y->data + yo;
      float mean, rstd;
      if ($CACHE$) {
        for (int64_t q = 0; q < nseg; ++q)
          for (int64_t k = 0; k < len; ++k) sc[q * len + k] = sx(q * ss + k * es);
        kf_src_f sf{sc.data()};
        kf_stats(sf, nseg, len, len, 1, &mean, &rstd);
        kf_apply(sf, yb, nseg, len, len, 1, oss, oes, w, ws, b, bs, wbase, per_seg, mean, rstd);
      } else {
        kf_stats(sx, nseg, len, ss, es, &mean, &rstd);
        kf_apply(sx, yb, nseg, len, ss, es, oss, oes, w, ws, b, bs, wbase, per_seg, mean, rstd);
      }
    }
  }
  return 0;
}
)";

// One segment's lanes; BODY updates the accumulators a[l] / c[l] from v.
std::string lanes_loop(const std::string& decl, const std::string& body, const std::string& fold) {
  return cpu_emit::subst(R"(  for (int64_t q = 0; q < nseg; ++q) {
    float a[kf_lanes], c[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) { a[l] = 0.f; c[l] = 0.f; }
    const int64_t o = q * ss;
    int64_t k = 0;
    $DECL$
    if (es == 1)
      for (; k + kf_lanes <= len; k += kf_lanes)
        for (int l = 0; l < kf_lanes; ++l) { const float v = src(o + k + l); $BODY$ }
    for (; k < len; ++k) { const int l = 0; const float v = src(o + k * es); $BODY$ }
    for (int l = 0; l < kf_lanes; ++l) { $FOLD$ }
  }
)", {{"DECL", decl}, {"BODY", body}, {"FOLD", fold}});
}

std::string stats_code(const std::string& mode, norm_graph::kind kind, double eps) {
  std::string e = fmt::format("{:.17g}", eps);
  if (kind == norm_graph::kind::rms_norm)
    return lanes_loop("", "c[l] += v * v;", "s2 += c[l];") +
           fmt::format("  *mean = 0.f;\n  *rstd = (float)(1.0 / sqrt(s2 / n + {}));\n", e);
  if (mode == "one_pass")
    return lanes_loop("", "const float d = v - sh; a[l] += d; c[l] += d * d;", "s1 += a[l]; s2 += c[l];") +
           fmt::format("  const double mu = s1 / n, var = s2 / n - mu * mu;\n"
                       "  *mean = (float)(sh + mu);\n  *rstd = (float)(1.0 / sqrt((var > 0 ? var : 0) + {}));\n", e);
  return lanes_loop("", "a[l] += v - sh;", "s1 += a[l];") + "  const float mu = (float)(sh + s1 / n);\n" +
         lanes_loop("", "c[l] += (v - mu) * (v - mu);", "s2 += c[l];") +
         fmt::format("  *mean = mu;\n  *rstd = (float)(1.0 / sqrt(s2 / n + {}));\n", e);
}

class group_norm_cpu final : public family {
 public:
  std::string name() const override { return "group_norm_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  int version() const override { return 1; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    if (!match_norm(spec, why_not)) return false;
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
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    auto g = match_norm(spec, nullptr);
    bool rms = g && g->what == norm_graph::kind::rms_norm;
    return {{"threads", "all"}, {"schedule", "static"}, {"vector_width", "8"}, {"unroll", "1"},
            {"stats", rms ? "one_pass" : "two_pass"}, {"cache_unit", "1"}, {"math", "poly"}};
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

std::string group_norm_cpu::emit(const workload_spec& spec, const knob_values& v) const {
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
  // Weight and bias: typed loads when present, 1 and 0 when absent. Both are read as one folded dim.
  std::string affine;
  auto tensor_io = [&](const std::string& name, dtype t, const char* ptr, const char* stride, bool count) {
    if (name.empty()) return;
    int i = input_index(spec, name);
    affine += fmt::format(
        "  if (in[{0}].dtype != {1}) return 1;\n"
        "  {2} = (const kf_{2}_t*)in[{0}].data;\n"
        "  if (!kf_fold(&in[{0}], 0, &{3})) return 2;\n",
        i, static_cast<int>(t), ptr, stride);
    if (count) affine += fmt::format("  wn = 1;\n  for (int i = 0; i < in[{0}].ndim; ++i) wn *= in[{0}].shape[i];\n", i);
  };
  tensor_io(g->weight, g->weight_type, "w", "ws", true);
  tensor_io(g->bias, g->bias_type, "b", "bs", g->weight.empty());
  std::string wload = g->weight.empty() ? "1.f" : cpu_emit::load(g->weight_type, "w[(I) * ws]");
  std::string bload = g->bias.empty() ? "0.f" : cpu_emit::load(g->bias_type, "b[(I) * bs]");
  // The affine loads are written as macros so the apply loop stays one expression.
  std::string macros = fmt::format("#define KF_W(I) ({})\n#define KF_B(I) ({})\n", wload, bload);
  bool group = g->what == norm_graph::kind::group_norm;
  std::map<std::string, std::string> t = {
      {"IN_T", cpu_emit::storage_type(g->in_type)},
      {"OUT_T", cpu_emit::storage_type(g->out_type)},
      {"W_T", cpu_emit::storage_type(g->weight.empty() ? dtype::float32 : g->weight_type)},
      {"B_T", cpu_emit::storage_type(g->bias.empty() ? dtype::float32 : g->bias_type)},
      {"LANES", std::to_string(knob_int(v, "vector_width") * knob_int(v, "unroll"))},
      {"LOAD_X", cpu_emit::load(g->in_type, "p[i]")},
      {"PRO_CASTS", pro},
      {"ACT", act},
      {"STATS", stats_code(v.at("stats"), g->what, g->eps)},
      {"W", "KF_W"},
      {"B", "KF_B"},
      {"STORE", cpu_emit::store_fn(g->out_type)},
      {"N_INPUTS", std::to_string(spec.inputs.size())},
      {"XI", std::to_string(input_index(spec, g->input))},
      {"RANK", std::to_string(g->rank)},
      {"X_DT", std::to_string(static_cast<int>(g->in_type))},
      {"OUT_DT", std::to_string(static_cast<int>(g->out_type))},
      {"AFFINE", affine},
      {"GROUPS", std::to_string(g->num_groups)},
      {"NDIMS", std::to_string(g->normalized_dims)},
      {"IS_GROUP", group ? "true" : "false"},
      {"THREADS", cpu_emit::num_threads_clause(v.at("threads"))},
      {"CACHE", v.at("cache_unit") == "1" ? "true" : "false"},
      {"SCHEDULE", v.at("schedule")},
  };
  return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude() + cpu_emit::math_macros(v.at("math")) + macros + cpu_emit::subst(k_kernel, t);
}

}  // namespace

std::unique_ptr<family> make_group_norm_cpu() { return std::make_unique<group_norm_cpu>(); }

}  // namespace kf
