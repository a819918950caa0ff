// Adversarial input variants for verification: inputs that break kernels which only work on "nice" data.
// The LibTorch generation is in reference_torch.cpp; this core part names the kinds and says where each applies.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "spec/spec.h"

namespace kf {

struct adversarial_kind {
  std::string name;
  std::string help;
};

// large_magnitude: the primary input times 100 (overflow in exp without max subtraction, fp16 sums);
// all_equal_rows: every row along the reduced dim holds one value (ties in topk, zero variance in norms; for a
//   graph that starts with group_norm, every group);
// neg_inf_mask: some -inf entries in the primary input, never a whole row (masked attention rows).
const std::vector<adversarial_kind>& adversarial_kinds();
std::vector<std::string> adversarial_kind_names();
// Whether `kind` means something for this spec (e.g. neg_inf_mask needs a softmax, log_softmax or topk).
bool adversarial_applies(const workload_spec& spec, std::string_view kind);
// The dim of the primary input that the graph reduces over (softmax / log_softmax / topk dim when every
// op before it keeps the shape; else the last dim), as a non-negative index.
int64_t reduced_dim(const workload_spec& spec, const case_spec& c);

}  // namespace kf
