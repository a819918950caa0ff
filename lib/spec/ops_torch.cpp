// The eager implementation of each graph op: exactly what the PyTorch expression in the op's summary
// computes (same dtypes, same rounding points), so the eager baseline and the reference are PyTorch's.
#include "spec/ops_torch.h"

#include <fmt/format.h>

namespace kf {
namespace {

using tensors = std::vector<at::Tensor>;

// add, sub, mul, div: `op(x, other)` with other the input it names, or a number (a Python scalar operand: x's dtype
// kept) as an at::Scalar.
template <typename Op>
auto binary(Op op) {
  return [op](const at::Tensor& x, const torch_op_args& a) -> tensors {
    const nlohmann::json& other = a.value("other");
    if (other.is_number()) return {op(x, at::Scalar(other.get<double>()))};
    return {op(x, *a.tensor("other"))};
  };
}

std::vector<int64_t> ints(const nlohmann::json& v) {
  if (v.is_array()) return v.get<std::vector<int64_t>>();
  return {v.get<int64_t>()};
}

std::vector<torch_op> make_table() {
  return {
      {"softcap", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         double cap = a.value("cap").get<double>();
         return {at::tanh(x / cap) * cap};
       }},
      {"scale", [](const at::Tensor& x, const torch_op_args& a) -> tensors { return {x * a.value("factor").get<double>()}; }},
      {"add_mask", [](const at::Tensor& x, const torch_op_args& a) -> tensors { return {x + *a.tensor("mask")}; }},
      {"masked_fill", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {x.masked_fill(*a.tensor("mask"), number_value(a.value("value")))};
       }},
      {"where", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::where(*a.tensor("condition"), x, number_value(a.value("value")))};
       }},
      {"softmax", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::softmax(x, a.value("dim").get<int64_t>(), a.dtype_arg("dtype"))};
       }},
      {"log_softmax", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::log_softmax(x, a.value("dim").get<int64_t>(), a.dtype_arg("dtype"))};
       }},
      {"topk", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         auto [values, indices] = at::topk(x, a.value("k").get<int64_t>(), a.value("dim").get<int64_t>(),
                                           a.value("largest").get<bool>(), a.value("sorted").get<bool>());
         return {values, indices};
       }},
      {"group_norm", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::group_norm(x, a.value("num_groups").get<int64_t>(), a.tensor("weight"), a.tensor("bias"),
                                a.value("eps").get<double>(), /*cudnn_enabled=*/true)};
       }},
      {"layer_norm", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::layer_norm(x, ints(a.value("normalized_shape")), a.tensor("weight"), a.tensor("bias"),
                                a.value("eps").get<double>())};
       }},
      {"rms_norm", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         std::optional<double> eps;
         if (a.has("eps")) eps = a.value("eps").get<double>();
         return {at::rms_norm(x, ints(a.value("normalized_shape")), a.tensor("weight"), eps)};
       }},
      {"silu", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::silu(x)}; }},
      {"sigmoid", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::sigmoid(x)}; }},
      {"tanh", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::tanh(x)}; }},
      {"relu", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::relu(x)}; }},
      {"exp", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::exp(x)}; }},
      {"rsqrt", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::rsqrt(x)}; }},
      {"neg", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::neg(x)}; }},
      {"hardswish", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::hardswish(x)}; }},
      {"hardsigmoid", [](const at::Tensor& x, const torch_op_args&) -> tensors { return {at::hardsigmoid(x)}; }},
      {"clamp", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         std::optional<at::Scalar> lo, hi;
         if (a.has("min")) lo = a.value("min").get<double>();
         if (a.has("max")) hi = a.value("max").get<double>();
         return {at::clamp(x, lo, hi)};
       }},
      {"add", binary([](const at::Tensor& x, const auto& o) { return at::add(x, o); })},
      {"sub", binary([](const at::Tensor& x, const auto& o) { return at::sub(x, o); })},
      {"mul", binary([](const at::Tensor& x, const auto& o) { return at::mul(x, o); })},
      {"div", binary([](const at::Tensor& x, const auto& o) { return at::div(x, o); })},
      {"gelu", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::gelu(x, a.value("approximate").get<std::string>())};
       }},
      {"adaptive_avg_pool2d", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::adaptive_avg_pool2d(x, pool_output_size(a.value("output_size")))};
       }},
      {"avg_pool2d", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         op_call call{"avg_pool2d", a.args, {}, {}};
         const pool_window w = pool_window_of(call);
         std::optional<int64_t> divisor;
         if (w.divisor) divisor = w.divisor;
         return {at::avg_pool2d(x, {w.kh, w.kw}, {w.sh, w.sw}, {w.ph, w.pw}, w.ceil_mode, w.count_include_pad, divisor)};
       }},
      {"max_pool2d", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         const pool_window w = pool_window_of(op_call{"max_pool2d", a.args, {}, {}});
         return {at::max_pool2d(x, {w.kh, w.kw}, {w.sh, w.sw}, {w.ph, w.pw}, {1, 1}, w.ceil_mode)};
       }},
      {"flatten", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::flatten(x, a.value("start_dim").get<int64_t>(), a.value("end_dim").get<int64_t>())};
       }},
      {"cast", [](const at::Tensor& x, const torch_op_args& a) -> tensors { return {x.to(*a.dtype_arg("dtype"))}; }},
      {"linear", [](const at::Tensor& x, const torch_op_args& a) -> tensors {
         return {at::linear(x, *a.tensor("weight"), a.tensor("bias"))};
       }},
      {"matmul", [](const at::Tensor& x, const torch_op_args& a) -> tensors { return {at::matmul(x, *a.tensor("other"))}; }},
  };
}

}  // namespace

