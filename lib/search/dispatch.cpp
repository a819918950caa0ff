#include "search/dispatch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>

#include <fmt/format.h>

#include "store/kernel_header.h"
#include "util/error.h"
#include "util/hash.h"

namespace kf {
namespace {

// Cases grouped by equal input bytes, smallest first: a run of cases never splits a group.
struct size_group {
  int64_t bytes = 0;
  std::vector<std::string> cases;
};

std::vector<size_group> size_groups(const std::map<std::string, int64_t>& case_bytes) {
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (auto& [c, b] : case_bytes) sorted.emplace_back(b, c);
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_group> out;
  for (auto& [b, c] : sorted) {
    if (out.empty() || out.back().bytes != b) out.push_back({b, {}});
    out.back().cases.push_back(c);
  }
  return out;
}

// Halfway, geometrically, between two sizes: at least `lo`, below `hi`.
int64_t threshold_between(int64_t lo, int64_t hi) {
  const long double mid = std::sqrt(static_cast<long double>(std::max<int64_t>(lo, 1)) * static_cast<long double>(hi));
  return std::clamp(static_cast<int64_t>(std::floor(mid)), lo, hi - 1);
}

bool is_word(const std::string& s) {
  return !s.empty() && s.find_first_of(" =/:@") == std::string::npos;
}

}  // namespace

int64_t input_bytes(const workload_spec& spec, const case_spec& c) {
  int64_t total = 0;
  for (const auto& in : spec.inputs) {
    int64_t n = 1;
    for (int64_t d : concrete_shape(in, c)) n *= d;
    total += n * dtype_size(in.type);
  }
  return total;
}

std::optional<dispatch_plan> plan_dispatch(const std::map<int64_t, std::map<std::string, double>>& times,
                                           const std::map<std::string, int64_t>& case_bytes,
                                           const dispatch_options& o) {
  const auto groups = size_groups(case_bytes);
  const size_t g = groups.size();
  if (o.max_parts < 2 || g < 2) return std::nullopt;
  // log time of each usable candidate summed over each group (a candidate must have every case)
  std::vector<int64_t> ids;
  std::vector<std::vector<double>> logs;  // [candidate][group]
  for (auto& [id, per_case] : times) {
    std::vector<double> row(g, 0.0);
    bool all = true;
    for (size_t k = 0; k < g && all; ++k)
      for (auto& c : groups[k].cases) {
        auto it = per_case.find(c);
        if (it == per_case.end() || !(it->second > 0) || !std::isfinite(it->second)) {
          all = false;
          break;
        }
        row[k] += std::log(it->second);
      }
    if (!all) continue;
    ids.push_back(id);
    logs.push_back(std::move(row));
  }
  if (ids.empty()) return std::nullopt;
  // prefix sums of each candidate's log times over the groups, and of the case counts
  std::vector<std::vector<double>> prefix(ids.size(), std::vector<double>(g + 1, 0.0));
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t k = 0; k < g; ++k) prefix[i][k + 1] = prefix[i][k] + logs[i][k];
  std::vector<size_t> counted(g + 1, 0);
  for (size_t k = 0; k < g; ++k) counted[k + 1] = counted[k] + groups[k].cases.size();
  auto cost = [&](size_t cand, size_t a, size_t b) { return prefix[cand][b] - prefix[cand][a]; };  // groups [a, b)
  auto cases_in = [&](size_t a, size_t b) { return static_cast<double>(counted[b] - counted[a]); };
  size_t single = 0;
  for (size_t i = 1; i < ids.size(); ++i)
    if (cost(i, 0, g) < cost(single, 0, g)) single = i;
  const double n_all = cases_in(0, g);

