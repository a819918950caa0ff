// The one emitter of elementwise code (unary ops, binary ops, scale, softcap, masks, casts): each op of the spec
// language that maps one value to one value, as a C++ statement on a running value. The generic code generator and
// the pointwise family emit their passes with it; a family that fuses elementwise prologues or epilogues can too.
//
// The statements call functions that the emitting kernel's prelude defines for its value type: kf_exp, kf_tanh,
// kf_erf, kf_sqrt, kf_sigmoid, kf_relu, kf_gelu, kf_gelu_tanh, and kf_round(KF_<dtype>, v) (the value rounded
// through a stored type, kf_abi.h's dtype codes).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/spec.h"

namespace kf::ew {

// Whether an op maps each element to one element (with at most one tensor operand, broadcast).
bool is_elementwise(std::string_view op);
// Whether the op calls exp, tanh or erf (a family's math knob matters for a graph that has one).
bool calls_transcendental(std::string_view op);
// The op's tensor operand ("other", "mask"), or "" when it has none (add/sub/mul/div of a number: a literal).
std::string operand_arg(const op_call& call);

// A literal of the value type `acc` ("float" or "double") for v: "0.5f", "(double)0.5", "INFINITY".
std::string literal(double v, const std::string& acc);

// The statement that applies `call` to `v` (e.g. "v = v * o0;"): `operand` names the loaded operand's value when the
// op has one. The value is then rounded through `result` when that is a 16-bit type, as eager's intermediate of that
// type would be (round_steps false leaves it in the value type, as torch.compile does, except for casts).
std::string statement(const op_call& call, const std::string& v, const std::string& operand, dtype result,
                      const std::string& acc, bool round_steps = true);

// The statements of a whole chain of elementwise ops (every op of spec.graph, as match_pointwise checked), one a
// line after `indent`, on `v` in float, rounded only where the graph casts (as torch.compile computes): the k-th
// tensor operand the ops read (k from 1; operand 0 is the chain's input, v's start) is the expression operand(k);
// `types` holds each op's result type.
// `first`, `last`, `first_operand`: only the ops [first, last) of the graph (a prologue or epilogue around a
// reduction), whose first tensor operand is operand(first_operand).
std::string chain_statements(const workload_spec& spec, const std::vector<dtype>& types,
                             const std::function<std::string(size_t)>& operand, const std::string& indent,
                             size_t first = 0, size_t last = SIZE_MAX, size_t first_operand = 1);

// The kf_abi.h code of a dtype ("KF_BFLOAT16").
std::string abi_code(dtype t);

}  // namespace kf::ew
