// RMSNorm written out as operators, recognised as the spec's one rms_norm. F.rms_norm on the cpu (ATen's
// composite) and a hand-written RMSNorm (Llama's, in Hugging Face transformers) both dispatch
//
//   [x = _to_copy(x0, float32)]  p = pow(x, 2)  m = mean(p, trailing dims, keepdim)  a = add(m, eps)
//   r = rsqrt(a)  n = mul(x, r)  then, when x0 was upcast, either  mul(n, w) -> _to_copy(x0's dtype)  (ATen)
//                                                             or  _to_copy(n, x0's dtype) -> mul(w)  (Llama)
//
// which is rms_norm(x0, normalized_shape, weight=w, eps): the spec's rms_norm computes in float32 for 16-bit
// inputs and returns the input's dtype. Without the upcast, the weight's mul is optional and x's own dtype holds.
// Every intermediate must have no other reader; x0's other readers (a residual stream) are fine.
#pragma once
#include <optional>

#include "capture/lift.h"

namespace kf::capture {

// The rms_norm whose pow is trace operator `pow_index`, or nullopt when the operators there are not one.
std::optional<lifted_op> match_rms_norm(const trace& t, size_t pow_index);

}  // namespace kf::capture
