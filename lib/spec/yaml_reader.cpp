#include "spec/yaml_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "util/suggest.h"

namespace kf {
namespace {

const std::regex k_int_re(R"([-+]?[0-9]+)");
const std::regex k_float_re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");

std::string quoted_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ("`" + v[i] + "`");
  return s;
}

std::optional<double> parse_double(const std::string& s) {
  if (s == ".inf" || s == "+.inf" || s == ".Inf") return INFINITY;
  if (s == "-.inf" || s == "-.Inf") return -INFINITY;
  if (s == ".nan" || s == ".NaN") return NAN;
  if (!std::regex_match(s, k_float_re)) return std::nullopt;
  return std::strtod(s.c_str(), nullptr);
}

}  // namespace

source_loc yaml_reader::loc(const YAML::Node& n) const {
  if (!n.IsDefined()) return {m_file, 0, 0};
  YAML::Mark m = n.Mark();
  if (m.line < 0) return {m_file, 0, 0};
  return {m_file, m.line + 1, m.column + 1};
}

void yaml_reader::error(const YAML::Node& at, const std::string& field, std::string message) {
  error(loc(at), field, std::move(message));
}

void yaml_reader::error(const source_loc& at, const std::string& field, std::string message) {
  m_diags->push_back({at, field, std::move(message)});
}

bool yaml_reader::is_null(const YAML::Node& n) { return !n.IsDefined() || n.IsNull(); }

bool yaml_reader::is_plain_scalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

std::string yaml_reader::describe(const YAML::Node& n) {
  if (is_null(n)) return "nothing";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (!is_plain_scalar(n)) return fmt::format("the string \"{}\"", n.Scalar());
  const std::string& s = n.Scalar();
  if (std::regex_match(s, k_float_re)) return s;
  if (s == "true" || s == "false") return s;
  return fmt::format("`{}`", s);
}

bool yaml_reader::check_map(const YAML::Node& n, const std::string& field, const std::vector<std::string>& allowed,
                            const std::vector<std::string>& required) {
  if (!n.IsMap()) {
    error(n, field, fmt::format("expected a mapping, got {}", describe(n)));
    return false;
  }
  std::set<std::string> seen;
  std::string prefix = field.empty() ? "" : field + ".";
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      error(it->first, field, "expected plain keys (names), got " + describe(it->first));
      continue;
    }
    std::string key = it->first.Scalar();
    if (!seen.insert(key).second) {
      error(it->first, prefix + key, fmt::format("duplicate key `{}`", key));
      continue;
    }
    bool known = false;
    for (auto& a : allowed) known = known || a == key;
    if (known) continue;
    std::string hint = did_you_mean(key, allowed);
    error(it->first, prefix + key,
          hint.empty() ? fmt::format("unknown field `{}` (expected one of {})", key, quoted_list(allowed))
                       : fmt::format("unknown field `{}`; did you mean `{}`?", key, hint));
  }
  for (auto& r : required)
    if (!seen.count(r)) error(n, field, fmt::format("missing required field `{}`", r));
  return true;
}

bool yaml_reader::check_list(const YAML::Node& n, const std::string& field) {
  if (n.IsSequence()) return true;
  error(n, field, fmt::format("expected a list, got {}", describe(n)));
  return false;
}

std::optional<int64_t> yaml_reader::get_int(const YAML::Node& n, const std::string& field) {
  if (is_plain_scalar(n) && !n.IsNull() && std::regex_match(n.Scalar(), k_int_re)) {
    errno = 0;
    long long v = std::strtoll(n.Scalar().c_str(), nullptr, 10);
    if (errno != ERANGE) return v;
    error(n, field, fmt::format("integer {} is out of range", n.Scalar()));
    return std::nullopt;
  }
  error(n, field, fmt::format("expected an integer, got {}", describe(n)));
  return std::nullopt;
}

std::optional<double> yaml_reader::get_number(const YAML::Node& n, const std::string& field) {
  if (is_plain_scalar(n) && !n.IsNull())
    if (auto v = parse_double(n.Scalar())) {
      if (std::isfinite(*v)) return v;
      error(n, field, fmt::format("expected a finite number, got {}", n.Scalar()));
      return std::nullopt;
    }
  error(n, field, fmt::format("expected a number, got {}", describe(n)));
  return std::nullopt;
}

