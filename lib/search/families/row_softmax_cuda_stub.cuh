// row_softmax_cuda_stub.cuh: typical values of what row_softmax_cuda.cpp emits before its fixed code, so that
// row_softmax_cuda.cuh reads on its own (an editor, clang-format, tests/search/family_sources_test.cpp). It is included
// only where KF_EMITTED is not defined; kforge never emits it. Here: a bfloat16 row softmax (softcap, a float mask, a
// scale) in blocks of 256 threads, as the family emits it. A constant or function the family adds comes here too.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __nv_bfloat16;
using out_t = __nv_bfloat16;
using cache_t = float;  // the prologue computes in float (a softcap, a scale)
using mask0_t = float;
constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_grid = 3;
constexpr int k_strategy = s_block;
constexpr int NT = 256;
constexpr int k_vec = 8;
constexpr int k_chunks = 2;
constexpr int k_cluster = 8;
constexpr int k_split = 0;  // 0: auto
constexpr int k_unroll = 1;
constexpr bool k_online = false;
constexpr bool k_cache_smem = false;
constexpr bool k_stream_store = false;
constexpr bool k_log = false;
constexpr int k_topk = 0;
constexpr int k_row_op = 0;  // 0: softmax; 1: sigmoid, 2: the values themselves (a top-k of them)
constexpr bool k_fit = true;
constexpr bool k_head = false;
constexpr bool k_ragged = true;
constexpr bool k_pdl = true;
constexpr int k_team = 32;
constexpr int k_waves = 0;
constexpr size_t k_smem_limit = 227 * 1024;
constexpr int k_n_inputs = 2;
constexpr int k_x_input = 0;
constexpr int k_n_masks = 1;
constexpr int k_mask_input[] = {1};
constexpr int k_mask_dtype[] = {dtype_code<mask0_t>::value};
constexpr int k_mask_bytes[] = {(int)sizeof(mask0_t)};

__device__ __forceinline__ float prologue(float x, float m0) {
  x = softcap_exp(x, 0.0577078016f, 50.0f);
  x = x + m0;
  x = x * 0.5f;
  return x;
}

template <int V, typename A>
__device__ __forceinline__ void load_row_vec(const A& a, const int64_t* moff, int64_t base, int64_t i, float* x,
                                             bool mvec = true) {
  (void)moff;
  (void)mvec;
  load_vec<in_t, V>(a.x + base + i, x);
  float mv0[V];
  const mask0_t* m0 = static_cast<const mask0_t*>(a.mask[0]) + moff[0];
  if (mvec) {
    load_vec<mask0_t, V>(m0 + i * a.mask_col_stride[0], mv0);
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) load_vec<mask0_t, 1>(m0 + (i + v) * a.mask_col_stride[0], mv0 + v);
  }
#pragma unroll
  for (int v = 0; v < V; ++v) x[v] = prologue(x[v], mv0[v]);
}

__device__ __forceinline__ float finalize(float x) { return x; }

}  // namespace kfk
