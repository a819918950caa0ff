// A group of lifted ops as a spec graph: see pattern.h.
#include "capture/pattern.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "capture/fold.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;

// The base name of an input by the argument it fills, and how it is drawn.
struct input_role {
  const char* base;
  json init_params;  // for `normal`
};
const std::map<std::string, input_role>& roles() {
  static const std::map<std::string, input_role> r = {
      {"input", {"x", {{"std", 1.0}}}},
      {"weight", {"w", {{"mean", 1.0}, {"std", 0.1}}}},
      {"bias", {"b", {{"std", 0.1}}}},
      {"mask", {"mask", {}}},
      {"condition", {"keep", {}}},  // torch.where's bool condition: true where x is kept
      {"other", {"z", {{"std", 1.0}}}},
  };
  return r;
}

// Whether each step's result is read outside the group (or returned by the model).
std::vector<bool> step_escapes(const trace& t, const group& g) {
  std::set<size_t> inside(g.covers.begin(), g.covers.end());
  std::vector<bool> out;
  for (const auto& s : g.steps) {
    bool escapes = t.model_outputs.count(s.output()) > 0;
    for (size_t c : t.consumers(s.output())) escapes = escapes || !inside.count(c);
    out.push_back(escapes);
  }
  return out;
}

class input_namer {
 public:
  input_namer(const trace& t, std::vector<pattern_input>* inputs) : m_trace(t), m_inputs(inputs) {}

  // The input's name for `value` filling `role`: the same value keeps its first name.
  std::string name(int64_t value, const std::string& role) {
    for (const auto& in : *m_inputs)
      if (in.value == value) return in.name;
    const input_role& r = roles().at(role);
    std::string name = r.base;
    for (int n = 2; m_used.count(name); ++n) name = fmt::format("{}{}", r.base, n);
    m_used.insert(name);
    const tensor_meta& m = m_trace.meta(value);
    pattern_input in;
    in.name = name;
    in.value = value;
    in.shape = m.shape;
    in.type = *m.spec_dtype();
    in.memory_format = m.channels_last() ? "channels_last" : "contiguous";
    if (in.type == dtype::boolean) {
      in.init = {"randint", {{"low", 0}, {"high", 2}}};  // a bool mask: which positions a model fills is its data
    } else if (!is_floating(in.type)) {
      in.init = {"randint", {{"low", 0}, {"high", 16}}};
    } else if (role == "mask" && m.shape.size() >= 2) {
      in.init = {"causal_mask", json::object()};
    } else {
      in.init = {"normal", role == "mask" ? json{{"std", 1.0}} : r.init_params};
    }
    m_inputs->push_back(std::move(in));
    return name;
  }

 private:
  const trace& m_trace;
  std::vector<pattern_input>* m_inputs;
  std::set<std::string> m_used;
};

// The distinct modules of the group's operators, in order ("" is the model's own forward).
std::string where_of(const trace& t, const group& g) {
  std::vector<std::string> seen;
  for (size_t i : g.covers) {
    std::string m = t.ops[i].module.empty() ? "(model)" : t.ops[i].module;
    if (std::find(seen.begin(), seen.end(), m) == seen.end()) seen.push_back(m);
  }
  std::string s;
  for (const auto& m : seen) s += (s.empty() ? "" : " + ") + m;
  return s;
}

}  // namespace

pattern_call make_pattern(const trace& t, const group& g) {
  pattern_call p;
  std::vector<lifted_op> steps = g.steps;
  p.escapes = step_escapes(t, g);
  fold_steps(t, &steps, &p.escapes);
  input_namer names(t, &p.inputs);
  for (size_t i = 0; i < steps.size(); ++i) {
    const lifted_op& s = steps[i];
    op_call call;
    call.op = s.op;
    call.args = s.args;
    if (i == 0) call.args["input"] = names.name(s.input, "input");
    for (const auto& [arg, v] : s.tensors) call.args[arg] = names.name(v, arg);
    p.graph.push_back(std::move(call));
  }
  json sig = {{"graph", json::array()}, {"inputs", json::array()}};
  for (const auto& c : p.graph) sig["graph"].push_back({{"op", c.op}, {"args", c.args}});
  for (const auto& in : p.inputs) {
    sig["inputs"].push_back({in.name, dtype_name(in.type), in.shape.size(), in.memory_format});
    p.bytes += t.meta(in.value).numel() * dtype_size(in.type);
  }
  p.signature = sig.dump();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i + 1 < steps.size() && !p.escapes[i]) continue;
    for (int64_t o : steps[i].outputs) p.bytes += t.meta(o).numel() * dtype_size(*t.meta(o).spec_dtype());
  }
  p.where = where_of(t, g);
  p.time_us = g.time_us;
  return p;
}

std::string pattern_text(const std::vector<op_call>& graph) {
  std::string s;
  for (const auto& c : graph) {
    s += (s.empty() ? "" : " -> ") + c.op;
    if (c.op == "softmax" || c.op == "log_softmax" || c.op == "cast")
      if (c.args.contains("dtype")) s += fmt::format("({})", c.args["dtype"].get<std::string>());
  }
  return s;
}

}  // namespace kf::capture
