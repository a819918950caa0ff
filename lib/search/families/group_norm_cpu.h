// group_norm_cpu.h: the fixed code of group_norm_cpu, emitted after the variant's part (group_norm_cpu.cpp: its types,
// constants and knob-selected macros, the load with the fused casts kf_load_x, the affine's kf_w and kf_b, the fused
// activation kf_act and the store kf_store). A "unit" is what is normalized together (a sample's group, or a row);
// units are OpenMP tasks. Each unit is read as segments of contiguous elements (channels of a group in NCHW, pixels in
// channels_last, one row otherwise).
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees typical values of
// what the family emits before it; kforge emits it without these lines.
#include "group_norm_cpu_stub.h"
#endif  // KF_EMITTED

// Elements of a unit, as the norm sees them: straight from x, or from the staged float copy.
struct kf_src_x {
  const kf_in_t* p;
  float operator()(int64_t i) const { return kf_load_x(p, i); }
};
struct kf_src_f {
  const float* p;
  float operator()(int64_t i) const { return p[i]; }
};

// One read of nseg segments of len elements (segment q, element k at q*ss + k*es) with kf_lanes accumulators a[l] and
// c[l] per segment (a contiguous segment in lanes, the rest in lane 0): step(a, c, l, v) for each element v, then
// fold(a, c, l) for each lane.
template <class S, class Step, class Fold>
static inline void kf_lanes_loop(S src, int64_t nseg, int64_t len, int64_t ss, int64_t es, Step step, Fold fold) {
  for (int64_t q = 0; q < nseg; ++q) {
    float a[kf_lanes], c[kf_lanes];
    for (int l = 0; l < kf_lanes; ++l) {
      a[l] = 0.f;
      c[l] = 0.f;
    }
    const int64_t o = q * ss;
    int64_t k = 0;
    if (es == 1)
      for (; k + kf_lanes <= len; k += kf_lanes)
        for (int l = 0; l < kf_lanes; ++l) step(a, c, l, src(o + k + l));
    for (; k < len; ++k) step(a, c, 0, src(o + k * es));
    for (int l = 0; l < kf_lanes; ++l) fold(a, c, l);
  }
}

// Mean and reciprocal standard deviation of nseg segments of len elements. Sums are of v - sh, sh the unit's first
// element (close to the mean in practice): a unit of one value sums to exactly 0, so its mean is exact and x - mean is
// 0, as eager has it (its 1/sqrt(eps) would magnify a mean off by an ulp); the variance does not change with the shift.
template <class S>
static void kf_stats(S src, int64_t nseg, int64_t len, int64_t ss, int64_t es, float* mean, float* rstd) {
  const double n = (double)nseg * (double)len;
  double s1 = 0, s2 = 0;
  const float sh = src(0);
  (void)sh;
  if constexpr (kf_stats_kind == kf_stats_rms) {
    // rms_norm: the sum of squares alone.
    kf_lanes_loop(
        src, nseg, len, ss, es, [](float*, float* c, int l, float v) { c[l] += v * v; },
        [&](const float*, const float* c, int l) { s2 += c[l]; });
    *mean = 0.f;
    *rstd = (float)(1.0 / sqrt(s2 / n + kf_eps));
  } else if constexpr (kf_stats_kind == kf_stats_one_pass) {
    // The sum and the sum of squares in one read.
    kf_lanes_loop(
        src, nseg, len, ss, es,
        [&](float* a, float* c, int l, float v) {
          const float d = v - sh;
          a[l] += d;
          c[l] += d * d;
        },
        [&](const float* a, const float* c, int l) {
          s1 += a[l];
          s2 += c[l];
        });
    const double mu = s1 / n, var = s2 / n - mu * mu;
    *mean = (float)(sh + mu);
    *rstd = (float)(1.0 / sqrt((var > 0 ? var : 0) + kf_eps));
  } else {
    // Two reads: the mean, then the squared distances from it.
    kf_lanes_loop(
        src, nseg, len, ss, es, [&](float* a, float*, int l, float v) { a[l] += v - sh; },
        [&](const float* a, const float*, int l) { s1 += a[l]; });
    const float mu = (float)(sh + s1 / n);
    kf_lanes_loop(
        src, nseg, len, ss, es, [&](float*, float* c, int l, float v) { c[l] += (v - mu) * (v - mu); },
        [&](const float*, const float* c, int l) { s2 += c[l]; });
    *mean = mu;
    *rstd = (float)(1.0 / sqrt(s2 / n + kf_eps));
  }
}

