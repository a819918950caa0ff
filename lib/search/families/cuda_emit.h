// Shared pieces of the CUDA families' emitted sources: the order of a kernel's parts and the prelude every kernel
// opens with (cuda_prelude.cuh: type conversions, 16-byte vector access, warp / block / cluster reductions), C type
// names for spec dtypes, and the code of the elementwise steps (prologue, activation) the graph matchers describe.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/family.h"
#include "search/graph_match.h"
#include "spec/spec.h"

namespace kf::cuda_emit {

// The SMs of an H200: what the families' defaults size their grids for (launches read the real count at run time).
constexpr int k_reference_sms = 132;

// The most floats of a row the families' defaults cache in one block's registers: 32 a thread at 1024 threads,
// whose registers cap at 64 a thread (65536 an SM); more spill, so longer rows go to a cluster or are streamed.
constexpr int64_t k_block_cached_floats = 32768;

// The CUDA C++ type that stores `t` ("__nv_bfloat16", "float", ...); asserts on non-float types.
std::string c_type(dtype t);
bool storable(dtype t);  // float32 / float16 / bfloat16 / float64

// A kernel is, in order: prelude() (its header, then cuda_prelude.cuh: includes and the device helpers),
// variant() (the variant's constants, types and generated functions), the family's fixed files (fixed_file), and
// epilogue(). Each part opens and closes its own `namespace kfk`.
std::string prelude(const family& f, const workload_spec& spec, const knob_values& v,
                    const std::string& graph_description);
// `code` in `namespace kfk`, under a "this variant" comment.
std::string variant(const std::string& code);
// A fixed file of the family, embedded at build time (embedded.h: "search/families/row_softmax_cuda.cuh").
std::string fixed_file(std::string_view path);
// Exports kf_launch (forwarding to kfk::launch).
std::string epilogue();

// The functions elementwise_emit's statements call (kf_exp, kf_tanh, kf_sigmoid, kf_gelu, kf_round, ...), in float:
// libm's, or (fast) the multi-function unit's exp2 and reciprocal.
std::string math_functions(bool fast);

// A float literal that round-trips ("0.02f"; an infinity is INFINITY or -INFINITY; NaN asserts).
std::string float_literal(double v);
// Statements applying the prologue steps to `float x`, one mask value per add_mask step in `m0`, `m1`...
// `tanh_fn` computes softcap's tanh: "tanh_exp" (one exp + one reciprocal, ~1e-7 absolute error, the cap
// folded into the constants) or "tanh_approx" (the tanh.approx.f32 instruction, ~5e-4 relative error).
std::string prologue_code(const std::vector<elementwise_step>& steps, const std::string& tanh_fn = "tanh_exp");
// A GroupNorm kernel's two generated functions: prologue_x<V>(float* x), the casts before the norm on values as
// loaded, and finalize(float x), the fused activation (exp and reciprocal one multi-function instruction each, the
// tanh GELU as x sigmoid(2u)) and the casts after the norm. group_norm_cuda and group_norm_nhwc_cuda emit both.
std::string norm_pre_and_finalize(const norm_graph& g);
// A C expression rounding the float `x` to `t` and back (empty when `t` is float32 / float64).
std::string round_to(const std::string& x, dtype t);
// Statements rounding `float x` through each type of `chain` in order. `stored_as`: the type the store rounds
// to anyway, so a last rounding to it is left out (rounding twice is rounding once).
std::string rounding_code(std::vector<dtype> chain, std::optional<dtype> stored_as = std::nullopt);

}  // namespace kf::cuda_emit
