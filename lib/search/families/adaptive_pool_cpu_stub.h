// adaptive_pool_cpu_stub.h: typical values of what adaptive_pool_cpu.cpp emits before its fixed code, so that
// adaptive_pool_cpu.h reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a float16 pooling to 7 x 7, as the family emits
// it by default.
#pragma once
#include "cpu_prelude.h"

#define KF_NUM_THREADS
#define KF_SCHEDULE static

typedef uint16_t kf_in_t;
typedef uint16_t kf_out_t;
typedef float kf_acc_t;
constexpr int kf_cblock = 256;  // channels per task (channels_last)
constexpr int kf_n_inputs = 1, kf_x_input = 0, kf_rank = 4;
constexpr int kf_x_dtype = KF_FLOAT16, kf_out_dtype = KF_FLOAT16;
constexpr int64_t kf_oh = 7, kf_ow = 7;
constexpr int kf_fixed = 0;  // avg_pool2d's windows (else adaptive)
constexpr int64_t kf_kh = 1, kf_kw = 1, kf_sh = 1, kf_sw = 1, kf_ph = 0, kf_pw = 0;
constexpr int kf_ceil = 0, kf_incl_pad = 1, kf_max = 0;
constexpr int64_t kf_divisor = 0;

// An element of x as a float (kf_load), the mean on its way out, rounded through x's type and each later
// cast (kf_fin), and stored as the output's type (kf_store).
static inline float kf_load(kf_in_t v) { return kf_ld_f16(v); }
static inline float kf_fin(float v) { return kf_round_f16(v); }
static inline kf_out_t kf_store(float v) { return kf_st_f16(v); }

#define KF_POOL_FN static inline
#include "pool_window.h"
