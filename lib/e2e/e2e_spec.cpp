// Reading an e2e spec: see e2e_spec.h.
#include "e2e/e2e_spec.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "spec/yaml_reader.h"
#include "util/fs.h"

namespace kf::e2e {
namespace {

namespace fs = std::filesystem;

std::optional<std::vector<std::string>> string_list(yaml_reader& r, const YAML::Node& n, const std::string& field,
                                                    const std::vector<std::string>& choices, const std::string& what) {
  if (!r.check_list(n, field)) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string f = fmt::format("{}[{}]", field, i);
    auto v = choices.empty() ? r.get_string(n[i], f) : r.get_choice(n[i], f, choices, what);
    if (v) out.push_back(*v);
  }
  return out;
}

void parse_entry(yaml_reader& r, const YAML::Node& e, e2e_spec* s) {
  if (!r.check_map(e, "e2e",
                   {"name", "model", "args", "workloads", "names", "variants", "must_beat", "min_speedup",
                    "min_predicted_fraction", "max_regression", "tolerance"},
                   {"model"}))
    return;
  if (auto m = e["model"] ? r.get_string(e["model"], "e2e.model") : std::nullopt) {
    s->model = *m;
    s->model_loc = r.loc(e["model"]);
    auto colon = m->rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == m->size())
      r.error(e["model"], "e2e.model", fmt::format("`{}`: expected FILE.py:FUNCTION", *m));
    else if (!fs::is_regular_file(m->substr(0, colon)))
      r.error(e["model"], "e2e.model",
              fmt::format("{} does not exist (a path relative to the folder "
                          "kforge runs in)",
                          m->substr(0, colon)));
  }
  if (e["name"]) {
    if (auto n = r.get_string(e["name"], "e2e.name")) s->name = *n;
  }
  if (s->name.empty() && !s->model.empty()) s->name = fs::path(s->model.substr(0, s->model.rfind(':'))).stem().string();
  if (YAML::Node a = e["args"]; a && !yaml_reader::is_null(a)) {
    if (!a.IsMap()) {
      r.error(a, "e2e.args",
              fmt::format("expected a mapping of FUNCTION's keyword arguments, got {}", yaml_reader::describe(a)));
    } else {
      std::vector<std::string> parts;
      for (auto it = a.begin(); it != a.end(); ++it) {
        const std::string key = it->first.as<std::string>();
        const std::string field = "e2e.args." + key;
        if (!it->second.IsScalar()) {
          r.error(it->second, field,
                  fmt::format("expected a number, string or boolean, got {}", yaml_reader::describe(it->second)));
          continue;
        }
        std::string v = it->second.Scalar();
        if (v == "true" || v == "false") v = v == "true" ? "True" : "False";  // Python's literals
        if (v.find(',') != std::string::npos || v.find('=') != std::string::npos) {
          r.error(it->second, field,
                  "a value may not hold `,` or `=` (FUNCTION's arguments are "
                  "passed as k=v,...)");
          continue;
        }
        parts.push_back(key + "=" + v);
      }
      s->model_args = fmt::format("{}", fmt::join(parts, ","));
    }
  }
  if (e["workloads"]) {
    if (auto w = r.get_string(e["workloads"], "e2e.workloads")) {
      s->workloads = *w;
      if (!fs::is_directory(*w)) r.error(e["workloads"], "e2e.workloads", fmt::format("{} is not a folder", *w));
    }
  }
  if (e["names"]) {
    if (auto v = string_list(r, e["names"], "e2e.names", {}, "")) s->names = *v;
  }
  if (e["variants"]) {
    if (auto v = string_list(r, e["variants"], "e2e.variants", k_variants, "a variant")) {
      s->variants.clear();
      for (auto& name : k_variants)  // table order, eager always (the reference)
        if (name == "eager" || std::find(v->begin(), v->end(), name) != v->end()) s->variants.push_back(name);
    }
  }
  if (e["must_beat"]) {
    std::vector<std::string> keys;
    for (auto& [k, _] : k_beats_variant) keys.push_back(k);
    if (auto v = string_list(r, e["must_beat"], "e2e.must_beat", keys, "a baseline")) {
      s->must_beat = *v;
      for (size_t i = 0; i < v->size(); ++i) {
        const std::string& needs = k_beats_variant.at((*v)[i]);
        if (std::find(s->variants.begin(), s->variants.end(), needs) == s->variants.end())
          r.error(e["must_beat"][i], fmt::format("e2e.must_beat[{}]", i),
                  fmt::format("beating {} needs the {} variant, which "
                              "e2e.variants leaves out",
                              (*v)[i], needs));
      }
    }
  }
  if (e["min_speedup"]) {
    if (auto v = r.get_number(e["min_speedup"], "e2e.min_speedup")) {
      if (*v <= 0)
        r.error(e["min_speedup"], "e2e.min_speedup",
                fmt::format("{}: expected a speedup above 0 (1.1: 10% faster)", *v));
      s->min_speedup = *v;
    }
  }
  if (e["min_predicted_fraction"]) {
    if (auto v = r.get_number(e["min_predicted_fraction"], "e2e.min_predicted_fraction")) {
      if (*v < 0 || *v > 2)
        r.error(e["min_predicted_fraction"], "e2e.min_predicted_fraction",
                fmt::format("{}: expected a fraction in [0, 2] (0.8: 80%)", *v));
      s->min_predicted_fraction = *v;
    }
  }
  if (e["max_regression"]) {
    if (auto v = r.get_fraction(e["max_regression"], "e2e.max_regression")) s->max_regression = *v;
  }
  if (YAML::Node t = e["tolerance"]) {
    if (r.check_map(t, "e2e.tolerance", {"rtol", "atol"}, {"rtol", "atol"})) {
      s->rtol = r.get_number(t["rtol"], "e2e.tolerance.rtol");
      s->atol = r.get_number(t["atol"], "e2e.tolerance.atol");
      if ((s->rtol && *s->rtol < 0) || (s->atol && *s->atol < 0))
        r.error(t, "e2e.tolerance", "rtol and atol must be 0 or more");
    }
  }
}

}  // namespace

e2e_spec parse_e2e_spec_text(const std::string& text, const std::string& path) {
  std::vector<spec_diagnostic> diags;
  yaml_reader r(path, &diags);
  e2e_spec s;
  s.path = path;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    r.error(source_loc{path, e.mark.line + 1, e.mark.column + 1}, "", "not valid YAML: " + e.msg);
  }
  if (diags.empty() && r.check_map(root, "", {"e2e"}, {"e2e"}) && root["e2e"]) parse_entry(r, root["e2e"], &s);
  if (diags.empty()) return s;
  std::string msg = fmt::format("{} has {} error{}:", path, diags.size(), diags.size() == 1 ? "" : "s");
  for (auto& d : diags) msg += "\n  " + d.str();
  throw user_error(msg);  // each line names file:line:column
}

bool is_e2e_file(const std::string& path) {
  if (!path.ends_with(".yaml") && !path.ends_with(".yml")) return false;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    YAML::Node root = YAML::LoadFile(path);
    return root.IsMap() && root["e2e"].IsDefined();
  } catch (const YAML::Exception&) { return false; }
}

e2e_spec load_e2e_spec(const std::string& path) { return parse_e2e_spec_text(read_file(path), path); }

}  // namespace kf::e2e
