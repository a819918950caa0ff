// Folding neighbouring steps of a chain into the one spec op that says what they compute, as a person writing
// the spec would, and as the kernel families match it:
//   cast{D} -> softmax / log_softmax          => softmax{dtype: D}  (torch.softmax(x, dim, dtype=D) dispatches so)
//   scale{1/c} -> tanh -> scale{c}            => softcap{cap: c}
//   add{other} before a softmax in the chain  => add_mask{mask}, when the mask broadcasts to the scores' shape
// A step whose result is read outside the chain (it escapes) is never folded away.
#pragma once
#include <vector>

#include "capture/lift.h"
#include "capture/trace.h"

namespace kf::capture {

// `escapes[i]` says whether steps[i]'s result is read outside the chain; both vectors are updated together.
void fold_steps(const trace& t, std::vector<lifted_op>* steps, std::vector<bool>* escapes);

}  // namespace kf::capture
