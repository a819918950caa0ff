// row_norm_cuda_stub.cuh: typical values of what row_norm_cuda.cpp emits before its fixed code, so that
// row_norm_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: h = x + r; y = rms_norm(h) * w in bfloat16,
// returning y and h, a block of 128 threads a row.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using out_t = __nv_bfloat16;
using h_t = __nv_bfloat16;
using w_t = __nv_bfloat16;
using b_t = float;
using t0 = __nv_bfloat16;
using t1 = __nv_bfloat16;
constexpr int STRAT = 1;
constexpr int TEAM = 32;
constexpr int BLOCK = 128;
constexpr bool FIT = true;
constexpr int CL = 2;
constexpr int V = 8;
constexpr int CHUNKS = 5;
constexpr int WAVES = 0;
constexpr bool WREGS = false;
constexpr int WLOAD = 0;
constexpr bool ONEPASS = false;
constexpr bool STREAM = false;
constexpr bool PDL = true;
constexpr bool k_layer = false;
constexpr bool k_has_w = true;
constexpr bool k_has_b = false;
constexpr float k_eps = 1e-6f;
constexpr bool k_write_h = true;
constexpr int k_y_output = 0;
constexpr int k_h_output = 1;
constexpr int KF_N_INPUTS = 3;
constexpr int KF_NORM_DIMS = 1;
constexpr int NOPND = 2;
constexpr int NPRO = 2;
constexpr int k_w_input = 2;
constexpr int k_b_input = -1;
constexpr int kf_operand_input[NOPND] = {0, 1};
constexpr int kf_operand_dtype[NOPND] = {KF_BFLOAT16, KF_BFLOAT16};
constexpr int kf_operand_align[NOPND] = {16, 16};

struct rn_args;
template <int VV>
__device__ __forceinline__ void kf_pro(const rn_args& a, int64_t row, int64_t col, float* x);
template <int VV>
__device__ __forceinline__ void kf_epi(const rn_args& a, int64_t row, int64_t col, float* y);

}  // namespace kfk
