// What the operator of a workload needs from a call before its kernel may run: the spec's shape symbols solved
// from the inputs' shapes (a case of the spec), and the outputs the spec infers for that case. A call the spec
// does not describe (another dtype, rank or literal size, a symbol with two values) says why, in words for the
// once-per-shape warning. No LibTorch here: the operators (*_torch.cpp) pass shapes and dtypes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/ops.h"
#include "spec/spec.h"

namespace kf::ops {

struct call_binding {
  bool ok = false;
  std::string why;                    // when !ok: "x is float32, the spec takes bfloat16"
  case_spec c;                        // the symbols' values, as a case of the spec
  std::vector<tensor_desc> outputs;   // the spec's outputs for that case, in the kernel ABI's order
};

// Binds `inputs` (the call's shapes and dtypes, in the spec's input order) to the spec: each input's dtype and rank
// are the spec's, each literal size equal, each symbol one value >= 1 wherever it appears, and the graph infers on
// the result.
call_binding bind_call(const workload_spec& spec, const std::vector<tensor_desc>& inputs);

// "float16[7, 3072], bfloat16[3584]": a call's inputs, for messages and the warnings' once-per-shape key.
std::string describe_inputs(const std::vector<tensor_desc>& inputs);

// The operator's name for a workload: dashes become underscores, and a name that starts with a digit gets a `w`
// in front (an operator's name is an identifier): "gpt2-gelu-tanh" -> "gpt2_gelu_tanh".
std::string op_name(const std::string& workload);

// The operator's schema: the spec's inputs in order as Tensor arguments, returning one Tensor or a tuple of the
// outputs by their names: "qwen3_32b_add_rmsnorm(Tensor x, Tensor r, Tensor w) -> (Tensor y, Tensor h)".
std::string op_schema(const workload_spec& spec);

}  // namespace kf::ops
