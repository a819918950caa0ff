// group_norm_cuda_stub.cuh: typical values of what group_norm_cuda.cpp emits before its fixed code, so that
// group_norm_cuda_rows.cuh and the files after it read on their own (an editor, clang-format,
// tests/search/family_sources_test.cpp). It is included only where KF_EMITTED is not defined; kforge never emits it.
// Here: a bfloat16 GroupNorm with SiLU, strategy=stream, as the family emits it. A constant or function the family
// adds comes here too.
#pragma once
#include "cuda_prelude.cuh"

namespace kfk {

using in_t = __nv_bfloat16;
using out_t = __nv_bfloat16;
using w_t = float;
using b_t = float;
constexpr int s_warp = 0, s_block = 1, s_cluster = 2, s_split = 3, s_team = 4, s_stream = 5, s_ring = 6;
constexpr int st_shifted = 0, st_sumsq = 1, st_twopass = 2;
constexpr int k_strategy = s_stream;
constexpr int k_stats = st_shifted;
constexpr int NT = 256;
constexpr int k_vec = 8;
constexpr int k_chunks = 8;
constexpr int k_cluster = 4;
constexpr int k_splits = 64;
constexpr bool k_reverse = true;
constexpr int k_team_kb = 96;
constexpr int k_seg_kb = 32;
constexpr int k_ring_kb = 192;
constexpr int k_ahead = 2;
constexpr int k_lag_mb = 0;
constexpr int k_sm_blocks = 0;
constexpr int pub_counter = 0, pub_tagged = 1;
constexpr int k_stages = 2;
constexpr int k_publish = pub_counter;
constexpr bool k_l2_hint = true;
constexpr int k_team_l2 = 50;
constexpr int k_unroll = 2;
constexpr bool k_stream_store = true;
constexpr bool k_fit = true;
constexpr bool k_group = true;
constexpr bool k_rms = false;
constexpr int k_num_groups = 8;
constexpr int k_normalized_dims = 1;
constexpr float k_eps = 1e-06f;
constexpr bool k_has_w = true;
constexpr bool k_has_b = true;
constexpr int k_n_inputs = 3;
constexpr int k_x_input = 0;
constexpr int k_w_input = 1;
constexpr int k_b_input = 2;
constexpr bool k_held_twopass = false;

// The casts before the norm, on values as loaded.
template <int V>
__device__ __forceinline__ void prologue_x(float* x) {}

// The fused activation and casts after the norm.
__device__ __forceinline__ float finalize(float x) {
  x = x * rcp_ftz(1.f + exp_ftz(-x));
  return x;
}

}  // namespace kfk
