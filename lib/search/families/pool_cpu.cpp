// pool_cpu: global average pooling (adaptive_avg_pool2d to 1x1, optional flatten and casts) on the cpu.
// NCHW reads each plane contiguously; channels_last sums a block of contiguous channels pixel by pixel.
#include <fmt/format.h>

#include "search/families/cpu_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

constexpr const char* k_kernel = R"(
typedef $IN_T$ kf_in_t;
typedef $OUT_T$ kf_out_t;
typedef $ACC_T$ kf_acc_t;
enum { kf_lanes = $LANES$, kf_cblock = $CBLOCK$ };

static inline float kf_fin(float v) { return $EPILOGUE$; }

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

// The offset of linear element i of t (row-major over its shape).
static inline int64_t kf_linear(const kf_tensor* t, int64_t i) {
  int64_t off = 0;
  for (int d = t->ndim - 1; d >= 0; --d) {
    off += (i % t->shape[d]) * t->stride[d];
    i /= t->shape[d];
  }
  return off;
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != $N_INPUTS$ || n_out != 1) return 1;
  const kf_tensor* x = &in[$XI$];
  kf_tensor* y = &out[0];
  const int R = $RANK$;
  if (x->dtype != $X_DT$ || x->ndim != R || y->dtype != $OUT_DT$) return 1;
  const int64_t N = R == 4 ? x->shape[0] : 1, C = x->shape[R - 3];
  const int64_t sN = R == 4 ? x->stride[0] : 0, sC = x->stride[R - 3];
  const int64_t P = x->shape[R - 2] * x->shape[R - 1];
  int64_t ycount = 1;
  for (int i = 0; i < y->ndim; ++i) ycount *= y->shape[i];
  if (ycount != N * C) return 1;
  if (P == 0) return 1;
  int64_t sP = 1;
  if (!kf_fold(x, R - 2, &sP)) return 2;
  const float inv = 1.f / (float)P;
  const kf_in_t* xd = (const kf_in_t*)x->data;
  kf_out_t* yd = (kf_out_t*)y->data;
  if (sC == 1 && sP != 1 && P > 1) {
    // channels_last: a pixel's channels are contiguous; each task sums one block of channels of one sample.
    const int64_t blocks = (C + kf_cblock - 1) / kf_cblock;
#pragma omp parallel for$THREADS$ schedule(static)
    for (int64_t t = 0; t < N * blocks; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * kf_cblock;
      const int64_t cn = C - c0 < kf_cblock ? C - c0 : kf_cblock;
      kf_acc_t acc[kf_cblock];
      for (int64_t c = 0; c < cn; ++c) acc[c] = 0;
      const kf_in_t* base = xd + n * sN + c0;
      for (int64_t p = 0; p < P; ++p) {
        const kf_in_t* px = base + p * sP;
        for (int64_t c = 0; c < cn; ++c) acc[c] += $LOAD$(px[c]);
      }
      for (int64_t c = 0; c < cn; ++c) yd[kf_linear(y, n * C + c0 + c)] = $STORE$(kf_fin((float)acc[c] * inv));
    }
    return 0;
  }
  // planes: each (n, c) plane is summed with kf_lanes accumulators.
#pragma omp parallel for$THREADS$ schedule($SCHEDULE$, $CHUNK$)
  for (int64_t t = 0; t < N * C; ++t) {
    const int64_t n = t / C, c = t % C;
    const kf_in_t* px = xd + n * sN + c * sC;
    kf_acc_t a[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) a[l] = 0;
    int64_t p = 0;
    if (sP == 1)
      for (; p + kf_lanes <= P; p += kf_lanes)
        for (int l = 0; l < kf_lanes; ++l) a[l] += $LOAD$(px[p + l]);
    for (; p < P; ++p) a[0] += $LOAD$(px[p * sP]);
    kf_acc_t s = 0;
    for (int l = 0; l < kf_lanes; ++l) s += a[l];
    yd[kf_linear(y, t)] = $STORE$(kf_fin((float)s * inv));
  }
  return 0;
}
)";

class pool_cpu final : public family {
 public:
  std::string name() const override { return "pool_cpu"; }
  device_kind device() const override { return device_kind::cpu; }
  int version() const override { return 1; }

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
    };
  }

  knob_values default_variant(const workload_spec&) const override {
    return {{"threads", "all"}, {"schedule", "static"}, {"planes_per_chunk", "32"},
            {"vector_width", "8"}, {"channel_block", "256"}, {"accum", "float"}};
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    auto g = match_pool(spec, nullptr);
    KF_ASSERT(g.has_value(), "emit on a spec the family does not cover");
    std::string epi = cpu_emit::round_through(g->in_type, "v");
    for (auto t : g->epilogue_casts) epi = cpu_emit::round_through(t, epi);
    std::string load = g->in_type == dtype::float32 ? "" : g->in_type == dtype::bfloat16 ? "kf_ld_bf16" : "kf_ld_f16";
    std::map<std::string, std::string> t = {
        {"IN_T", cpu_emit::storage_type(g->in_type)},
        {"OUT_T", cpu_emit::storage_type(g->out_type)},
        {"ACC_T", v.at("accum")},
        {"LANES", v.at("vector_width")},
        {"CBLOCK", v.at("channel_block")},
        {"EPILOGUE", epi},
        {"N_INPUTS", std::to_string(spec.inputs.size())},
        {"XI", std::to_string(input_index(spec, g->input))},
        {"RANK", std::to_string(g->rank)},
        {"X_DT", std::to_string(static_cast<int>(g->in_type))},
        {"OUT_DT", std::to_string(static_cast<int>(g->out_type))},
        {"THREADS", cpu_emit::num_threads_clause(v.at("threads"))},
        {"SCHEDULE", v.at("schedule")},
        {"CHUNK", v.at("planes_per_chunk")},
        {"LOAD", load},
        {"STORE", cpu_emit::store_fn(g->out_type)},
    };
    return cpu_emit::header(*this, spec, v, g->describe()) + cpu_emit::prelude() + cpu_emit::subst(k_kernel, t);
  }
};

}  // namespace

std::unique_ptr<family> make_pool_cpu() { return std::make_unique<pool_cpu>(); }

}  // namespace kf
