// adaptive_pool_cuda_stub.cuh: typical values of what adaptive_pool_cuda.cpp emits before its fixed code, so that
// adaptive_pool_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is
// included only where KF_EMITTED is not defined; kforge never emits it. Here: a float16 pooling to 7 x 7 with the
// default knobs, as the family emits it.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __half;
using out_t = __half;
constexpr int k_threads = 256;
constexpr int k_cvec = 8;
constexpr int k_waves = 4;
constexpr bool k_pdl = true;
constexpr int k_stage_kb = 0;
constexpr int k_ptile = 32;
constexpr int64_t k_oh = 7, k_ow = 7;
constexpr bool k_fixed = false;
constexpr int64_t k_kh = 1, k_kw = 1, k_sh = 1, k_sw = 1, k_ph = 0, k_pw = 0;
constexpr bool k_ceil = false, k_incl_pad = true, k_max = false;
constexpr int64_t k_divisor = 0;
constexpr int k_n_inputs = 1;
constexpr int k_x_input = 0;

__device__ __forceinline__ float finalize(float x) { return x; }

}  // namespace kfk

#define KF_POOL_FN static __host__ __device__ __forceinline__
#include "pool_window.h"
