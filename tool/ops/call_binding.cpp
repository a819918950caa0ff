// Binding a call's shapes to a spec (call_binding.h).
#include "call_binding.h"

#include <cctype>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kf::ops {

call_binding bind_call(const workload_spec& spec, const std::vector<tensor_desc>& inputs) {
  call_binding b;
  if (inputs.size() != spec.inputs.size()) {
    b.why = fmt::format("{} inputs, the spec takes {}", inputs.size(), spec.inputs.size());
    return b;
  }
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const input_spec& in = spec.inputs[i];
    const tensor_desc& t = inputs[i];
    if (t.type != in.type) {
      b.why = fmt::format("{} is {}, the spec takes {}", in.name, dtype_name(t.type), dtype_name(in.type));
      return b;
    }
    if (t.shape.size() != in.shape.size()) {
      b.why = fmt::format("{} has {} dims, the spec's has {}", in.name, t.shape.size(), in.shape.size());
      return b;
    }
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const dim& want = in.shape[d];
      int64_t got = t.shape[d];
      if (!want.is_symbol()) {
        if (got != want.value) {
          b.why = fmt::format("{}'s dim {} is {}, the spec's is {}", in.name, d, got, want.value);
          return b;
        }
        continue;
      }
      if (got < 1) {
        b.why = fmt::format("{}'s dim {} ({}) is {}; a spec's sizes are at least 1", in.name, d, want.symbol, got);
        return b;
      }
      auto [it, fresh] = values.emplace(want.symbol, got);
      if (!fresh && it->second != got) {
        b.why = fmt::format("{} is {} in one input and {} in {}", want.symbol, it->second, got, in.name);
        return b;
      }
    }
  }
  // The bindings in the order the spec's cases list them (the order of first appearance among the inputs).
  std::vector<std::string> parts;
  for (const input_spec& in : spec.inputs)
    for (const dim& d : in.shape)
      if (d.is_symbol() && !b.c.binding(d.symbol)) {
        b.c.bindings.emplace_back(d.symbol, values.at(d.symbol));
        parts.push_back(fmt::format("{}={}", d.symbol, values.at(d.symbol)));
      }
  b.c.name = fmt::format("{}", fmt::join(parts, ","));
  graph_shapes g;
  graph_error err;
  if (!try_infer_graph(spec, b.c, &g, &err)) {
    b.why = fmt::format("the graph does not take these shapes (op {} {}: {})", err.op_index + 1,
                        spec.graph.at(err.op_index).op, err.message);
    return b;
  }
  b.outputs = g.results;
  b.ok = true;
  return b;
}

std::string describe_inputs(const std::vector<tensor_desc>& inputs) {
  std::vector<std::string> parts;
  for (auto& t : inputs) parts.push_back(t.str());
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string op_name(const std::string& workload) {
  std::string n;
  for (char ch : workload) n.push_back(ch == '-' ? '_' : ch);
  if (!n.empty() && std::isdigit(static_cast<unsigned char>(n.front()))) n.insert(n.begin(), 'w');
  return n;
}

std::string op_schema(const workload_spec& spec) {
  std::vector<std::string> args, rets;
  for (auto& in : spec.inputs) args.push_back("Tensor " + in.name);
  auto names = output_names(spec);
  for (auto& n : names) rets.push_back("Tensor " + n);
  std::string ret = names.size() == 1 ? "Tensor" : fmt::format("({})", fmt::join(rets, ", "));
  return fmt::format("{}({}) -> {}", op_name(spec.name), fmt::join(args, ", "), ret);
}

}  // namespace kf::ops
