// Shape symbols for a pattern seen at several sizes. A dim that has one size in every case stays a literal; a dim
// whose size varies gets a symbol, and dims that vary together (the same size in every case: a residual's rows
// and the input's, a mask's sequence dims and the scores') share one, except that a tensor's second dim with the
// same sizes as its first gets its own (square images, H and W, stay two symbols). Symbols are named by their
// place: T, D for 2-d tensors, B, T, D for 3-d, N, C, H, W for 4-d (a digit added when a name is taken).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spec/spec.h"

namespace kf::capture {

using case_shapes = std::vector<std::vector<int64_t>>;  // one call's input shapes, in the inputs' order

struct symbolized_shapes {
  std::vector<std::vector<dim>> inputs;                              // each input's shape: literals and symbols
  std::vector<std::vector<std::pair<std::string, int64_t>>> cases;  // each case's bindings, in symbol order
};

// `cases` holds at least one case; every case has the same number of inputs, each of the same rank.
symbolized_shapes infer_symbols(const std::vector<case_shapes>& cases);

}  // namespace kf::capture
