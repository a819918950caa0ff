// col_softmax_cuda_stub.cuh: typical values of what col_softmax_cuda.cpp emits before its fixed code, so that
// col_softmax_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a float16 softmax over dim 1 of [B, C, H, W]
// (a segmentation head's classes) with a scale, float32 out, as the family emits it. A constant or function the
// family adds comes here too.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __half;
using out_t = float;
constexpr int NT = 256;
constexpr int k_ty = 16;
constexpr int k_vec = 8;
constexpr int k_chunks = 8;
constexpr int k_cache = 1;  // m_stream 0, m_regs 1, m_smem 2 (col_softmax_cuda.cuh)
constexpr size_t k_smem_limit = 227 * 1024;
constexpr bool k_online = false;
constexpr bool k_log = false;
constexpr bool k_pdl = true;
constexpr int k_rank = 4;
constexpr int k_dim = 1;
constexpr int k_n_inputs = 1;
constexpr int k_x_input = 0;

__device__ __forceinline__ float prologue(float x) {
  x = x * 0.5f;
  return x;
}

__device__ __forceinline__ float finalize(float x) { return x; }

}  // namespace kfk
