// The spec parser's entry points and its top-level fields (version, name, tolerance, baselines, gate, search).
// Inputs and cases: spec_parse_inputs.cpp; graph: spec_parse_graph.cpp; cross-field checks: spec_check.cpp.
#include "spec/spec_parse.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "spec/ops.h"
#include "spec/spec_parse_detail.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/suggest.h"

namespace kf {

namespace fs = std::filesystem;
using detail::parse_locs;

namespace {

family_names_source& installed_family_names() {
  static family_names_source source = nullptr;  // constant-initialized: safe to set from another file's static init
  return source;
}

}  // namespace

bool set_family_names_source(family_names_source source) {
  KF_ASSERT(!installed_family_names() || installed_family_names() == source, "two family name sources installed");
  installed_family_names() = source;
  return true;
}

const std::vector<std::string>& known_family_names() {
  static const std::vector<std::string> names = [] {
    KF_ASSERT(installed_family_names(), "no family table linked (lib/search/families.cpp installs the family names)");
    return installed_family_names()();
  }();
  return names;
}

const std::vector<std::string>& library_names() {
  static const std::vector<std::string> names = {"cublas", "cublasLt", "cudnn"};
  return names;
}

std::string spec_diagnostic::str() const {
  std::string where = loc.str();
  std::string s = where.empty() ? "" : where + ": ";
  if (!field.empty()) s += field + ": ";
  return s + message;
}

namespace {

const std::vector<std::string> k_top_fields = {"version", "name", "model", "inputs", "graph", "outputs", "cases", "tolerance",
                                               "baselines", "gate", "search", "allow_libraries", "input_reads"};

// A list of distinct names, each one of `choices`. Returns the good entries with their list index; *ok says
// whether all were good.
std::vector<std::pair<size_t, std::string>> read_names(yaml_reader& r, const YAML::Node& n, const std::string& field,
                                                       const std::vector<std::string>& choices, const std::string& what,
                                                       bool* ok) {
  std::vector<std::pair<size_t, std::string>> out;
  *ok = r.check_list(n, field);
  if (!*ok) return out;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string f = fmt::format("{}[{}]", field, i);
    auto s = r.get_choice(n[i], f, choices, what);
    if (!s) { *ok = false; continue; }
    bool dup = false;
    for (auto& [_, name] : out) dup = dup || name == *s;
    if (dup) {
      r.error(n[i], f, fmt::format("`{}` is listed twice", *s));
      *ok = false;
      continue;
    }
    out.emplace_back(i, *s);
  }
  return out;
}

std::vector<std::string> names_only(const std::vector<std::pair<size_t, std::string>>& v) {
  std::vector<std::string> out;
  for (auto& [_, s] : v) out.push_back(s);
  return out;
}

void parse_name(yaml_reader& r, const YAML::Node& n, const std::string& path, workload_spec* out) {
  auto name = r.get_string(n, "name");
  if (!name) return;
  static const std::regex k_name_re("[a-z0-9]+(-[a-z0-9]+)*");
  if (!std::regex_match(*name, k_name_re)) {
    r.error(n, "name", fmt::format("`{}` is not a valid name: expected lowercase letters, digits and single hyphens "
                                   "([a-z0-9-], not starting or ending with '-'), e.g. `gemma-attn-softmax`", *name));
    return;
  }
  out->name = *name;
  std::string stem = fs::path(path).stem().string();
  if (!path.empty() && stem != *name)
    r.error(n, "name", fmt::format("`{}` differs from the file name `{}` (the name is also the kernels folder; "
                                   "expected `{}` or rename the file)", *name, fs::path(path).filename().string(), stem));
}

void parse_tolerance(yaml_reader& r, const YAML::Node& n, workload_spec* out) {
  if (!r.check_map(n, "tolerance", {"rtol", "atol"})) return;
  for (const char* k : {"rtol", "atol"}) {
    if (!n[k]) continue;
    auto v = r.get_number(n[k], fmt::format("tolerance.{}", k));
    if (!v) continue;
    if (*v < 0 || *v > 1) {
      r.error(n[k], fmt::format("tolerance.{}", k), fmt::format("expected a number in [0, 1], got {}", n[k].Scalar()));
      continue;
    }
    (std::string(k) == "rtol" ? out->tolerance.rtol : out->tolerance.atol) = *v;
  }
}

void parse_gate(yaml_reader& r, const YAML::Node& n, workload_spec* out) {
  if (!r.check_map(n, "gate", {"max_regression", "must_beat", "require_kernel"})) return;
  if (n["max_regression"])
    if (auto v = r.get_fraction(n["max_regression"], "gate.max_regression")) out->gate.max_regression = *v;
  if (n["must_beat"]) {
    bool ok;
    auto v = read_names(r, n["must_beat"], "gate.must_beat", baseline_names(), "baseline", &ok);
    out->gate.must_beat = names_only(v);
    for (auto& [i, name] : v)
      if (std::find(out->baselines.begin(), out->baselines.end(), name) == out->baselines.end())
        r.error(n["must_beat"][i], fmt::format("gate.must_beat[{}]", i),
                fmt::format("`{}` is not measured: add it to `baselines` or drop it here", name));
  }
  if (n["require_kernel"])
    if (auto v = r.get_bool(n["require_kernel"], "gate.require_kernel")) out->gate.require_kernel = *v;
}

void parse_search(yaml_reader& r, const YAML::Node& n, workload_spec* out) {
  if (!r.check_map(n, "search", {"families", "budget"})) return;
  if (n["families"]) {
    bool ok;
    out->search.families = names_only(read_names(r, n["families"], "search.families", known_family_names(), "kernel family", &ok));
  }
  if (n["budget"] && r.check_map(n["budget"], "search.budget", {"evaluations", "seconds"})) {
    const YAML::Node b = n["budget"];
    if (b["evaluations"])
      if (auto v = r.get_int(b["evaluations"], "search.budget.evaluations")) {
        if (*v < 1 || *v > 1000000)
          r.error(b["evaluations"], "search.budget.evaluations", fmt::format("expected 1 to 1000000 evaluations, got {}", *v));
        else
          out->search.evaluations = static_cast<int>(*v);
      }
    if (b["seconds"])
      if (auto v = r.get_seconds(b["seconds"], "search.budget.seconds")) out->search.seconds = *v;
  }
}

void parse_root(yaml_reader& r, const YAML::Node& root, const std::string& path, workload_spec* out) {
  if (!r.check_map(root, "", k_top_fields, {"version", "name", "inputs", "graph", "cases"})) return;
  parse_locs locs;
  if (root["version"])
    if (auto v = r.get_int(root["version"], "version"); v && *v != 1)
      r.error(root["version"], "version", fmt::format("unsupported version {} (this kforge reads version 1)", *v));
  if (root["name"]) parse_name(r, root["name"], path, out);
  if (root["model"])
    if (auto v = r.get_string(root["model"], "model")) out->model = *v;
  if (root["inputs"]) detail::parse_inputs(r, root["inputs"], out, &locs);
  if (root["graph"]) detail::parse_graph(r, root["graph"], out, &locs);
  if (root["outputs"]) detail::parse_outputs(r, root["outputs"], out);
  if (root["cases"]) detail::parse_cases(r, root["cases"], out, &locs);
  if (root["tolerance"]) parse_tolerance(r, root["tolerance"], out);
  bool ok;
  if (root["baselines"]) {  // kept at the default when wrong, so must_beat is not checked against a broken list
    auto v = names_only(read_names(r, root["baselines"], "baselines", baseline_names(), "baseline", &ok));
    if (ok) out->baselines = v;
  }
  if (root["gate"]) parse_gate(r, root["gate"], out);
  if (root["search"]) parse_search(r, root["search"], out);
  if (root["allow_libraries"])
    out->allow_libraries = names_only(read_names(r, root["allow_libraries"], "allow_libraries", library_names(), "library", &ok));
  if (root["input_reads"])
    if (auto v = r.get_number(root["input_reads"], "input_reads")) {
      if (*v <= 0) r.error(root["input_reads"], "input_reads", fmt::format("expected a number > 0, got {}", *v));
      else out->input_reads = *v;
    }
  // must_beat judges the gated cases: with none, it would pass a kernel that was never timed.
  if (root["gate"] && root["gate"].IsMap() && root["gate"]["must_beat"] && !out->gate.must_beat.empty() &&
      root["cases"] && !out->cases.empty() &&
      std::none_of(out->cases.begin(), out->cases.end(), [](const case_spec& c) { return c.gate; }))
    r.error(root["gate"]["must_beat"], "gate.must_beat",
            "no case has `gate: true`, so nothing would be timed against these baselines (mark the cases to gate)");
  bool complete = root["inputs"] && root["graph"] && root["cases"];
  if (complete) detail::check_spec(r, *out, locs);
  if (complete && r.error_count() == 0) fill_dtype_defaults(*out);  // only a valid spec has dtypes to read
}

}  // namespace