template <class S>
static void kf_apply(S src, kf_out_t* o, int64_t nseg, int64_t len, int64_t ss, int64_t es, int64_t oss, int64_t oes,
                     const kf_w_t* w, int64_t ws, const kf_b_t* b, int64_t bs, int64_t wbase, bool per_seg, float mean,
                     float rstd) {
  for (int64_t q = 0; q < nseg; ++q) {
    const int64_t xo = q * ss, oo = q * oss;
    if (per_seg) {
      const float wq = kf_w(w, ws, wbase + q), bq = kf_b(b, bs, wbase + q);
      if (es == 1 && oes == 1) {
        for (int64_t k = 0; k < len; ++k) o[oo + k] = kf_store(kf_act((src(xo + k) - mean) * rstd * wq + bq));
      } else {
        for (int64_t k = 0; k < len; ++k)
          o[oo + k * oes] = kf_store(kf_act((src(xo + k * es) - mean) * rstd * wq + bq));
      }
    } else {
      for (int64_t k = 0; k < len; ++k)
        o[oo + k * oes] =
            kf_store(kf_act((src(xo + k * es) - mean) * rstd * kf_w(w, ws, wbase + k) + kf_b(b, bs, wbase + k)));
    }
  }
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != kf_n_inputs || n_out != 1) return 1;
  const kf_tensor* x = &in[kf_x_input];
  kf_tensor* y = &out[0];
  const int R = kf_rank;
  if (x->dtype != kf_x_dtype || x->ndim != R || y->dtype != kf_out_dtype || y->ndim != R) return 1;
  for (int i = 0; i < R; ++i)
    if (y->shape[i] != x->shape[i]) return 1;
  // Weight and bias, each read as one folded dim; wn: the weight's element count (the bias's without a weight).
  const kf_w_t* w = 0;
  const kf_b_t* b = 0;
  int64_t ws = 0, bs = 0, wn = 0;
  if constexpr (kf_w_input >= 0) {
    if (in[kf_w_input].dtype != kf_w_dtype) return 1;
    w = (const kf_w_t*)in[kf_w_input].data;
    if (!kf_fold(&in[kf_w_input], 0, &ws)) return 2;
    wn = 1;
    for (int i = 0; i < in[kf_w_input].ndim; ++i) wn *= in[kf_w_input].shape[i];
  }
  if constexpr (kf_b_input >= 0) {
    if (in[kf_b_input].dtype != kf_b_dtype) return 1;
    b = (const kf_b_t*)in[kf_b_input].data;
    if (!kf_fold(&in[kf_b_input], 0, &bs)) return 2;
    if constexpr (kf_w_input < 0) {
      wn = 1;
      for (int i = 0; i < in[kf_b_input].ndim; ++i) wn *= in[kf_b_input].shape[i];
    }
  }
  int64_t units, nseg, len, ss, es, oss, oes;
  bool per_seg;
  const int G = kf_groups, D = kf_norm_dims;
  int64_t C = 1, sN = 0, osN = 0, sC = 0, osC = 0, cpg = 1;
  if (kf_group) {
    C = x->shape[1];
    if (C % G != 0) return 1;
    cpg = C / G;
    int64_t P = 1, sP = 1, osP = 1;
    for (int i = 2; i < R; ++i) P *= x->shape[i];
    if (!kf_fold(x, 2, &sP) || !kf_fold(y, 2, &osP)) return 2;
    sN = x->stride[0];
    osN = y->stride[0];
    sC = x->stride[1];
    osC = y->stride[1];
    units = x->shape[0] * G;
    per_seg = !(sC == 1 && sP != 1 && P > 1);  // channels_last: a pixel's channels are contiguous
    if (per_seg) {
      nseg = cpg;
      len = P;
      ss = sC;
      es = sP;
      oss = osC;
      oes = osP;
    } else {
      nseg = P;
      len = cpg;
      ss = sP;
      es = sC;
      oss = osP;
      oes = osC;
    }
    if (wn && wn != C) return 1;
  } else {
    if (D > R) return 1;
    len = 1;
    for (int i = R - D; i < R; ++i) len *= x->shape[i];
    if (!kf_fold(x, R - D, &es) || !kf_fold(y, R - D, &oes)) return 2;
    if (wn && wn != len) return 1;
    units = 1;
    for (int i = 0; i < R - D; ++i) units *= x->shape[i];
    nseg = 1;
    ss = 0;
    oss = 0;
    per_seg = false;
  }
  if (units == 0 || nseg * len == 0) return 0;
#pragma omp parallel KF_NUM_THREADS
  {
    std::vector<float> sc(kf_cache_unit ? nseg * len : 0);
#pragma omp for schedule(KF_SCHEDULE, 1)
    for (int64_t u = 0; u < units; ++u) {
      int64_t xo = 0, yo = 0, wbase = 0;
      if (kf_group) {
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
      if (kf_cache_unit) {
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