  // Each run's candidate: the fastest over it, or the best single candidate unless that one is part_gain slower.
  std::vector<std::vector<size_t>> pick(g + 1, std::vector<size_t>(g + 1, single));
  for (size_t a = 0; a < g; ++a)
    for (size_t b = a + 1; b <= g; ++b) {
      size_t best = single;
      for (size_t i = 0; i < ids.size(); ++i)
        if (cost(i, a, b) < cost(best, a, b)) best = i;
      if (std::exp((cost(single, a, b) - cost(best, a, b)) / cases_in(a, b)) >= 1.0 + o.part_gain) pick[a][b] = best;
    }
  // Dynamic programming over the cuts: total[k][b] is the least cost of groups [0, b) in k runs.
  const size_t max_runs = std::min<size_t>(static_cast<size_t>(o.max_parts), g);
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> total(max_runs + 1, std::vector<double>(g + 1, inf));
  std::vector<std::vector<size_t>> from(max_runs + 1, std::vector<size_t>(g + 1, 0));
  total[0][0] = 0;
  for (size_t k = 1; k <= max_runs; ++k)
    for (size_t b = 1; b <= g; ++b)
      for (size_t a = k - 1; a < b; ++a) {
        if (total[k - 1][a] == inf) continue;
        const double c = total[k - 1][a] + cost(pick[a][b], a, b);
        if (c < total[k][b]) total[k][b] = c, from[k][b] = a;
      }
  struct run { size_t a, b, cand; };
  std::vector<run> best_runs;
  double best_cost = cost(single, 0, g);
  for (size_t k = 2; k <= max_runs; ++k) {
    if (total[k][g] == inf) continue;
    std::vector<run> runs;  // walked back from the end, then runs of one candidate merged
    for (size_t b = g, kk = k; kk > 0; --kk) {
      const size_t a = from[kk][b];
      runs.push_back({a, b, pick[a][b]});
      b = a;
    }
    std::reverse(runs.begin(), runs.end());
    std::vector<run> merged;
    for (auto& r : runs) {
      if (!merged.empty() && merged.back().cand == r.cand) merged.back().b = r.b;
      else merged.push_back(r);
    }
    if (merged.size() < 2) continue;
    const double c = total[k][g];
    if (c < best_cost - 1e-12 ||
        (std::abs(c - best_cost) <= 1e-12 && !best_runs.empty() && merged.size() < best_runs.size()))
      best_cost = c, best_runs = merged;
  }
  if (best_runs.size() < 2) return std::nullopt;
  dispatch_plan p;
  p.single = ids[single];
  p.single_us = std::exp(cost(single, 0, g) / n_all);
  p.planned_us = std::exp(best_cost / n_all);
  if (p.planned_us > p.single_us * (1.0 - o.min_gain)) return std::nullopt;
  for (size_t i = 0; i < best_runs.size(); ++i) {
    const auto& r = best_runs[i];
    p.parts.push_back(ids[r.cand]);
    if (i + 1 < best_runs.size()) p.up_to.push_back(threshold_between(groups[r.b - 1].bytes, groups[r.b].bytes));
    for (size_t k = r.a; k < r.b; ++k)
      for (auto& c : groups[k].cases) p.case_part[c] = i;
  }
  return p;
}

knob_values dispatch_knobs(const std::vector<dispatch_part>& parts) {
  knob_values out;
  out["parts"] = std::to_string(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    KF_ASSERT(is_word(p.family), "dispatch part family `{}` is not one word", p.family);
    std::string v = fmt::format("{}@{}", p.family, p.version);
    for (auto& [k, x] : p.knobs) {
      KF_ASSERT(is_word(k) && is_word(x), "dispatch part knob {}={} cannot be written in one word", k, x);
      v += fmt::format("/{}:{}", k, x);
    }
    out[fmt::format("p{}", i)] = v;
    if (i + 1 < parts.size()) {
      KF_ASSERT(p.up_to.has_value(), "dispatch part {} of {} has no threshold", i, parts.size());
      out[fmt::format("upto{}", i)] = std::to_string(*p.up_to);
    }
  }
  return out;
}

