// Grouping lifted ops into patterns a spec graph can express: chains in which each step reads the step before
// it, and takes every other tensor from outside the chain (a residual, a weight, a mask), as the spec's graph does.
// A lifted op continues the chain whose last result it reads (add and mul through either operand) when
//   - the chain does not end in topk (which must be last), and holds no reduction yet if it is one (a norm,
//     softmax or pooling: a kernel fuses elementwise steps around one reduction), but for a top-k after a
//     softmax (a router);
//   - it is not a pooling (which starts the head's pattern) and, if a flatten, follows a pooling;
//   - its other tensors are not made by the chain, directly or through other operators (a kernel cannot take
//     as input what is computed from its own result: a residual block's identity add after its convolutions);
// otherwise it starts a chain of its own (a flatten never starts one: alone, it is a view).
#pragma once
#include <vector>

#include "capture/lift.h"
#include "capture/trace.h"

namespace kf::capture {

// One call of a pattern: its steps in order; steps[i+1] reads steps[i]'s first result.
struct group {
  std::vector<lifted_op> steps;
  double time_us = 0;           // the sum of its operators' times
  std::vector<size_t> covers;   // its trace operators, sorted
};

struct grouping {
  std::vector<group> groups;      // in the order of their first operator
  std::vector<size_t> uncovered;  // trace operators in no group, in trace order
};

grouping group_ops(const trace& t, const std::vector<lifted_op>& lifted);

// Whether `value` is computed, through any operators, from a value `g` produced (a step's result or any of its
// operators' outputs).
bool depends_on(const trace& t, int64_t value, const group& g);

}  // namespace kf::capture
