#include "search/families/elementwise_emit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "spec/ops.h"
#include "util/error.h"

namespace kf::ew {

bool is_elementwise(std::string_view op) {
  static const std::vector<std::string_view> k = {"scale", "softcap", "add_mask", "masked_fill", "where", "silu", "gelu",
                                                  "cast", "sigmoid", "tanh", "relu", "exp", "rsqrt", "neg", "add", "sub",
                                                  "mul", "div", "hardswish", "hardsigmoid", "clamp"};
  for (auto o : k)
    if (o == op) return true;
  return false;
}

bool calls_transcendental(std::string_view op) {
  static const std::vector<std::string_view> k = {"silu", "sigmoid", "gelu", "tanh", "exp", "softcap"};
  return std::find(k.begin(), k.end(), op) != k.end();
}

std::string operand_arg(const op_call& call) {
  if (call.op == "add_mask" || call.op == "masked_fill") return "mask";
  if (call.op == "where") return "condition";
  if (call.op == "add" || call.op == "sub" || call.op == "mul" || call.op == "div")
    return is_number_operand(call, "other") ? "" : "other";  // a number is a literal in the statement
  return "";
}

std::string literal(double v, const std::string& acc) {
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  KF_ASSERT(std::isfinite(v), "a NaN constant");
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return acc == "float" ? s + "f" : "(" + acc + ")" + s;
}

std::string abi_code(dtype t) {
  switch (t) {
    case dtype::float32: return "KF_FLOAT32";
    case dtype::float16: return "KF_FLOAT16";
    case dtype::bfloat16: return "KF_BFLOAT16";
    case dtype::float64: return "KF_FLOAT64";
    case dtype::int32: return "KF_INT32";
    case dtype::int64: return "KF_INT64";
    case dtype::uint8: return "KF_UINT8";
    case dtype::boolean: return "KF_BOOL";
  }
  return "KF_FLOAT32";
}

std::string statement(const op_call& call, const std::string& v, const std::string& operand, dtype result,
                      const std::string& acc, bool round_steps) {
  const auto& a = call.args;
  auto num = [&](const char* k) { return literal(a.at(k).get<double>(), acc); };
  const std::string& op = call.op;
  // add/sub/mul/div of a number: the number as a literal of the value type, where a tensor operand's value would be.
  const std::string o = is_number_operand(call, "other") ? literal(a.at("other").get<double>(), acc) : operand;
  std::string s;
  if (op == "scale") s = fmt::format("{0} = {0} * {1};", v, num("factor"));
  else if (op == "softcap") s = fmt::format("{0} = kf_tanh({0} / {1}) * {1};", v, num("cap"));
  else if (op == "add_mask") s = fmt::format("{0} = {0} + {1};", v, operand);
  else if (op == "add") s = fmt::format("{0} = {0} + {1};", v, o);
  else if (op == "masked_fill")
    s = fmt::format("{0} = {1} != ({2})0 ? {3} : {0};", v, operand, acc, literal(number_value(a.at("value")), acc));
  else if (op == "where")
    s = fmt::format("{0} = {1} != ({2})0 ? {0} : {3};", v, operand, acc, literal(number_value(a.at("value")), acc));
  else if (op == "sub") s = fmt::format("{0} = {0} - {1};", v, o);
  else if (op == "mul") s = fmt::format("{0} = {0} * {1};", v, o);
  else if (op == "div") s = fmt::format("{0} = {0} / {1};", v, o);
  else if (op == "silu") s = fmt::format("{0} = {0} * kf_sigmoid({0});", v);
  else if (op == "sigmoid") s = fmt::format("{0} = kf_sigmoid({0});", v);
  else if (op == "gelu") s = fmt::format("{0} = {1}({0});", v, a.value("approximate", "none") == "tanh" ? "kf_gelu_tanh" : "kf_gelu");
  else if (op == "tanh") s = fmt::format("{0} = kf_tanh({0});", v);
  else if (op == "relu") s = fmt::format("{0} = kf_relu({0});", v);
  else if (op == "exp") s = fmt::format("{0} = kf_exp({0});", v);
  else if (op == "rsqrt") s = fmt::format("{0} = ({1})1 / kf_sqrt({0});", v, acc);
  else if (op == "neg") s = fmt::format("{0} = -{0};", v);
  else if (op == "hardswish" || op == "hardsigmoid")
    // ATen's: x * min(max(x + 3, 0), 6) * (1 / 6) (hardsigmoid without the x), in the value type; NaN stays NaN (the
    // comparisons are false).
    s = fmt::format("{{ {1} kf_h = {0} + {2}; kf_h = kf_h < {3} ? {3} : kf_h; {0} = {6}(kf_h > {4} ? {4} : kf_h) * {5}; }}",
                    v, acc, literal(3, acc), literal(0, acc), literal(6, acc), literal(1.0 / 6.0, acc),
                    op == "hardswish" ? v + " * " : std::string());
  else if (op == "clamp") {
    // torch.clamp: the lower bound, then the upper (min > max gives max); NaN stays NaN.
    auto bound = [&](const char* k, const char* cmp) {
      return a.contains(k) && !a.at(k).is_null() ? fmt::format("{0} = {0} {1} {2} ? {2} : {0};", v, cmp, num(k)) : "";
    };
    s = bound("min", "<") + bound("max", ">");
  }
  else if (op == "cast") return fmt::format("{0} = kf_round({1}, {0});", v, abi_code(result));
  else KF_ASSERT(false, "{} is not an elementwise op", op);
  if (round_steps && (result == dtype::float16 || result == dtype::bfloat16))
    s += fmt::format(" {0} = kf_round({1}, {0});", v, abi_code(result));
  return s;
}

std::string chain_statements(const workload_spec& spec, const std::vector<dtype>& types,
                             const std::function<std::string(size_t)>& operand, const std::string& indent,
                             size_t first, size_t last, size_t first_operand) {
  std::string body;
  size_t k = first_operand;
  for (size_t i = first; i < std::min(last, spec.graph.size()); ++i) {
    const op_call& call = spec.graph[i];
    const std::string x = operand_arg(call).empty() ? "" : operand(k++);
    body += indent + statement(call, "v", x, types.at(i), "float", false) + "\n";
  }
  return body;
}

}  // namespace kf::ew
