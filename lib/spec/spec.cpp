#include "spec/spec.h"

#include <algorithm>

#include "spec/ops.h"

namespace kf {
namespace {

struct dtype_entry {
  dtype type;
  std::string_view name;
  int64_t size;
  bool floating;
};
constexpr dtype_entry k_dtypes[] = {
    {dtype::float32, "float32", 4, true}, {dtype::float16, "float16", 2, true},
    {dtype::bfloat16, "bfloat16", 2, true}, {dtype::float64, "float64", 8, true},
    {dtype::int32, "int32", 4, false},     {dtype::int64, "int64", 8, false},
    {dtype::uint8, "uint8", 1, false},     {dtype::boolean, "bool", 1, false},
};
// torch spellings that name the same types
const std::map<std::string_view, dtype> k_aliases = {
    {"float", dtype::float32}, {"half", dtype::float16},  {"bf16", dtype::bfloat16}, {"fp16", dtype::float16},
    {"fp32", dtype::float32},  {"double", dtype::float64}, {"int", dtype::int32},     {"long", dtype::int64},
};

const dtype_entry& entry(dtype t) {
  for (auto& e : k_dtypes)
    if (e.type == t) return e;
  KF_ASSERT(false, "unknown dtype code {}", static_cast<int>(t));
}

}  // namespace

std::string_view dtype_name(dtype t) { return entry(t).name; }
int64_t dtype_size(dtype t) { return entry(t).size; }
bool is_floating(dtype t) { return entry(t).floating; }

std::optional<dtype> parse_dtype(std::string_view s) {
  if (s.starts_with("torch.")) s.remove_prefix(6);
  for (auto& e : k_dtypes)
    if (e.name == s) return e.type;
  if (auto it = k_aliases.find(s); it != k_aliases.end()) return it->second;
  return std::nullopt;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (auto& e : k_dtypes) v.emplace_back(e.name);
    for (auto& [k, _] : k_aliases) v.emplace_back(k);
    return v;
  }();
  return names;
}

std::optional<int64_t> case_spec::binding(std::string_view symbol) const {
  for (auto& [k, v] : bindings)
    if (k == symbol) return v;
  return std::nullopt;
}

bool case_spec::runs_on(std::string_view device_kind) const {
  return devices.empty() || std::find(devices.begin(), devices.end(), device_kind) != devices.end();
}

const input_spec* workload_spec::find_input(std::string_view n) const {
  for (auto& in : inputs)
    if (in.name == n) return &in;
  return nullptr;
}

const case_spec* workload_spec::find_case(std::string_view n) const {
  for (auto& c : cases)
    if (c.name == n) return &c;
  return nullptr;
}

std::vector<std::vector<int64_t>> tuning_shapes(const workload_spec& spec, const input_spec& in) {
  const bool any_gated = std::any_of(spec.cases.begin(), spec.cases.end(), [](auto& c) { return c.gate; });
  std::vector<std::vector<int64_t>> out;
  for (auto& c : spec.cases)
    if (c.gate || !any_gated) out.push_back(concrete_shape(in, c));
  return out;
}

std::vector<int64_t> concrete_shape(const input_spec& in, const case_spec& c) {
  std::vector<int64_t> shape;
  for (auto& d : in.shape) {
    if (!d.is_symbol()) {
      shape.push_back(d.value);
      continue;
    }
    auto v = c.binding(d.symbol);
    KF_ASSERT(v.has_value(), "case {} does not bind {} (validation should have caught it)", c.name, d.symbol);
    shape.push_back(*v);
  }
  return shape;
}

// ---- JSON: the form a spec travels in to the worker ----

static nlohmann::json loc_json(const source_loc& l) { return {{"file", l.file}, {"line", l.line}, {"column", l.column}}; }
static source_loc loc_from(const nlohmann::json& j) {
  if (!j.is_object()) return {};
  return {j.value("file", ""), j.value("line", 0), j.value("column", 0)};
}

namespace {

// The outputs resolved (ops.h output_refs), for readers of the JSON that do not resolve names themselves
// (baselines/compile/export.py).
nlohmann::json output_refs_json(const workload_spec& s) {
  nlohmann::json refs = nlohmann::json::array();
  for (auto& r : output_refs(s)) refs.push_back({{"step", r.step}, {"index", r.index}, {"name", r.name}});
  return refs;
}

}  // namespace