std::optional<double> yaml_reader::get_fill(const YAML::Node& n, const std::string& field) {
  if (n.IsScalar() && !n.IsNull()) {  // "-inf" quoted too (how kforge capture writes it)
    const std::string& s = n.Scalar();
    if (s == "inf" || s == "+inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (auto v = parse_double(s); v && !std::isnan(*v)) return v;
  }
  error(n, field, fmt::format("expected a number, -inf or inf, got {}", describe(n)));
  return std::nullopt;
}

std::optional<bool> yaml_reader::get_bool(const YAML::Node& n, const std::string& field) {
  if (is_plain_scalar(n) && !n.IsNull()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  error(n, field, fmt::format("expected true or false, got {}", describe(n)));
  return std::nullopt;
}

std::optional<std::string> yaml_reader::get_string(const YAML::Node& n, const std::string& field) {
  if (n.IsScalar() && !n.IsNull()) return n.Scalar();
  error(n, field, fmt::format("expected a string, got {}", describe(n)));
  return std::nullopt;
}

std::optional<dtype> yaml_reader::get_dtype(const YAML::Node& n, const std::string& field) {
  auto s = get_string(n, field);
  if (!s) return std::nullopt;
  if (auto t = parse_dtype(*s)) return t;
  std::string hint = did_you_mean(*s, dtype_names());
  error(n, field, hint.empty() ? fmt::format("unknown dtype `{}` (expected one of float32, float16, bfloat16, float64, int32, int64, uint8, bool)", *s)
                               : fmt::format("unknown dtype `{}`; did you mean `{}`?", *s, hint));
  return std::nullopt;
}

std::optional<std::string> yaml_reader::get_choice(const YAML::Node& n, const std::string& field,
                                                   const std::vector<std::string>& choices, const std::string& what) {
  auto s = get_string(n, field);
  if (!s) return std::nullopt;
  for (auto& c : choices)
    if (c == *s) return s;
  std::string hint = did_you_mean(*s, choices);
  error(n, field, hint.empty() ? fmt::format("unknown {} `{}` (expected one of {})", what, *s, quoted_list(choices))
                               : fmt::format("unknown {} `{}`; did you mean `{}`?", what, *s, hint));
  return std::nullopt;
}

std::optional<std::vector<int64_t>> yaml_reader::get_int_list(const YAML::Node& n, const std::string& field,
                                                               bool scalar_ok) {
  if (scalar_ok && n.IsScalar()) {
    auto v = get_int(n, field);
    if (!v) return std::nullopt;
    return std::vector<int64_t>{*v};
  }
  if (!n.IsSequence()) {
    error(n, field, fmt::format("expected {}a list of integers, got {}", scalar_ok ? "an integer or " : "", describe(n)));
    return std::nullopt;
  }
  std::vector<int64_t> out;
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    auto v = get_int(n[i], fmt::format("{}[{}]", field, i));
    ok = ok && v.has_value();
    if (v) out.push_back(*v);
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<double> yaml_reader::get_fraction(const YAML::Node& n, const std::string& field) {
  const char* expected = "expected a fraction in [0, 1) or a percentage like 5%";
  if (!n.IsScalar() || n.IsNull()) {
    error(n, field, fmt::format("{}, got {}", expected, describe(n)));
    return std::nullopt;
  }
  std::string s = n.Scalar();
  bool percent = !s.empty() && s.back() == '%';
  if (percent) s.pop_back();
  auto v = parse_double(s);
  if (!v || !std::isfinite(*v)) {
    error(n, field, fmt::format("{}, got {}", expected, describe(n)));
    return std::nullopt;
  }
  double f = percent ? *v / 100.0 : *v;
  if (f < 0 || f >= 1) {
    error(n, field, fmt::format("{}, got {}{}", expected, n.Scalar(), !percent && *v >= 1 ? fmt::format(" (for {}% write `{}%`)", *v, *v) : ""));
    return std::nullopt;
  }
  return f;
}

std::optional<double> yaml_reader::get_seconds(const YAML::Node& n, const std::string& field) {
  const char* expected = "expected a duration like 90, 90s, 30m or 2h";
  if (!n.IsScalar() || n.IsNull()) {
    error(n, field, fmt::format("{}, got {}", expected, describe(n)));
    return std::nullopt;
  }
  std::string s = n.Scalar();
  double unit = 1;
  if (!s.empty() && (s.back() == 's' || s.back() == 'm' || s.back() == 'h')) {
    unit = s.back() == 'm' ? 60 : s.back() == 'h' ? 3600 : 1;
    s.pop_back();
  }
  auto v = parse_double(s);
  if (!v || !std::isfinite(*v) || *v < 0) {
    error(n, field, fmt::format("{}, got {}", expected, describe(n)));
    return std::nullopt;
  }
  return *v * unit;
}

}  // namespace kf
