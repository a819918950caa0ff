// Comparing a candidate's output with the float64 reference: unwritten (still poisoned) elements, NaN/Inf
// positions, and the error against the tolerance rule of tolerance.h. Index outputs (topk) are compared by the
// values they select, so ties may be broken either way. Include only from *_torch.cpp.
#pragma once
#include <string>

#include <ATen/ATen.h>

#include "spec/spec.h"
#include "verify/tolerance.h"

namespace kf {

struct output_comparison {
  int64_t numel = 0;
  int64_t unwritten = 0;           // still holding the poison
  std::string first_unwritten;     // "[0, 5]"
  int64_t nan_inf_mismatches = 0;  // NaN/Inf where the reference has none, or the reverse, or the wrong Inf
  std::string first_nan_inf;       // "[2, 3]: got nan, reference 0.25"
  double ratio = 0;                // max error in units of the tolerance (passes when <= 1)
  double max_abs_err = 0;
  std::string worst;               // "[1, 7]: got 0.5, reference 0.25"
  int64_t out_of_range = 0;        // index outputs: indices outside the indexed dim, or repeated in a row
  std::string index_problem;
  tolerance_choice tol;
  double eager_ratio = 0;          // eager's own error in units of the dtype default
  bool written() const { return unwritten == 0; }
  bool nan_inf_ok() const { return nan_inf_mismatches == 0; }
  bool match() const { return ratio <= 1 && out_of_range == 0; }
  std::string match_text() const;  // "max err 0.31 of tolerance (rtol .., atol ..; why) at [..]: got .., reference .."
  nlohmann::json numbers() const;
};

// `out`: the candidate's output (its dtype); `ref`: float64 reference; `eager`: eager's output (for the
// tolerance); `t`: the output's dtype.
output_comparison compare_output(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& eager, dtype t,
                                 const tolerance_spec& spec_tol);

// topk indices: in range, no index twice in a row, and the values they select from `source` (the float64 input
// of topk) match the reference values within the values' tolerance.
output_comparison compare_indices(const at::Tensor& indices, const at::Tensor& source, int64_t dim,
                                  const at::Tensor& ref_values, const at::Tensor& eager_values, dtype values_type,
                                  const tolerance_spec& spec_tol);

// "[i, j, k]" for a flat index into `sizes`.
std::string index_text(int64_t flat, at::IntArrayRef sizes);

}  // namespace kf
