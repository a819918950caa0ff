// pointwise_cuda_stub.cuh: typical values of what pointwise_cuda.cpp emits before its fixed code, so that
// pointwise_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: silu(gate) * up in bfloat16 with the defaults.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using out_t = __nv_bfloat16;
using t0 = __nv_bfloat16;
using t1 = __nv_bfloat16;
constexpr int V = 8;
constexpr int LOADS = 2;
constexpr int BLOCK = 256;
constexpr int WAVES = 0;
constexpr bool STREAM = false;
constexpr bool PDL = true;
constexpr bool SPREAD = true;
#define KF_PW_MINB 1
constexpr int NOPND = 2;
constexpr int KF_N_INPUTS = 2;
constexpr int KF_OUT_RANK = 2;
constexpr int kf_operand_input[NOPND] = {0, 1};
constexpr int kf_operand_dtype[NOPND] = {KF_BFLOAT16, KF_BFLOAT16};
constexpr int kf_operand_align[NOPND] = {16, 16};

struct pw_args;
struct pw_raw {
  packed<t0, V> r0;
  packed<t1, V> r1;
};
__device__ __forceinline__ void kf_vec_load(const pw_args& a, int64_t i, pw_raw& r);
__device__ __forceinline__ void kf_vec_math(const pw_raw& r, float* y);
__device__ __forceinline__ float kf_one(const pw_args& a, int64_t i);

}  // namespace kfk