std::vector<spec_diagnostic> parse_spec_text(const std::string& text, const std::string& path, workload_spec* out) {
  std::vector<spec_diagnostic> diags;
  yaml_reader r(path, &diags);
  *out = workload_spec{};
  out->path = path;
  out->hash = sha256_hex(text);
  if (text.find('\0') != std::string::npos) {
    r.error(source_loc{path, 1, 1}, "", "not a text file (it holds NUL bytes): expected a YAML spec");
    return diags;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // YAML indents with spaces only; yaml-cpp's message for a tab ("illegal map value") does not say so.
    static const std::regex tab_indent(R"((^|\n)[ ]*\t)");
    const std::string hint =
        std::regex_search(text, tab_indent) ? " (a line is indented with a tab: YAML indents with spaces)" : "";
    r.error(source_loc{path, e.mark.line + 1, e.mark.column + 1}, "", "not valid YAML: " + e.msg + hint);
    return diags;
  }
  if (!root.IsDefined() || root.IsNull()) {
    r.error(source_loc{path, 1, 1}, "", "the file is empty (expected a spec mapping with version, name, inputs, graph, cases)");
    return diags;
  }
  parse_root(r, root, path, out);
  std::stable_sort(diags.begin(), diags.end(), [](const spec_diagnostic& a, const spec_diagnostic& b) {
    return std::tie(a.loc.line, a.loc.column) < std::tie(b.loc.line, b.loc.column);
  });
  return diags;
}

