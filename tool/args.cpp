#include "args.h"

#include <cmath>

#include <fmt/format.h>

#include "exec/sandbox.h"
#include "util/error.h"
#include "util/suggest.h"

namespace kf {

args::args(const std::vector<std::string>& argv, const std::vector<flag_def>& defs) {
  std::vector<std::string> names;
  for (auto& d : defs) names.push_back(d.name);
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      m_positional.insert(m_positional.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      m_positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const flag_def* def = nullptr;
    for (auto& d : defs)
      if (d.name == name) def = &d;
    if (!def) {
      std::string hint = did_you_mean(name, names);
      throw user_error(fmt::format("unknown option --{}{}", name, hint.empty() ? "" : fmt::format(" (did you mean --{}?)", hint)));
    }
    if (def->takes_value && !inline_value) {
      if (i + 1 >= argv.size()) throw user_error(fmt::format("option --{} needs a value ({})", name, def->value_name));
      value = argv[++i];
    } else if (!def->takes_value && inline_value) {
      throw user_error(fmt::format("option --{} takes no value", name));
    }
    m_values[name] = value;
  }
}

std::optional<std::string> args::get(const std::string& name) const {
  auto it = m_values.find(name);
  if (it == m_values.end()) return std::nullopt;
  return it->second;
}

std::string args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

double args::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  std::string s = *v;
  double scale = 1;
  if (!s.empty() && s.back() == '%') { scale = 0.01; s.pop_back(); }
  else if (s.size() > 2 && s.ends_with("ms")) { scale = 1e-3; s.resize(s.size() - 2); }
  else if (!s.empty() && s.back() == 's') { s.pop_back(); }
  else if (!s.empty() && s.back() == 'm') { scale = 60; s.pop_back(); }
  else if (!s.empty() && s.back() == 'h') { scale = 3600; s.pop_back(); }
  try {
    size_t used = 0;
    double d = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(d * scale)) throw std::invalid_argument(s);
    return d * scale;
  } catch (const std::exception&) {
    throw user_error(fmt::format("option --{}: expected a finite number, got '{}'", name, *v));
  }
}

double args::get_double_in(const std::string& name, double fallback, double lo, double hi, const char* unit) const {
  const double d = get_double(name, fallback);
  if (d < lo || d > hi)
    throw user_error(fmt::format("option --{}: expected {} from {} to {}, got '{}'", name, unit, lo, hi, get_or(name, "")));
  return d;
}

std::vector<std::string> args::get_list(const std::string& name) const {
  std::vector<std::string> out;
  auto v = get(name);
  if (!v) return out;
  for (size_t a = 0, b; a <= v->size(); a = b + 1) {
    b = v->find(',', a);
    if (b == std::string::npos) b = v->size();
    if (b > a) out.push_back(v->substr(a, b - a));
  }
  return out;
}

int args::get_int(const std::string& name, int fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    int i = std::stoi(*v, &used);
    if (used != v->size()) throw std::invalid_argument(*v);
    return i;
  } catch (const std::exception&) {
    throw user_error(fmt::format("option --{}: expected a whole number, got '{}'", name, *v));
  }
}

std::string flags_help(const std::vector<flag_def>& defs) {
  std::string out;
  for (auto& d : defs) {
    std::string left = d.takes_value ? fmt::format("--{} {}", d.name, d.value_name) : fmt::format("--{}", d.name);
    out += fmt::format("  {:<28} {}\n", left, d.help);
  }
  return out;
}

std::vector<flag_def> workloads_flags() {
  return {{"workloads", true, "the folder holding the specs (default workloads)", "DIR"},
          {"workloads-dir", true, "the same as --workloads", "DIR"}};
}

std::string workloads_folder(const args& a) {
  if (a.has("workloads") && a.has("workloads-dir"))
    throw user_error("--workloads and --workloads-dir name the same folder: give one");
  return a.get_or("workloads", a.get_or("workloads-dir", "workloads"));
}

flag_def sandbox_flag() {
  return {"sandbox", true,
          "the workers' protections around candidate code: on (default: every one the machine allows), strict "
          "(refuse to run candidates unless all are active) or off (debugging only); also $KFORGE_SANDBOX",
          "MODE"};
}

void apply_sandbox_flag(const args& a) {
  if (auto m = a.get("sandbox")) set_default_sandbox_mode(parse_sandbox_mode(*m, "--sandbox"));
  else (void)default_sandbox_mode();  // a bad $KFORGE_SANDBOX is a usage error before any work
}

}  // namespace kf
