// Writing a workload spec as YAML: see spec_yaml.h.
#include "capture/spec_yaml.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "spec/ops.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// A string as a YAML scalar: plain where YAML reads it back as the same string, else double-quoted.
std::string yaml_string(const std::string& s) {
  static const std::regex k_plain("[A-Za-z_][A-Za-z0-9_.-]*");
  static const std::set<std::string> k_special = {"true", "false", "yes", "no", "on", "off", "null", "y", "n",
                                                  "True", "False", "Yes", "No", "On", "Off", "Null", "NULL", "TRUE", "FALSE"};
  if (std::regex_match(s, k_plain) && !k_special.count(s)) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string yaml_value(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return yaml_number(v.get<double>());
  if (v.is_string()) return yaml_string(v.get<std::string>());
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + yaml_value(e);
    return "[" + s + "]";
  }
  if (v.is_object()) {
    std::string s;
    for (const auto& [k, e] : v.items()) s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", k, yaml_value(e));
    return "{" + s + "}";
  }
  return "null";
}

std::string shape_text(const std::vector<dim>& shape) {
  std::string s;
  for (const auto& d : shape) s += (s.empty() ? "" : ", ") + (d.is_symbol() ? d.symbol : std::to_string(d.value));
  return "[" + s + "]";
}

std::string init_text(const init_spec& init) {
  if (init.kind == "causal_mask") return "causal_mask";
  return fmt::format("{{{}: {}}}", init.kind, yaml_value(init.params.is_null() ? json::object() : init.params));
}

// An op's arguments: `input` first, then the schema's order, then `as`.
std::string op_line(const op_call& c) {
  std::vector<std::string> parts;
  auto put = [&](const std::string& k) {
    if (c.args.contains(k) && !c.args[k].is_null()) parts.push_back(fmt::format("{}: {}", k, yaml_value(c.args[k])));
  };
  put("input");
  std::set<std::string> done = {"input"};
  if (const op_def* def = find_op(c.op))
    for (const auto& a : def->args) {
      put(a.name);
      done.insert(a.name);
    }
  for (const auto& [k, v] : c.args.items())
    if (!done.count(k)) put(k);
  if (!c.as.empty()) parts.push_back("as: " + c.as);
  if (parts.empty()) return "  - " + c.op + "\n";
  return fmt::format("  - {}: {{{}}}\n", c.op, join(parts));
}

std::string seconds_text(double s) {
  if (s >= 60 && std::fmod(s, 60) == 0) return fmt::format("{}m", static_cast<long long>(s / 60));
  return fmt::format("{}s", yaml_number(s));
}

// A fraction as a percentage ("5%") where that reads back as the same double, else as the fraction.
std::string fraction_text(double f) {
  std::string p = fmt::format("{:g}", f * 100);
  return std::stod(p) / 100.0 == f ? p + "%" : yaml_number(f);
}

std::string list_text(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const auto& e : v) quoted.push_back(yaml_string(e));
  return "[" + join(quoted) + "]";
}

}  // namespace

std::string yaml_number(double v) {
  const float f = static_cast<float>(v);
  std::string s = std::isfinite(f) && static_cast<double>(f) == v ? fmt::format("{}", f) : fmt::format("{}", v);
  // float's shortest text read back as a double may pass float's range (finfo(float32).min prints as -3.4028235e+38,
  // beyond -3.4028234663852886e+38): torch refuses such a fill value for float32, so keep the double's text there.
  if (std::isfinite(f) && std::abs(std::strtod(s.c_str(), nullptr)) > static_cast<double>(std::numeric_limits<float>::max()))
    s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string spec_yaml(const workload_spec& s, const spec_comments& comments) {
  std::string y;
  for (const auto& line : comments.header) y += line.empty() ? "#\n" : "# " + line + "\n";
  y += fmt::format("version: {}\nname: {}\n", s.version, s.name);
  if (!s.model.empty()) y += fmt::format("model: {}\n", yaml_string(s.model));
  y += "inputs:\n";
  for (const auto& in : s.inputs) {
    y += fmt::format("  {}: {{shape: {}, dtype: {}, init: {}", in.name, shape_text(in.shape), dtype_name(in.type), init_text(in.init));
    if (in.memory_format != "contiguous") y += ", memory_format: " + in.memory_format;
    y += "}\n";
  }
  y += "graph:\n";
  for (const auto& c : s.graph) y += op_line(c);
  if (!s.outputs.empty()) y += "outputs: " + list_text(s.outputs) + "\n";
  y += "cases:\n";
  for (size_t i = 0; i < s.cases.size(); ++i) {
    const case_spec& c = s.cases[i];
    std::vector<std::string> parts;
    for (const auto& [k, v] : c.bindings) parts.push_back(fmt::format("{}: {}", k, v));
    if (c.gate) parts.push_back("gate: true");
    if (!c.devices.empty()) parts.push_back("devices: " + list_text(c.devices));
    if (c.share) parts.push_back("share: " + fraction_text(*c.share));
    if (c.calls) parts.push_back(fmt::format("calls: {}", *c.calls));
    std::string line = "  - {" + join(parts) + "}";
    if (i < comments.cases.size() && !comments.cases[i].empty()) line += "   # " + comments.cases[i];
    y += line + "\n";
  }
  if (s.tolerance.rtol || s.tolerance.atol) {
    std::vector<std::string> t;
    if (s.tolerance.rtol) t.push_back("rtol: " + yaml_number(*s.tolerance.rtol));
    if (s.tolerance.atol) t.push_back("atol: " + yaml_number(*s.tolerance.atol));
    y += "tolerance: {" + join(t) + "}\n";
  }
  y += "baselines: " + list_text(s.baselines) + "\n";
  y += fmt::format("gate: {{max_regression: {}, must_beat: {}, require_kernel: {}}}\n", fraction_text(s.gate.max_regression),
                   list_text(s.gate.must_beat), s.gate.require_kernel ? "true" : "false");
  std::string search = fmt::format("budget: {{evaluations: {}", s.search.evaluations);
  if (s.search.seconds > 0) search += ", seconds: " + seconds_text(s.search.seconds);
  search += "}";
  if (!s.search.families.empty()) search = "families: " + list_text(s.search.families) + ", " + search;
  y += "search: {" + search + "}\n";
  if (!s.allow_libraries.empty()) y += "allow_libraries: " + list_text(s.allow_libraries) + "\n";
  if (s.input_reads != 1.0) y += "input_reads: " + yaml_number(s.input_reads) + "\n";
  return y;
}

}  // namespace kf::capture
