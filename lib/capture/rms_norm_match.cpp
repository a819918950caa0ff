// Recognising RMSNorm written out as operators: see rms_norm_match.h.
#include "capture/rms_norm_match.h"

#include <algorithm>
#include <set>

#include "spec/ops.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;

// The value of an encoded tensor argument (any dtype), or -1.
int64_t value_of(const json& arg) { return is_tensor(arg) ? arg["value"].get<int64_t>() : -1; }

// The operator at `i` when it is one of `names`.
const traced_op* op_named(const trace& t, std::optional<size_t> i, std::initializer_list<const char*> names) {
  if (!i) return nullptr;
  const traced_op& op = t.ops[*i];
  for (const char* n : names)
    if (op.name == n) return &op;
  return nullptr;
}

// The operand of a two-tensor mul that is not `known`, when `known` is one of them; -1 otherwise.
int64_t other_operand(const traced_op& mul, int64_t known) {
  int64_t a = value_of(mul.arg(0, "self")), b = value_of(mul.arg(1, "other"));
  if (a < 0 || b < 0) return -1;
  if (a == known) return b;
  if (b == known) return a;
  return -1;
}

// A mul of `n` by a weight of `shape` and `dtype`: the weight's value, or -1.
int64_t weight_mul(const trace& t, const traced_op* mul, int64_t n, const std::vector<int64_t>& shape,
                   const std::string& dtype) {
  if (!mul) return -1;
  int64_t w = other_operand(*mul, n);
  if (w < 0 || w == n) return -1;
  const tensor_meta& m = t.meta(w);
  return m.spec_dtype() && m.shape == shape && m.dtype == dtype ? w : -1;
}

bool is_cast_to(const trace& t, const traced_op* op, const std::string& dtype) {
  return op && cast_dtype(t, *op) == dtype;
}

}  // namespace

std::optional<lifted_op> match_rms_norm(const trace& t, size_t pow_index) {
  const traced_op& pow = t.ops[pow_index];
  if (pow.name != "aten.pow.Tensor_Scalar" || number_arg(pow.arg(1, "exponent")) != 2.0) return std::nullopt;
  auto x_value = spec_tensor(t, pow.arg(0, "self"));
  if (!x_value || pow.outputs.size() != 1) return std::nullopt;
  const int64_t x = *x_value;
  const tensor_meta& xm = t.meta(x);
  if (!is_floating(*xm.spec_dtype())) return std::nullopt;

  const traced_op* mean = op_named(t, only_consumer(t, pow.outputs[0]), {"aten.mean.dim"});
  if (!mean || mean->arg(2, "keepdim") != true || !mean->arg(3, "dtype").is_null()) return std::nullopt;
  auto dims = int_list_arg(mean->arg(1, "dim"));
  const int64_t rank = static_cast<int64_t>(xm.shape.size());
  if (!dims || dims->empty()) return std::nullopt;
  std::set<int64_t> reduced;
  for (int64_t d : *dims) reduced.insert(wrap_dim(d, rank));
  const int64_t k = static_cast<int64_t>(reduced.size());
  if (reduced.count(-1) || *reduced.begin() != rank - k || *reduced.rbegin() != rank - 1) return std::nullopt;
  const std::vector<int64_t> normalized(xm.shape.end() - k, xm.shape.end());

  const traced_op* add = op_named(t, only_consumer(t, mean->outputs.at(0)),
                                  {"aten.add.Scalar", "aten.add_.Scalar", "aten.add.Tensor", "aten.add_.Tensor"});
  if (!add || value_of(add->arg(0, "self")) != mean->outputs[0]) return std::nullopt;
  auto eps = number_arg(add->arg(1, "other"));
  const json& alpha = add->arg(2, "alpha");
  if (!eps || *eps < 0 || (!alpha.is_null() && number_arg(alpha) != 1.0)) return std::nullopt;
  const traced_op* rsqrt = op_named(t, only_consumer(t, add->outputs.at(0)), {"aten.rsqrt.default"});
  if (!rsqrt) return std::nullopt;
  const traced_op* mul = op_named(t, only_consumer(t, rsqrt->outputs.at(0)), {"aten.mul.Tensor"});
  if (!mul || other_operand(*mul, rsqrt->outputs[0]) != x) return std::nullopt;

  lifted_op l;
  l.op = "rms_norm";
  l.args = {{"normalized_shape", normalized}, {"eps", norm_eps(*eps)}};
  l.covers = {pow.index, mean->index, add->index, rsqrt->index, mul->index};
  int64_t result = mul->outputs.at(0);
  l.input = x;

  // The upcast: x = _to_copy(x0, float32) read by nothing but the pow and the mul, with a cast back to x0's dtype
  // after (the weight's mul before or after it).
  bool upcast = false;
  if (auto p = t.producer(x); p && !t.model_outputs.count(x)) {
    const traced_op& up = t.ops[*p];
    auto x0 = spec_tensor(t, up.arg(0, "self"));
    std::vector<size_t> readers = {pow.index, mul->index};
    std::sort(readers.begin(), readers.end());
    if (x0 && cast_dtype(t, up) == xm.dtype && t.consumers(x) == readers) {
      const std::string& d0 = t.meta(*x0).dtype;
      const traced_op* next = op_named(t, only_consumer(t, result), {"aten.mul.Tensor", "aten._to_copy.default"});
      if (next && next->name == "aten.mul.Tensor") {  // ATen: weight in float32, then the cast
        int64_t w = weight_mul(t, next, result, normalized, d0);
        const traced_op* down = op_named(t, only_consumer(t, next->outputs.at(0)), {"aten._to_copy.default"});
        if (w >= 0 && is_cast_to(t, down, d0)) {
          l.tensors.emplace_back("weight", w);
          l.covers.insert(l.covers.end(), {up.index, next->index, down->index});
          result = down->outputs.at(0);
          upcast = true;
        }
      } else if (is_cast_to(t, next, d0)) {  // Llama: the cast, then the weight in x0's dtype
        l.covers.insert(l.covers.end(), {up.index, next->index});
        result = next->outputs.at(0);
        upcast = true;
        const traced_op* wmul = op_named(t, only_consumer(t, result), {"aten.mul.Tensor"});
        if (int64_t w = weight_mul(t, wmul, result, normalized, d0); w >= 0) {
          l.tensors.emplace_back("weight", w);
          l.covers.push_back(wmul->index);
          result = wmul->outputs.at(0);
        }
      }
      if (upcast) l.input = *x0;
    }
  }
  if (!upcast) {
    const traced_op* wmul = op_named(t, only_consumer(t, result), {"aten.mul.Tensor"});
    if (int64_t w = weight_mul(t, wmul, result, normalized, xm.dtype); w >= 0 && t.meta(wmul->outputs.at(0)).dtype == xm.dtype) {
      l.tensors.emplace_back("weight", w);
      l.covers.push_back(wmul->index);
      result = wmul->outputs.at(0);
    }
  }
  std::sort(l.covers.begin(), l.covers.end());
  l.outputs = {result};
  return l;
}

}  // namespace kf::capture
