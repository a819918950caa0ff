// Reading trace.py's JSON and indexing its dataflow: see trace.h.
#include "capture/trace.h"

#include <cmath>

#include <fmt/format.h>

#include "util/error.h"
#include "util/fs.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;

// The dtypes a spec holds, under torch's names.
const std::map<std::string, kf::dtype> k_spec_dtypes = {
    {"float32", kf::dtype::float32}, {"float16", kf::dtype::float16}, {"bfloat16", kf::dtype::bfloat16},
    {"float64", kf::dtype::float64}, {"int32", kf::dtype::int32},     {"int64", kf::dtype::int64},
    {"uint8", kf::dtype::uint8},     {"bool", kf::dtype::boolean},
};

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw user_error(fmt::format("{}: not a kforge capture trace: {}", source, what));
}

tensor_meta read_tensor(const json& j, const std::string& source, const std::string& where) {
  tensor_meta t;
  try {
    t.value = j.at("value").get<int64_t>();
    t.shape = j.at("shape").get<std::vector<int64_t>>();
    t.stride = j.value("stride", std::vector<int64_t>{});
    t.dtype = j.at("dtype").get<std::string>();
  } catch (const json::exception& e) {
    bad(source, fmt::format("{}: a tensor needs value, shape and dtype ({})", where, e.what()));
  }
  return t;
}

// Every tensor inside an argument (lists of tensors flattened), in order.
void collect_tensors(const json& j, std::vector<const json*>* out) {
  if (is_tensor(j)) {
    out->push_back(&j);
  } else if (j.is_array()) {
    for (const auto& e : j) collect_tensors(e, out);
  }
}

}  // namespace

std::optional<kf::dtype> tensor_meta::spec_dtype() const {
  auto it = k_spec_dtypes.find(dtype);
  if (it == k_spec_dtypes.end()) return std::nullopt;
  return it->second;
}

int64_t tensor_meta::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool tensor_meta::contiguous() const {
  if (stride.size() != shape.size()) return true;  // no strides recorded: nothing says otherwise
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && stride[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

bool tensor_meta::channels_last() const {
  if (shape.size() != 4 || stride.size() != 4 || contiguous()) return false;
  // Order C, W, H, N from the fastest: stride(C) = 1, stride(W) = C, stride(H) = W*C, stride(N) = H*W*C.
  const int64_t c = shape[1], h = shape[2], w = shape[3];
  auto fits = [&](size_t i, int64_t s) { return shape[i] == 1 || stride[i] == s; };
  return fits(1, 1) && fits(3, c) && fits(2, w * c) && fits(0, h * w * c);
}

const json& traced_op::arg(size_t i, const std::string& name) const {
  static const json k_null;
  if (i < args.size()) return args[i];
  if (auto it = kwargs.find(name); it != kwargs.end()) return *it;
  return k_null;
}

bool is_tensor(const json& j) { return j.is_object() && j.contains("value"); }

std::optional<double> number_arg(const json& j) {
  if (!j.is_number()) return std::nullopt;
  double v = j.get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> int_arg(const json& j) {
  if (!j.is_number_integer()) return std::nullopt;
  return j.get<int64_t>();
}

std::optional<std::vector<int64_t>> int_list_arg(const json& j) {
  if (auto v = int_arg(j)) return std::vector<int64_t>{*v};
  if (!j.is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& e : j) {
    auto v = int_arg(e);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

const tensor_meta& trace::meta(int64_t value) const {
  auto it = values.find(value);
  KF_ASSERT(it != values.end(), "value {} is not in the trace", value);
  return it->second;
}

std::optional<size_t> trace::producer(int64_t value) const {
  auto it = m_producer.find(value);
  if (it == m_producer.end()) return std::nullopt;
  return it->second;
}

const std::vector<size_t>& trace::consumers(int64_t value) const {
  static const std::vector<size_t> k_none;
  auto it = m_consumers.find(value);
  return it == m_consumers.end() ? k_none : it->second;
}

double trace::total_us() const {
  double s = 0;
  for (const auto& op : ops) s += op.time_us;
  return s;
}

void trace::index() {
  m_producer.clear();
  m_consumers.clear();
  for (const auto& op : ops) {
    for (int64_t v : op.outputs) m_producer[v] = op.index;
    for (int64_t v : op.inputs) {
      auto& c = m_consumers[v];
      if (c.empty() || c.back() != op.index) c.push_back(op.index);
    }
  }
}

trace parse_trace(const json& j, const std::string& source) {
  if (!j.is_object()) bad(source, "expected a JSON object");
  if (j.value("version", 0) != k_trace_version)
    bad(source, fmt::format("version {} (expected {}: written by another kforge?)", j.value("version", json()).dump(), k_trace_version));
  trace t;
  t.model = j.value("model", "");
  t.device = j.value("device", "cpu");
  t.torch_version = j.value("torch", "");
  if (!j.contains("ops") || !j["ops"].is_array()) bad(source, "no list of ops");
  auto remember = [&](const tensor_meta& m) { t.values.try_emplace(m.value, m); };
  for (size_t i = 0; i < j["ops"].size(); ++i) {
    const json& jo = j["ops"][i];
    std::string where = fmt::format("ops[{}]", i);
    traced_op op;
    op.index = t.ops.size();
    try {
      op.name = jo.at("op").get<std::string>();
      op.module = jo.value("module", "");
      op.args = jo.value("args", json::array());
      op.kwargs = jo.value("kwargs", json::object());
      op.time_us = jo.value("time_us", 0.0);
    } catch (const json::exception& e) {
      bad(source, fmt::format("{}: {}", where, e.what()));
    }
    if (!op.args.is_array() || !op.kwargs.is_object()) bad(source, where + ": args must be a list and kwargs a mapping");
    if (!std::isfinite(op.time_us) || op.time_us < 0) bad(source, where + ": time_us must be a number >= 0");
    std::vector<const json*> tensors;
    collect_tensors(op.args, &tensors);
    for (const auto& [k, v] : op.kwargs.items()) collect_tensors(v, &tensors);
    for (const json* tj : tensors) {
      tensor_meta m = read_tensor(*tj, source, where);
      remember(m);
      op.inputs.push_back(m.value);
    }
    for (const auto& o : jo.value("outputs", json::array())) {
      if (!is_tensor(o)) continue;  // a scalar result
      tensor_meta m = read_tensor(o, source, where + ".outputs");
      t.values[m.value] = m;
      op.outputs.push_back(m.value);
    }
    t.ops.push_back(std::move(op));
  }
  const json origins = j.value("origins", json::object());  // kept: a range-for over a temporary's items() dangles
  for (const auto& [k, v] : origins.items()) {
    try {
      t.origins[std::stoll(k)] = v;
    } catch (const std::exception&) {
      bad(source, fmt::format("origins: `{}` is not a value id", k));
    }
  }
  for (const auto& v : j.value("model_outputs", json::array()))
    if (v.is_number_integer()) t.model_outputs.insert(v.get<int64_t>());
  t.index();
  return t;
}

trace read_trace(const std::filesystem::path& path) {
  std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw user_error(fmt::format("{}: not JSON: {}", path.string(), e.what()));
  }
  return parse_trace(j, path.string());
}

}  // namespace kf::capture