nlohmann::json to_json(const workload_spec& s) {
  using nlohmann::json;
  json inputs = json::array();
  for (auto& in : s.inputs) {
    json shape = json::array();
    for (auto& d : in.shape) shape.push_back(d.is_symbol() ? json(d.symbol) : json(d.value));
    inputs.push_back({{"name", in.name}, {"shape", shape}, {"dtype", dtype_name(in.type)},
                      {"init", {{"kind", in.init.kind}, {"params", in.init.params}}},
                      {"memory_format", in.memory_format}, {"loc", loc_json(in.loc)}});
  }
  json graph = json::array();
  for (auto& op : s.graph) {
    json o = {{"op", op.op}, {"args", op.args}, {"loc", loc_json(op.loc)}};
    if (!op.as.empty()) o["as"] = op.as;
    graph.push_back(std::move(o));
  }
  json cases = json::array();
  for (auto& c : s.cases) {
    json b = json::array();
    for (auto& [k, v] : c.bindings) b.push_back({k, v});
    json jc = {{"name", c.name}, {"bindings", b}, {"gate", c.gate}, {"devices", c.devices}, {"loc", loc_json(c.loc)}};
    if (c.share) jc["share"] = *c.share;
    if (c.calls) jc["calls"] = *c.calls;
    cases.push_back(std::move(jc));
  }
  json tol = json::object();
  if (s.tolerance.rtol) tol["rtol"] = *s.tolerance.rtol;
  if (s.tolerance.atol) tol["atol"] = *s.tolerance.atol;
  return {{"version", s.version},
          {"name", s.name},
          {"model", s.model},
          {"inputs", inputs},
          {"graph", graph},
          {"cases", cases},
          {"outputs", s.outputs},
          {"output_refs", output_refs_json(s)},
          {"tolerance", tol},
          {"baselines", s.baselines},
          {"gate", {{"max_regression", s.gate.max_regression}, {"must_beat", s.gate.must_beat},
                    {"require_kernel", s.gate.require_kernel}}},
          {"search", {{"families", s.search.families}, {"evaluations", s.search.evaluations},
                      {"seconds", s.search.seconds}}},
          {"allow_libraries", s.allow_libraries},
          {"input_reads", s.input_reads},
          {"path", s.path},
          {"hash", s.hash}};
}

workload_spec spec_from_json(const nlohmann::json& j) {
  workload_spec s;
  s.version = j.at("version").get<int>();
  s.name = j.at("name").get<std::string>();
  s.model = j.value("model", "");
  for (auto& ji : j.at("inputs")) {
    input_spec in;
    in.name = ji.at("name").get<std::string>();
    for (auto& d : ji.at("shape")) in.shape.push_back(d.is_string() ? dim{d.get<std::string>(), 0} : dim{"", d.get<int64_t>()});
    auto t = parse_dtype(ji.at("dtype").get<std::string>());
    KF_ASSERT(t.has_value(), "bad dtype in spec JSON");
    in.type = *t;
    in.init.kind = ji.at("init").at("kind").get<std::string>();
    in.init.params = ji.at("init").at("params");
    in.memory_format = ji.value("memory_format", "contiguous");
    in.loc = loc_from(ji.value("loc", nlohmann::json()));
    s.inputs.push_back(std::move(in));
  }
  for (auto& jo : j.at("graph"))
    s.graph.push_back({jo.at("op").get<std::string>(), jo.at("args"), loc_from(jo.value("loc", nlohmann::json())),
                       jo.value("as", "")});
  s.outputs = j.value("outputs", std::vector<std::string>{});
  for (auto& jc : j.at("cases")) {
    case_spec c;
    c.name = jc.at("name").get<std::string>();
    for (auto& b : jc.at("bindings")) c.bindings.emplace_back(b.at(0).get<std::string>(), b.at(1).get<int64_t>());
    c.gate = jc.value("gate", false);
    c.devices = jc.value("devices", std::vector<std::string>{});
    if (jc.contains("share")) c.share = jc["share"].get<double>();
    if (jc.contains("calls")) c.calls = jc["calls"].get<int64_t>();
    c.loc = loc_from(jc.value("loc", nlohmann::json()));
    s.cases.push_back(std::move(c));
  }
  auto& tol = j.at("tolerance");
  if (tol.contains("rtol")) s.tolerance.rtol = tol["rtol"].get<double>();
  if (tol.contains("atol")) s.tolerance.atol = tol["atol"].get<double>();
  s.baselines = j.at("baselines").get<std::vector<std::string>>();
  s.gate.max_regression = j.at("gate").at("max_regression").get<double>();
  s.gate.must_beat = j.at("gate").at("must_beat").get<std::vector<std::string>>();
  s.gate.require_kernel = j.at("gate").value("require_kernel", false);
  s.search.families = j.at("search").at("families").get<std::vector<std::string>>();
  s.search.evaluations = j.at("search").at("evaluations").get<int>();
  s.search.seconds = j.at("search").value("seconds", 0.0);
  s.allow_libraries = j.value("allow_libraries", std::vector<std::string>{});
  s.input_reads = j.value("input_reads", 1.0);
  s.path = j.value("path", "");
  s.hash = j.value("hash", "");
  return s;
}

}  // namespace kf
