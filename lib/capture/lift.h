// Lifting a trace's aten operators to the spec's ops (lib/spec/ops.cpp): each operator a graph step can compute
// becomes a lifted_op (aten.native_layer_norm -> layer_norm, aten.mul.Tensor by a number -> scale, a view that
// merges dims -> flatten, ...), and a few operators that together compute one spec op become one (RMSNorm written
// out as pow, mean, add, rsqrt and mul; see rms_norm_match.h). The table is k_lift_rules in lift.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/trace.h"

namespace kf::capture {

// How a spec op takes part in a pattern: elementwise steps chain freely, a pattern holds at most one reduction
// (a kernel family fuses elementwise steps around one), and a view (flatten, or "alias": an operator that changes
// no value, which is no spec op and folds into the step before it) only continues a pattern.
enum class op_role { elementwise, reduction, view };
op_role role_of(const std::string& spec_op);

struct lifted_op {
  std::string op;                                          // the spec op: "rms_norm", "scale", "add", ...
  nlohmann::json args = nlohmann::json::object();          // its arguments but the tensors, as a spec writes them
  int64_t input = -1;                                      // the value it reads as its input
  std::vector<std::pair<std::string, int64_t>> tensors;    // its tensor arguments: ("other", value), ("weight", ...)
  std::vector<int64_t> outputs;                            // its results; outputs[0] is what a next step reads
  std::vector<size_t> covers;                              // the trace operators it stands for, in trace order
  bool commutative = false;                                // add, mul: the input and `other` may swap

  int64_t output() const { return outputs.at(0); }
  size_t first() const { return covers.front(); }
  size_t last() const { return covers.back(); }
};

// Every operator of `t` that a spec op can compute, lifted, in trace order (by first operator). An operator that
// is part of no lifted op is one no spec expresses (a matmul, a convolution, an embedding) or whose arguments a
// spec cannot hold (a dtype outside the spec's, a 0-d tensor, add with alpha).
std::vector<lifted_op> lift(const trace& t);

// Helpers shared by the lifting rules.
// The value of an encoded tensor argument whose dtype a spec holds and which has 1 to 8 dims; nullopt otherwise.
std::optional<int64_t> spec_tensor(const trace& t, const nlohmann::json& arg);
// The one operator that reads `value`, when exactly one does and the model does not return it.
std::optional<size_t> only_consumer(const trace& t, int64_t value);
// A norm's eps as its kernels read it, in float32 (F.rms_norm's 1e-5 arrives as 9.99999974737875e-06, a
// hand-written RMSNorm's as 1e-05: one pattern).
double norm_eps(double eps);
// The dtype an aten._to_copy converts to, when it changes nothing else (no device, layout or memory format).
std::optional<std::string> cast_dtype(const trace& t, const traced_op& op);

}  // namespace kf::capture
