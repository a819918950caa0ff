// pool_cuda_stub.cuh: typical values of what pool_cuda.cpp emits before its fixed code, so that pool_cuda.cuh reads
// on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included only where KF_EMITTED is
// not defined; kforge never emits it. Here: an NCHW float16 global average pool with the default knobs, as the family
// emits it. A constant or function the family adds comes here too.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __half;
using out_t = __half;
constexpr int k_threads = 128;
constexpr int k_vec = 8;
constexpr int k_tpp = 2;
constexpr int k_clt = 32;
constexpr int k_small_threads = 128;
constexpr int k_small_tpp = 8;
constexpr int k_small_direct = 0;
constexpr int k_small_clt = 2;
constexpr int k_small_cl_loop = 0;
constexpr int k_small_cl_warp = 0;
constexpr int k_flat_k = 4;
constexpr bool k_pdl = true;
constexpr int k_n_inputs = 1;
constexpr int k_x_input = 0;

__device__ __forceinline__ float finalize(float x) { return x; }

}  // namespace kfk
