// col_softmax_cpu_stub.h: typical values of what col_softmax_cpu.cpp emits before its fixed code, so that
// col_softmax_cpu.h reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a float16 softmax over dim 1 of [B, C, H, W] with
// a scale, float32 out, as the family emits it by default. A constant or function the family adds comes here too.
#pragma once
#include "cpu_prelude.h"

#define KF_EXP kf_exp_poly
#define KF_TANH kf_tanh_poly
#define KF_NUM_THREADS
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef float kf_out_t;
constexpr int kf_tile = 256;  // columns a task
constexpr bool kf_online = false, kf_log = false;
constexpr bool kf_stage = true;  // the tile's values staged as floats where n x tile fits kf_stage_floats
constexpr int kf_n_inputs = 1, kf_x_input = 0, kf_rank = 4, kf_dim = 1;
constexpr int kf_x_dtype = KF_FLOAT16, kf_out_dtype = KF_FLOAT32;

// A stored x value after the fused prologue: what the reduction sees.
static inline float kf_pro(kf_in_t x) {
  float v = kf_ld_f16(x);
  v = v * 0.5f;
  return v;
}

// A result on its way out: rounded through the softmax's type and each later cast (kf_epi), then stored as
// the output's type (kf_store).
static inline float kf_epi(float v) { return v; }
static inline kf_out_t kf_store(float v) { return v; }
