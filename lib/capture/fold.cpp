// Folding neighbouring chain steps into one spec op: see fold.h.
#include "capture/fold.h"

#include <algorithm>
#include <cmath>

#include "spec/ops.h"

namespace kf::capture {
namespace {

bool is_softmax(const lifted_op& s) { return s.op == "softmax" || s.op == "log_softmax"; }

// Replaces steps[i..i+n) by `merged` (whose covers are theirs).
void replace(std::vector<lifted_op>* steps, std::vector<bool>* escapes, size_t i, size_t n, lifted_op merged) {
  merged.covers.clear();
  for (size_t k = i; k < i + n; ++k) merged.covers.insert(merged.covers.end(), (*steps)[k].covers.begin(), (*steps)[k].covers.end());
  std::sort(merged.covers.begin(), merged.covers.end());
  merged.outputs = (*steps)[i + n - 1].outputs;
  merged.input = (*steps)[i].input;
  bool escapes_last = (*escapes)[i + n - 1];
  steps->erase(steps->begin() + static_cast<long>(i), steps->begin() + static_cast<long>(i + n));
  escapes->erase(escapes->begin() + static_cast<long>(i), escapes->begin() + static_cast<long>(i + n));
  steps->insert(steps->begin() + static_cast<long>(i), std::move(merged));
  escapes->insert(escapes->begin() + static_cast<long>(i), escapes_last);
}

bool none_escape(const std::vector<bool>& escapes, size_t i, size_t n) {
  for (size_t k = i; k < i + n; ++k)
    if (escapes[k]) return false;
  return true;
}

// cast{D} -> softmax (no dtype yet): softmax{dtype: D}.
bool fold_cast_softmax(const trace& t, std::vector<lifted_op>* steps, std::vector<bool>* escapes, size_t i) {
  const auto& s = *steps;
  if (i + 1 >= s.size() || s[i].op != "cast" || !is_softmax(s[i + 1]) || s[i + 1].args.contains("dtype")) return false;
  auto to = parse_dtype(s[i].args["dtype"].get<std::string>());
  if (!to || !is_floating(*to) || !is_floating(*t.meta(s[i].input).spec_dtype()) || !none_escape(*escapes, i, 1)) return false;
  lifted_op merged = s[i + 1];
  merged.args["dtype"] = s[i].args["dtype"];
  replace(steps, escapes, i, 2, std::move(merged));
  return true;
}

// scale{1/c} -> tanh -> scale{c}: softcap{cap: c}.
bool fold_softcap(std::vector<lifted_op>* steps, std::vector<bool>* escapes, size_t i) {
  const auto& s = *steps;
  if (i + 2 >= s.size() || s[i].op != "scale" || s[i + 1].op != "tanh" || s[i + 2].op != "scale") return false;
  const double a = s[i].args["factor"].get<double>(), c = s[i + 2].args["factor"].get<double>();
  if (c == 0 || std::abs(a * c - 1) > 1e-6 || !none_escape(*escapes, i, 2)) return false;
  lifted_op merged = s[i + 1];
  merged.op = "softcap";
  merged.args = {{"cap", c}};
  replace(steps, escapes, i, 3, std::move(merged));
  return true;
}

// add{other} with a softmax later in the chain, the other broadcasting to the input's shape: add_mask{mask}.
void name_masks(const trace& t, std::vector<lifted_op>* steps) {
  bool softmax_after = false;
  for (size_t i = steps->size(); i-- > 0;) {
    lifted_op& s = (*steps)[i];
    if (is_softmax(s)) softmax_after = true;
    if (!softmax_after || s.op != "add" || s.tensors.size() != 1) continue;
    const tensor_meta& x = t.meta(s.input);
    const tensor_meta& m = t.meta(s.tensors[0].second);
    std::vector<int64_t> shape;
    if (!is_floating(*m.spec_dtype()) || !broadcast_shapes(x.shape, m.shape, &shape) || shape != x.shape) continue;
    s.op = "add_mask";
    s.tensors[0].first = "mask";
    s.commutative = false;
  }
}

}  // namespace

void fold_steps(const trace& t, std::vector<lifted_op>* steps, std::vector<bool>* escapes) {
  // An alias changes no value: the step before it returns what it returns.
  for (size_t i = 1; i < steps->size();) {
    if ((*steps)[i].op != "alias") {
      ++i;
      continue;
    }
    lifted_op& prev = (*steps)[i - 1];
    prev.outputs = (*steps)[i].outputs;
    prev.covers.insert(prev.covers.end(), (*steps)[i].covers.begin(), (*steps)[i].covers.end());
    std::sort(prev.covers.begin(), prev.covers.end());
    (*escapes)[i - 1] = (*escapes)[i - 1] || (*escapes)[i];
    steps->erase(steps->begin() + static_cast<long>(i));
    escapes->erase(escapes->begin() + static_cast<long>(i));
  }
  for (size_t i = 0; i < steps->size();) {
    if (fold_cast_softmax(t, steps, escapes, i) || fold_softcap(steps, escapes, i)) continue;
    ++i;
  }
  name_masks(t, steps);
}

}  // namespace kf::capture
