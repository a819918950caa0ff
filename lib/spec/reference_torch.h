// Inputs and the eager reference for a workload: seeded input generation (the same values for a seed on
// every device), the graph run with PyTorch eager semantics, and the float64 reference for verification.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "spec/spec.h"

namespace kf {

// The inputs of a case in the spec's order, generated on the CPU from `seed` (each input from its own
// stream, derived from the seed and its name) and moved to `device`; channels_last inputs have that layout.
std::vector<at::Tensor> make_inputs(const workload_spec& spec, const case_spec& c, uint64_t seed, const c10::Device& device);

// make_inputs, then the primary input changed as `kind` (adversarial.h) says. Throws user_error for an
// unknown kind; call only where adversarial_applies().
std::vector<at::Tensor> make_adversarial_inputs(const workload_spec& spec, const case_spec& c, const std::string& kind,
                                                uint64_t seed, const c10::Device& device);

// The graph under PyTorch eager semantics: the outputs exactly as eager computes them (dtypes, rounding,
// memory format: a channels_last pool result stays channels_last).
std::vector<at::Tensor> run_graph(const workload_spec& spec, const std::vector<at::Tensor>& inputs);

// The float64 reference: floating inputs upcast to float64, every floating op computed in float64 (dtype
// arguments and casts to floating types stay float64). Integer outputs (topk indices) stay int64.
std::vector<at::Tensor> run_graph_f64(const workload_spec& spec, const std::vector<at::Tensor>& inputs);

}  // namespace kf
