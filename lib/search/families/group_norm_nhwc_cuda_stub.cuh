// group_norm_nhwc_cuda_stub.cuh: typical values of what group_norm_nhwc_cuda.cpp emits before its fixed code, so
// that group_norm_nhwc_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is
// included only where KF_EMITTED is not defined; kforge never emits it. Here: a float16 channels_last GroupNorm (32
// groups, float16 affine) with SiLU, as the family emits it. A constant or function the family adds comes here too.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __half;
using out_t = __half;
using w_t = __half;
using b_t = __half;
constexpr int NT = 256;
constexpr int k_vec = 8;
constexpr int k_blocks = 4;
constexpr int k_chunk = 64;
constexpr int k_fuse_kb = 96;
constexpr int k_ptile = 64;
constexpr bool k_twopass = false;
constexpr bool k_pdl = true;
constexpr int k_num_groups = 32;
constexpr float k_eps = 1e-05f;
constexpr bool k_has_w = true;
constexpr bool k_has_b = true;
constexpr int k_n_inputs = 3;
constexpr int k_x_input = 0;
constexpr int k_w_input = 1;
constexpr int k_b_input = 2;
constexpr size_t k_smem_limit = 227 * 1024;

// The casts before the norm, on values as loaded.
template <int V>
__device__ __forceinline__ void prologue_x(float* x) {}

// The fused activation and casts after the norm.
__device__ __forceinline__ float finalize(float x) {
  x = x * rcp_ftz(1.f + exp_ftz(-x));
  return x;
}

}  // namespace kfk
