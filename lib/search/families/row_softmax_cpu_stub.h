// row_softmax_cpu_stub.h: typical values of what row_softmax_cpu.cpp emits before its fixed code, so that
// row_softmax_cpu.h reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a bfloat16 row softmax (softcap, a float mask, a
// scale) as the family emits it by default. A constant or function the family adds comes here too.
#pragma once
#include "cpu_prelude.h"

#define KF_EXP kf_exp_poly
#define KF_TANH kf_tanh_poly
#define KF_NUM_THREADS
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
typedef float kf_m0_t;
constexpr int kf_lanes = 8;  // vector_width x unroll accumulators
constexpr int kf_rows_per_chunk = 16;
constexpr int kf_split = 0;  // rows dealt whole to threads (0), split across the team at launch (1: auto) or always (2)
constexpr bool kf_online = false, kf_cache_row = true;
constexpr bool kf_keep_exp = true;  // exp_once with two passes and no log: the sum pass keeps the exponentials
constexpr bool kf_log = false;
constexpr int kf_k = 0;       // top-k (0: none)
constexpr int kf_row_op = 0;  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)
constexpr int kf_n_inputs = 2, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;
constexpr int kf_n_masks = 1;
constexpr int kf_mask_input[] = {1}, kf_mask_dtype[] = {KF_FLOAT32};
constexpr int64_t kf_mask_bytes[] = {sizeof(kf_m0_t)};

// x[j] after the fused prologue: what the reduction sees (mask k's row at mrow[k], its j-th value at
// j * mstep[k]).
static inline float kf_pro(const kf_in_t* x, const void* const* mrow, const int64_t* mstep, int64_t j) {
  float v = kf_ld_bf16(x[j]);
  v = KF_TANH(v * 0.02f) * 50.0f;
  v = kf_ld_bf16(kf_st_bf16(v));
  v = v + ((const kf_m0_t*)mrow[0])[j * mstep[0]];
  v = v * 0.5f;
  return v;
}

// A result on its way out: rounded through the softmax's type and each later cast (kf_epi), then stored as
// the output's type (kf_store).
static inline float kf_epi(float v) { return kf_ld_bf16(kf_st_bf16(v)); }
// kf_row_op != 0: what the top-k ranks, before the epilogue's rounding.
static inline float kf_map(float v) { return v; }
static inline kf_out_t kf_store(float v) { return kf_st_bf16(v); }