at::ScalarType to_scalar_type(dtype t) {
  switch (t) {
    case dtype::float32: return at::kFloat;
    case dtype::float16: return at::kHalf;
    case dtype::bfloat16: return at::kBFloat16;
    case dtype::float64: return at::kDouble;
    case dtype::int32: return at::kInt;
    case dtype::int64: return at::kLong;
    case dtype::uint8: return at::kByte;
    case dtype::boolean: return at::kBool;
  }
  KF_ASSERT(false, "unknown dtype {}", static_cast<int>(t));
}

dtype from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return dtype::float32;
    case at::kHalf: return dtype::float16;
    case at::kBFloat16: return dtype::bfloat16;
    case at::kDouble: return dtype::float64;
    case at::kInt: return dtype::int32;
    case at::kLong: return dtype::int64;
    case at::kByte: return dtype::uint8;
    case at::kBool: return dtype::boolean;
    default: throw infra_error(fmt::format("tensor type {} has no kforge dtype", c10::toString(t)));
  }
}

const nlohmann::json& torch_op_args::value(const std::string& name) const {
  if (auto it = args.find(name); it != args.end() && !it->is_null()) return *it;
  const arg_def* d = op.find_arg(name);
  KF_ASSERT(d, "op {} has no argument {}", op.name, name);
  return d->default_value;
}

bool torch_op_args::has(const std::string& name) const { return !value(name).is_null(); }

std::optional<at::Tensor> torch_op_args::tensor(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  auto it = tensors.find(name);
  KF_ASSERT(it != tensors.end(), "op {}: tensor argument {} was not bound", op.name, name);
  return it->second;
}

std::optional<at::ScalarType> torch_op_args::dtype_arg(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  auto t = parse_dtype(value(name).get<std::string>());
  KF_ASSERT(t.has_value(), "op {}: bad dtype {}", op.name, value(name).dump());
  if (f64 && is_floating(*t)) return at::kDouble;
  return to_scalar_type(*t);
}

const std::vector<torch_op>& torch_op_table() {
  static const std::vector<torch_op> table = make_table();
  return table;
}

const torch_op* find_torch_op(const std::string& name) {
  for (auto& op : torch_op_table())
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace kf
