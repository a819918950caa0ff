// pointwise_cpu_stub.h: typical values of what pointwise_cpu.cpp emits before its fixed code, so that pointwise_cpu.h
// reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included only where
// KF_EMITTED is not defined; kforge never emits it. Here: silu(gate) * up in bfloat16 over [T, D], as the family
// emits it by default (its chain, kf_elem, comes after pointwise_cpu.h; read on its own, that file ends with this
// chain's). A constant or function the family adds comes here too.
#pragma once
#include "cpu_prelude.h"
#define KF_FAMILY_STUB  // cpu_elementwise.h, included after this stub, takes these values

#define KF_EXP kf_exp_poly
#define KF_TANH kf_tanh_poly
#define KF_NUM_THREADS
#define KF_SCHEDULE static

constexpr bool kf_math_poly = true;  // erfc: the polynomial (true) or libm's erfcf
constexpr int64_t kf_chunk = 16384;  // output elements per OpenMP task
constexpr bool kf_stage = false;     // float16 runs through float buffers (stage=1; no float16 here)
constexpr int kf_n_inputs = 2, kf_out_rank = 2, kf_out_dtype = KF_BFLOAT16;
constexpr int kf_n_opnd = 2;  // the chain's operands: the first op's input, then each binary op's tensor operand
constexpr int kf_opnd_input[kf_n_opnd] = {0, 1};
constexpr int kf_opnd_dtype[kf_n_opnd] = {KF_BFLOAT16, KF_BFLOAT16};
// The operands that may be constant along a run of the output (not the output's shape in some case of the spec),
// whose combinations get a vectorized loop; 0: every vectorized loop reads every operand linearly.
constexpr int kf_const_set = 0;
