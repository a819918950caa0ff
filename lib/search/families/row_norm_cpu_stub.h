// row_norm_cpu_stub.h: typical values of what row_norm_cpu.cpp emits before its fixed code, so that row_norm_cpu.h
// reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included only where
// KF_EMITTED is not defined; kforge never emits it. Here: h = x + r; y = rms_norm(h) * w in bfloat16 over [T, D],
// returning y and h, as the family emits it by default (its prologue and epilogue, kf_pro and kf_epi, come after
// row_norm_cpu.h; read on its own, that file ends with this spec's). A constant or function the family adds comes
// here too.
#pragma once
#include "cpu_prelude.h"
#define KF_FAMILY_STUB  // cpu_elementwise.h, included after this stub, takes these values

#define KF_NUM_THREADS
#define KF_SCHEDULE static

constexpr bool kf_math_poly = true;      // exp, tanh, erfc: the polynomials (true) or libm's
constexpr bool kf_parallel = true;       // false: one thread, no OpenMP region
constexpr int kf_lanes = 32;             // float accumulators per reduction (SIMD lanes)
constexpr int64_t kf_rows_per_task = 4;  // rows per OpenMP task
constexpr bool kf_cache_row = false;     // the norm's input staged as floats between the row's reads
constexpr bool kf_layer = false;         // LayerNorm (mean, then squared deviations); else RMSNorm (mean square)
constexpr double kf_eps = 9.9999999999999995e-07;
constexpr int kf_n_inputs = 3, kf_rank = 2, kf_norm_dims = 1;
constexpr int kf_n_outputs = 2, kf_y_output = 0, kf_h_output = 1;  // kf_h_output -1: the norm's input is not returned
constexpr int kf_in_dtype = KF_BFLOAT16, kf_out_dtype = KF_BFLOAT16;  // the norm's input (h) and the result
constexpr int kf_w_input = 2, kf_w_dtype = KF_BFLOAT16, kf_b_input = -1, kf_b_dtype = KF_FLOAT32;  // -1: none
constexpr bool kf_has_prologue = true;      // ops before the norm; else its input is operand 0 as stored
constexpr int kf_n_opnd = 2, kf_n_pro = 2;  // the operands: the first op's input, then each op's tensor operand;
                                            // [0, kf_n_pro) are the prologue's
constexpr int kf_opnd_input[kf_n_opnd] = {0, 1};
constexpr int kf_opnd_dtype[kf_n_opnd] = {KF_BFLOAT16, KF_BFLOAT16};
