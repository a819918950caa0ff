// group_norm_cpu_stub.h: typical values of what group_norm_cpu.cpp emits before its fixed code, so that
// group_norm_cpu.h reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a bfloat16 GroupNorm of 32 groups with a bfloat16
// weight and bias, then SiLU, as the family emits it by default. A constant or function the family adds comes here too.
#pragma once
#include "cpu_prelude.h"

#define KF_EXP kf_exp_poly
#define KF_TANH kf_tanh_poly
#define KF_NUM_THREADS
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
typedef uint16_t kf_w_t;
typedef uint16_t kf_b_t;
constexpr int kf_lanes = 8;  // vector_width x unroll accumulators
constexpr int kf_stats_two_pass = 0, kf_stats_one_pass = 1, kf_stats_rms = 2;
constexpr int kf_stats_kind = kf_stats_two_pass;
constexpr bool kf_cache_unit = true;
constexpr int kf_n_inputs = 3, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;
constexpr int kf_w_input = 1, kf_w_dtype = KF_BFLOAT16, kf_b_input = 2, kf_b_dtype = KF_BFLOAT16;  // -1: none
constexpr bool kf_group = true;  // group_norm: a unit is a sample's group; else the last kf_norm_dims dims
constexpr int kf_groups = 32, kf_norm_dims = 1;
constexpr double kf_eps = 9.9999999999999995e-07;

// x's element i as the norm sees it: loaded and rounded through the casts before the norm.
static inline float kf_load_x(const kf_in_t* p, int64_t i) {
  float v = kf_ld_bf16(p[i]);
  return v;
}

// The affine's weight and bias at channel (or element) i: 1 and 0 where the graph has none.
static inline float kf_w(const kf_w_t* w, int64_t ws, int64_t i) { return kf_ld_bf16(w[i * ws]); }
static inline float kf_b(const kf_b_t* b, int64_t bs, int64_t i) { return kf_ld_bf16(b[i * bs]); }

// A normalized value on its way out: through the norm's type, the activation and the casts after it
// (kf_act), then stored as the output's type (kf_store).
static inline float kf_act(float y) {
  return kf_ld_bf16(kf_st_bf16((kf_ld_bf16(kf_st_bf16(y))) / (1.f + KF_EXP(-(kf_ld_bf16(kf_st_bf16(y)))))));
}
static inline kf_out_t kf_store(float v) { return kf_st_bf16(v); }