std::optional<std::vector<dispatch_part>> parse_dispatch_knobs(const knob_values& knobs, std::string* why) {
  auto fail = [&](std::string m) -> std::optional<std::vector<dispatch_part>> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  auto number = [](const std::string& s, int64_t* v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return false;
    *v = std::stoll(s);
    return true;
  };
  int64_t n = 0;
  auto it = knobs.find("parts");
  if (it == knobs.end() || !number(it->second, &n) || n < 2 || n > 16)
    return fail("expected parts=N (2 to 16) among the knobs");
  if (knobs.size() != static_cast<size_t>(2 * n))
    return fail(fmt::format("expected parts, p0..p{} and upto0..upto{} and nothing else", n - 1, n - 2));
  std::vector<dispatch_part> out;
  for (int64_t i = 0; i < n; ++i) {
    auto p = knobs.find(fmt::format("p{}", i));
    if (p == knobs.end()) return fail(fmt::format("p{} is missing", i));
    const std::string& v = p->second;
    const size_t at = v.find('@');
    size_t slash = v.find('/', at == std::string::npos ? 0 : at);
    int64_t version = 0;
    if (at == std::string::npos || at == 0 || !number(v.substr(at + 1, slash - at - 1), &version))
      return fail(fmt::format("p{}={}: expected <family>@<version>/<knob>:<value>/...", i, v));
    dispatch_part part;
    part.family = v.substr(0, at);
    part.version = static_cast<int>(version);
    while (slash != std::string::npos) {
      const size_t next = v.find('/', slash + 1);
      const std::string kv = v.substr(slash + 1, next == std::string::npos ? std::string::npos : next - slash - 1);
      const size_t colon = kv.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == kv.size())
        return fail(fmt::format("p{}: `{}` is not <knob>:<value>", i, kv));
      part.knobs[kv.substr(0, colon)] = kv.substr(colon + 1);
      slash = next;
    }
    if (i + 1 < n) {
      auto u = knobs.find(fmt::format("upto{}", i));
      int64_t bytes = 0;
      if (u == knobs.end() || !number(u->second, &bytes)) return fail(fmt::format("upto{} (bytes) is missing", i));
      if (!out.empty() && out.back().up_to && bytes <= *out.back().up_to)
        return fail(fmt::format("upto{}={} is not above upto{}", i, bytes, i - 1));
      part.up_to = bytes;
    }
    out.push_back(std::move(part));
  }
  return out;
}

std::string compose_dispatch(const std::vector<std::string>& sources, const std::vector<int64_t>& up_to) {
  KF_ASSERT(sources.size() >= 2 && up_to.size() + 1 == sources.size(), "{} parts with {} thresholds",
            sources.size(), up_to.size());
  // Every part's system headers (and kf_abi.h) come first, at global scope: inside a part's namespace its own
  // #include lines are then no-ops (include guards), and nothing of a header lands in the namespace.
  static const std::regex include_re(R"(^[ \t]*#[ \t]*include[ \t]*(<[^>\n]+>|"kf_abi\.h"))", std::regex::multiline);
  static const std::regex define_re(R"(^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*))", std::regex::multiline);
  std::vector<std::string> includes = {"\"kf_abi.h\"", "<stdint.h>"};
  for (const auto& s : sources)
    for (auto it = std::sregex_iterator(s.begin(), s.end(), include_re); it != std::sregex_iterator(); ++it)
      if (std::find(includes.begin(), includes.end(), (*it)[1].str()) == includes.end()) includes.push_back((*it)[1]);
  std::string out = "// dispatch: each part below is a whole candidate of its family, its names in a namespace of its "
                    "own and its kf_launch renamed;\n// the kf_launch at the end picks a part by the bytes of the "
                    "inputs it receives.\n";
  for (auto& i : includes) out += "#include " + i + "\n";
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& s = sources[i];
    out += fmt::format("\n// ---- part {} ----\n#define kf_launch kf_launch_part{}\nnamespace kf_part{} {{\n", i, i, i);
    out += s;
    if (!s.empty() && s.back() != '\n') out += "\n";
    out += fmt::format("}}  // namespace kf_part{}\n#undef kf_launch\n", i);
    std::vector<std::string> macros;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), define_re); it != std::sregex_iterator(); ++it)
      if (std::find(macros.begin(), macros.end(), (*it)[1].str()) == macros.end()) macros.push_back((*it)[1]);
    std::sort(macros.begin(), macros.end());
    for (auto& m : macros) out += "#undef " + m + "\n";
  }
  out += R"(