std::vector<spec_diagnostic> parse_spec(const std::string& path, workload_spec* out) {
  std::string text;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    *out = workload_spec{};
    return {{source_loc{path, 0, 0}, "",
             "is a folder, not a spec file (name a .yaml file, or pass the folder as --workloads)"}};
  }
  if (!fs::exists(path, ec)) {
    *out = workload_spec{};
    return {{source_loc{path, 0, 0}, "", "no such file"}};
  }
  try {
    text = read_file(path);
  } catch (const user_error& e) {
    *out = workload_spec{};
    return {{source_loc{path, 0, 0}, "", "cannot read the spec: " + e.message()}};
  }
  return parse_spec_text(text, path, out);
}

workload_spec load_spec(const std::string& name_or_path, const std::string& workloads_dir) {
  std::string path = name_or_path;
  bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml") ||
                 name_or_path.ends_with(".yml");
  if (!is_path) {
    path = (fs::path(workloads_dir) / (name_or_path + ".yaml")).string();
    if (!fs::exists(path) && fs::exists(fs::path(workloads_dir) / (name_or_path + ".yml")))
      path = (fs::path(workloads_dir) / (name_or_path + ".yml")).string();
    if (!fs::exists(path)) {
      std::vector<std::string> names;
      if (fs::is_directory(workloads_dir))
        for (auto& f : find_specs(workloads_dir)) names.push_back(fs::path(f).stem().string());
      std::string hint = did_you_mean(name_or_path, names);
      throw user_error(fmt::format("no workload `{}`: {} does not exist{}", name_or_path, path,
                                   hint.empty() ? "" : fmt::format(" (did you mean `{}`?)", hint)));
    }
  }
  workload_spec s;
  auto diags = parse_spec(path, &s);
  if (diags.empty()) return s;
  std::string msg = fmt::format("{} has {} error{}:", path, diags.size(), diags.size() == 1 ? "" : "s");
  for (auto& d : diags) msg += "\n  " + d.str();
  throw user_error(msg);
}

std::vector<std::string> find_specs(const std::string& dir) {
  if (!fs::is_directory(dir)) throw user_error(fmt::format("{} is not a folder", dir));
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> workload_names(const std::vector<std::string>& given, const std::string& dir) {
  std::vector<std::string> names = given.empty() ? find_specs(dir) : given;
  if (names.empty()) throw user_error(source_loc{dir}, "no workload specs (*.yaml) here");
  return names;
}

std::vector<workload_spec> load_specs(const std::vector<std::string>& names, const std::string& dir) {
  std::vector<workload_spec> specs;
  for (const auto& n : names) specs.push_back(load_spec(n, dir));
  return specs;
}

}  // namespace kf
