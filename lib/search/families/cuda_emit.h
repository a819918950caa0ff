// Shared pieces of the CUDA families' emitted sources: the prelude every candidate opens with (type
// conversions, 16-byte vector access, warp / block / cluster reductions), C type names for spec dtypes,
// and the code of the elementwise steps (prologue, activation) the graph matchers describe.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "search/family.h"
#include "search/graph_match.h"
#include "spec/spec.h"

namespace kf::cuda_emit {

// The SMs of an H200: what the families' defaults size their grids for (launches read the real count at run time).
constexpr int k_reference_sms = 132;

// The CUDA C++ type that stores `t` ("__nv_bfloat16", "float", ...); asserts on non-float types.
std::string c_type(dtype t);
bool storable(dtype t);  // float32 / float16 / bfloat16 / float64

// The knob values a variant's source is emitted from: a knob the variant does not read (another strategy's,
// another layout's) is fixed to one value and left out of the header comment, so two variants that differ only
// there emit one source, which the template proposer does not propose twice.
struct emitted_knobs {
  knob_values shown, used;
  explicit emitted_knobs(const knob_values& v) : shown(v), used(v) {}
  void fix(const std::string& knob, const std::string& value) {
    used[knob] = value;
    shown.erase(knob);
  }
};

// The opening comment naming the family and knob values, then the includes and the common device helpers,
// opening `namespace kfk {`. The family's code follows and ends with cuda_emit::epilogue().
std::string prelude(const std::string& family_name, const knob_values& v, const std::string& graph_description);
// Closes the namespace and exports kf_launch (forwarding to kfk::launch).
std::string epilogue();

// A float literal that round-trips (e.g. "0.02f", "-inff" never: callers pass finite values).
std::string float_literal(double v);
// Statements applying the prologue steps to `float x`, one mask value per add_mask step in `m0`, `m1`...
// `tanh_fn` computes softcap's tanh: "tanh_exp" (one exp + one reciprocal, ~1e-7 absolute error, the cap
// folded into the constants) or "tanh_approx" (the tanh.approx.f32 instruction, ~5e-4 relative error).
std::string prologue_code(const std::vector<elementwise_step>& steps, const std::string& tanh_fn = "tanh_exp");
// A C expression rounding the float `x` to `t` and back (empty when `t` is float32 / float64).
std::string round_to(const std::string& x, dtype t);
// Statements rounding `float x` through each type of `chain` in order. `stored_as`: the type the store rounds
// to anyway, so a last rounding to it is left out (rounding twice is rounding once).
std::string rounding_code(std::vector<dtype> chain, std::optional<dtype> stored_as = std::nullopt);

// `knob=value` pairs of `v` restricted to `names`, joined by spaces (for the header comment).
std::string knob_summary(const knob_values& v, const std::vector<std::string>& names);

}  // namespace kf::cuda_emit