// ---- the choice ----
static inline int64_t kf_dispatch_bytes(const kf_tensor* t, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    int64_t count = 1;
    for (int d = 0; d < t[i].ndim; ++d) count *= t[i].shape[d];
    const int dtype = t[i].dtype;
    const int64_t size = dtype == KF_FLOAT64 || dtype == KF_INT64 ? 8
                         : dtype == KF_FLOAT32 || dtype == KF_INT32 ? 4
                         : dtype == KF_UINT8 || dtype == KF_BOOL ? 1 : 2;
    total += count * size;
  }
  return total;
}

extern "C" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  const int64_t bytes = kf_dispatch_bytes(inputs, n_inputs);
)";
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string call = fmt::format("kf_part{}::kf_launch_part{}(inputs, n_inputs, outputs, n_outputs, stream)", i, i);
    if (i < up_to.size()) out += fmt::format("  if (bytes <= {}) return {};\n", up_to[i], call);
    else out += fmt::format("  return {};\n", call);
  }
  out += "}\n";
  return out;
}

std::optional<std::string> emit_dispatch(const workload_spec& spec, device_kind device,
                                         const std::vector<dispatch_part>& parts, std::string* why) {
  auto fail = [&](std::string m) -> std::optional<std::string> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  if (parts.size() < 2) return fail("a dispatch kernel needs two parts or more");
  std::vector<std::string> sources;
  std::vector<int64_t> up_to;
  std::string computes;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const family* f = find_family(p.family, device);
    if (!f) return fail(fmt::format("part {}: no family {} for the {} device", i, p.family, device_kind_name(device)));
    if (f->version() != p.version)
      return fail(fmt::format("part {}: {} is at version {}, the part names version {}", i, p.family, f->version(),
                              p.version));
    std::string w;
    if (!f->valid(p.knobs, spec, &w)) return fail(fmt::format("part {}: {} rejects its knobs: {}", i, p.family, w));
    std::string src = f->emit(spec, p.knobs);
    if (auto h = parse_kernel_header(src); h && computes.empty()) computes = h->computes;
    sources.push_back(std::move(src));
    if (i + 1 < parts.size()) {
      if (!p.up_to) return fail(fmt::format("part {} has no threshold", i));
      up_to.push_back(*p.up_to);
    }
  }
  // The header, then a blank line: the lines right after a header are a stored winner's provenance.
  return format_kernel_header({k_dispatch_family, k_dispatch_version, dispatch_knobs(parts), computes}) + "\n" +
         compose_dispatch(sources, up_to);
}

std::optional<candidate> dispatch_candidate(const workload_spec& spec, device_kind device,
                                            const std::vector<const candidate*>& parts,
                                            const std::vector<int64_t>& up_to, const std::string& origin,
                                            std::string* why) {
  std::vector<dispatch_part> ps;
  for (size_t i = 0; i < parts.size(); ++i) {
    const family* f = find_family(parts[i]->family, device);
    if (!f) {
      if (why) *why = fmt::format("part {} has no family of the {} device", i, device_kind_name(device));
      return std::nullopt;
    }
    dispatch_part p{f->name(), f->version(), f->canonical_knobs(spec, parts[i]->knobs), std::nullopt};
    if (i < up_to.size()) p.up_to = up_to[i];
    ps.push_back(std::move(p));
  }
  auto source = emit_dispatch(spec, device, ps, why);
  if (!source) return std::nullopt;
  candidate c;
  c.family = k_dispatch_family;
  c.knobs = dispatch_knobs(ps);
  c.source = std::move(*source);
  c.source_hash = sha256_hex(c.source);
  c.origin = origin;
  return c;
}

}  // namespace kf
