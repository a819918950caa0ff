// The spec's `inputs` (shape, dtype, init, memory_format) and `cases` (symbol bindings, gate).
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "spec/spec_parse.h"
#include "spec/spec_parse_detail.h"

namespace kf::detail {
namespace {

using json = nlohmann::json;

const std::regex k_ident_re("[a-z_][a-z0-9_]*");
const std::regex k_symbol_re("[A-Za-z_][A-Za-z0-9_]*");
// Input names become Python argument names in the compile export.
const std::set<std::string> k_python_words = {"and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "self", "torch", "input"};

const std::vector<std::string> k_init_kinds = {"normal", "uniform", "causal_mask", "randint"};

// Reads the init's parameters with their defaults; checks they make sense for the input.
// `desc_ok`: the input's shape and dtype were read (checks against them are made only then).
void parse_init(yaml_reader& r, const YAML::Node& n, const std::string& field, input_spec* in, bool desc_ok) {
  YAML::Node params;
  std::string kind;
  YAML::Node kind_node = n;
  if (n.IsScalar()) {
    auto k = r.get_choice(n, field, k_init_kinds, "init");
    if (!k) return;
    kind = *k;
  } else {
    if (!r.check_map(n, field, k_init_kinds)) return;
    if (n.size() != 1) {
      r.error(n, field, fmt::format("expected exactly one init kind (one of normal, uniform, causal_mask, randint), got {}", n.size()));
      return;
    }
    auto it = n.begin();
    kind_node.reset(it->first);  // reset: Node::operator= would write into the tree
    kind = it->first.Scalar();
    params.reset(it->second);
    if (std::find(k_init_kinds.begin(), k_init_kinds.end(), kind) == k_init_kinds.end()) return;  // reported
  }
  std::string f = field + "." + kind;
  json p = json::object();
  auto number = [&](const char* key, double def) {
    p[key] = def;
    if (params && params.IsMap() && params[key])
      if (auto v = r.get_number(params[key], f + "." + key)) p[key] = *v;
  };
  auto integer = [&](const char* key, std::optional<int64_t> def) {
    if (def) p[key] = *def;
    if (params && params.IsMap() && params[key])
      if (auto v = r.get_int(params[key], f + "." + key)) p[key] = *v;
  };
  bool map_ok = !params || params.IsNull() || params.IsMap();
  if (!map_ok) r.error(params, f, fmt::format("expected a mapping of parameters, got {}", yaml_reader::describe(params)));
  if (desc_ok && (kind == "normal" || kind == "uniform") && !is_floating(in->type))
    r.error(kind_node, f, fmt::format("{} draws real numbers: expected a floating-point dtype, got {} (use randint for integer inputs)", kind, dtype_name(in->type)));
  if (kind == "normal") {
    if (params && map_ok && !params.IsNull()) r.check_map(params, f, {"mean", "std"});
    number("mean", 0.0);
    number("std", 1.0);
    if (p["std"].get<double>() <= 0) r.error(params["std"], f + ".std", fmt::format("expected std > 0, got {}", p["std"].get<double>()));
  } else if (kind == "uniform") {
    if (params && map_ok && !params.IsNull()) r.check_map(params, f, {"low", "high"});
    number("low", 0.0);
    number("high", 1.0);
    if (p["low"].get<double>() >= p["high"].get<double>())
      r.error(params ? params : kind_node, f, fmt::format("expected low < high, got low {} and high {}", p["low"].get<double>(), p["high"].get<double>()));
  } else if (kind == "randint") {
    if (params && map_ok && !params.IsNull()) r.check_map(params, f, {"low", "high"}, {"high"});
    else if (map_ok) r.error(kind_node, f, "missing required field `high`");
    integer("low", 0);
    integer("high", std::nullopt);
    if (p.contains("high") && p["low"].get<int64_t>() >= p["high"].get<int64_t>())
      r.error(params, f, fmt::format("expected low < high, got low {} and high {}", p["low"].get<int64_t>(), p["high"].get<int64_t>()));
    else if (desc_ok && in->type == dtype::boolean && p.contains("high") && (p["low"].get<int64_t>() < 0 || p["high"].get<int64_t>() > 2))
      r.error(params, f, fmt::format("a bool input holds 0 and 1: expected 0 <= low < high <= 2, got low {} and high {}", p["low"].get<int64_t>(), p["high"].get<int64_t>()));
  } else {  // causal_mask
    if (params && map_ok && !params.IsNull()) r.check_map(params, f, {});
    if (desc_ok && !is_floating(in->type) && in->type != dtype::boolean)
      r.error(kind_node, f, fmt::format("a causal mask holds 0 and -inf (a bool one: false and true): expected a floating-point or bool dtype, got {}", dtype_name(in->type)));
    if (desc_ok && in->shape.size() < 2)
      r.error(kind_node, f, fmt::format("a causal mask spans the last two dims: expected at least 2 dims, got {}", in->shape.size()));
  }
  in->init = {kind, p};
}

void parse_shape(yaml_reader& r, const YAML::Node& n, const std::string& field, input_spec* in, bool* ok) {
  if (!r.check_list(n, field)) { *ok = false; return; }
  if (n.size() > k_max_dims) {  // the kernel ABI's kf_tensor holds that many
    r.error(n, field, fmt::format("expected at most {} dims (the kernel ABI's kf_tensor), got {}", k_max_dims, n.size()));
    *ok = false;
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string f = fmt::format("{}[{}]", field, i);
    const YAML::Node d = n[i];
    if (yaml_reader::is_plain_scalar(d) && !d.IsNull() && std::regex_match(d.Scalar(), k_symbol_re)) {
      in->shape.push_back({d.Scalar(), 0});
      continue;
    }
    auto v = r.get_int(d, f);
    if (!v) { *ok = false; continue; }
    if (*v < 1) {
      r.error(d, f, fmt::format("expected a size >= 1 or a symbol like S, got {}", *v));
      *ok = false;
      continue;
    }
    in->shape.push_back({"", *v});
  }
}

void parse_input(yaml_reader& r, const std::string& name, const YAML::Node& n, workload_spec* out, parse_locs* locs) {
  std::string field = "inputs." + name;
  bool ok = true;
  if (!r.check_map(n, field, {"shape", "dtype", "init", "memory_format"}, {"shape", "dtype"})) {
    locs->inputs_ok = locs->shapes_ok = false;
    return;
  }
  input_spec in;
  in.name = name;
  in.loc = r.loc(n);
  if (n["shape"]) {
    locs->input_shapes[name] = r.loc(n["shape"]);
    bool shape_ok = true;
    parse_shape(r, n["shape"], field + ".shape", &in, &shape_ok);
    ok = ok && shape_ok;
  } else {
    ok = false;
  }
  if (!ok) locs->shapes_ok = false;
  bool dtype_ok = false;
  if (n["dtype"])
    if (auto t = r.get_dtype(n["dtype"], field + ".dtype")) in.type = *t, dtype_ok = true;
  if (n["init"]) parse_init(r, n["init"], field + ".init", &in, ok && dtype_ok);
  ok = ok && dtype_ok;
  if (!n["init"]) in.init = {"normal", {{"mean", 0.0}, {"std", 1.0}}};
  if (!n["init"] && dtype_ok && in.type == dtype::boolean)
    r.error(n, field, "a bool input needs an init: causal_mask (true above the diagonal, where masked_fill fills) or randint {high: 2}");
  if (n["memory_format"])
    if (auto m = r.get_choice(n["memory_format"], field + ".memory_format", {"contiguous", "channels_last"}, "memory format")) {
      in.memory_format = *m;
      if (*m == "channels_last" && ok && in.shape.size() != 4) {
        r.error(n["memory_format"], field + ".memory_format",
                fmt::format("channels_last applies to 4-d inputs [N, C, H, W]; this input has {} dims", in.shape.size()));
      }
    }
  if (!ok) locs->inputs_ok = false;
  out->inputs.push_back(std::move(in));
}

// `devices: [cuda]`: the device kinds a case runs on (huge shapes need not run on a laptop's cpu device).
void parse_case_devices(yaml_reader& r, const YAML::Node& n, const std::string& field, case_spec* cs) {
  static const std::vector<std::string> k_kinds = {"cpu", "cuda"};
  auto gpu_hint = [&](const YAML::Node& d, const std::string& f) {  // "gpu" is not close to "cuda" by spelling
    bool gpu = d.IsScalar() && (d.Scalar() == "gpu" || d.Scalar() == "GPU");
    if (gpu) r.error(d, f, "unknown device kind `gpu`; did you mean `cuda`?");
    return gpu;
  };
  if (gpu_hint(n, field)) return;
  if (n.IsScalar()) {
    if (auto d = r.get_choice(n, field, k_kinds, "device kind")) cs->devices = {*d};
    return;
  }
  if (!r.check_list(n, field)) return;
  if (n.size() == 0) r.error(n, field, "expected at least one device kind (cpu, cuda); leave `devices` out for all");
  for (size_t i = 0; i < n.size(); ++i) {
    if (gpu_hint(n[i], fmt::format("{}[{}]", field, i))) continue;
    auto d = r.get_choice(n[i], fmt::format("{}[{}]", field, i), k_kinds, "device kind");
    if (!d) continue;
    if (std::find(cs->devices.begin(), cs->devices.end(), *d) != cs->devices.end())
      r.error(n[i], fmt::format("{}[{}]", field, i), fmt::format("`{}` is listed twice", *d));
    else
      cs->devices.push_back(*d);
  }
}

}  // namespace

void parse_inputs(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs) {
  if (!n.IsMap()) {
    r.error(n, "inputs", fmt::format("expected a mapping of input names to {{shape, dtype, init}}, got {}", yaml_reader::describe(n)));
    locs->inputs_ok = locs->shapes_ok = false;
    return;
  }
  if (n.size() == 0) {
    r.error(n, "inputs", "expected at least one input");
    locs->inputs_ok = locs->shapes_ok = false;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
    std::string field = "inputs." + name;
    if (!seen.insert(name).second) {
      r.error(it->first, field, fmt::format("duplicate input `{}`", name));
      locs->inputs_ok = locs->shapes_ok = false;
      continue;
    }
    if (!std::regex_match(name, k_ident_re) || k_python_words.count(name)) {
      r.error(it->first, field, fmt::format("`{}` is not a valid input name: expected a lowercase identifier "
                                            "([a-z_][a-z0-9_]*, not a Python keyword), e.g. `x` or `mask`", name));
      locs->inputs_ok = locs->shapes_ok = false;
      continue;
    }
    locs->inputs[name] = r.loc(it->first);
    parse_input(r, name, it->second, out, locs);
  }
}

void parse_cases(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs) {
  if (!r.check_list(n, "cases")) { locs->cases_ok = false; return; }
  if (n.size() == 0) {
    r.error(n, "cases", "expected at least one case");
    locs->cases_ok = false;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string field = fmt::format("cases[{}]", i);
    const YAML::Node c = n[i];
    if (!c.IsMap()) {
      r.error(c, field, fmt::format("expected a mapping of symbol bindings like {{S: 1024, gate: true}}, got {}", yaml_reader::describe(c)));
      locs->cases_ok = false;
      continue;
    }
    case_spec cs;
    cs.loc = r.loc(c);
    locs->case_keys.emplace_back();  // indexed like out->cases
    locs->case_values.emplace_back();
    locs->case_index.push_back(i);
    size_t errors_before = r.error_count();
    std::set<std::string> seen;
    for (auto it = c.begin(); it != c.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      std::string f = field + "." + key;
      if (!seen.insert(key).second) {
        r.error(it->first, f, fmt::format("duplicate key `{}`", key));
        locs->cases_ok = false;
        continue;
      }
      if (key == "gate") {
        if (auto g = r.get_bool(it->second, f)) cs.gate = *g;
        continue;
      }
      if (key == "devices") {
        parse_case_devices(r, it->second, f, &cs);
        continue;
      }
      if (key == "share") {  // kforge capture's: the share of the model's traced time
        if (auto v = r.get_fraction(it->second, f)) cs.share = *v;
        continue;
      }
      if (key == "calls") {  // kforge capture's: the calls one forward made at this shape
        auto v = r.get_int(it->second, f);
        if (v && *v < 1) r.error(it->second, f, fmt::format("expected a count >= 1, got {}", *v));
        else if (v) cs.calls = *v;
        continue;
      }
      if (!std::regex_match(key, k_symbol_re)) {
        r.error(it->first, f, fmt::format("`{}` is not a symbol name (expected an identifier like S, or `gate` / `devices` / `share` / `calls`)", key));
        locs->cases_ok = false;
        continue;
      }
      auto v = r.get_int(it->second, f);
      if (v && *v < 1) r.error(it->second, f, fmt::format("expected a size >= 1, got {}", *v));
      if (!v || *v < 1) {
        locs->cases_ok = false;
        continue;
      }
      locs->case_keys.back()[key] = r.loc(it->first);
      locs->case_values.back()[key] = r.loc(it->second);
      cs.bindings.emplace_back(key, *v);
    }
    for (auto& [k, v] : cs.bindings) cs.name += fmt::format("{}{}={}", cs.name.empty() ? "" : ",", k, v);
    if (cs.name.empty()) cs.name = "default";
    if (!names.insert(cs.name).second) {
      r.error(c, field, fmt::format("duplicate case `{}` (the same bindings as an earlier case)", cs.name));
      locs->cases_ok = false;
    }
    locs->case_clean.push_back(r.error_count() == errors_before);
    out->cases.push_back(std::move(cs));
  }
}

}  // namespace kf::detail
