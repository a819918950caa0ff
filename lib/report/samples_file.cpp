#include "report/samples_file.h"

#include <iterator>

#include <fmt/format.h>

#include "report/text_escape.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
using json = nlohmann::json;

namespace {

std::string quoted(const std::string& s) { return safe_dump(json(s)); }

void add_series(std::string& out, bool& first, const workload_result& w, const case_result& c, const impl_result& i,
                const char* which, const sample_series& s) {
  if (s.samples_us.empty()) return;
  out += first ? "\n" : ",\n";
  first = false;
  fmt::format_to(std::back_inserter(out), R"({{"workload":{},"case":{},"impl":{},"series":"{}","discarded":{},"samples_us":[)",
                 quoted(w.name), quoted(c.name), quoted(i.impl), which, s.discarded);
  for (size_t k = 0; k < s.samples_us.size(); ++k)
    fmt::format_to(std::back_inserter(out), "{}{:.6g}", k ? "," : "", s.samples_us[k]);
  out += "]}";
}

}  // namespace

std::string render_samples(const run_result& r) {
  // Written by hand, not through nlohmann: millions of numbers, and one series per line keeps it greppable.
  std::string out = fmt::format(R"({{"schema":"{}","gpu_key":{},"git_commit":{},"started_at":{},"series":[)",
                                k_samples_schema, quoted(r.env.gpu_key), quoted(r.env.git_commit), quoted(r.env.started_at));
  bool first = true;
  for (auto& w : r.workloads)
    for (auto& c : w.cases)
      for (auto& i : c.impls) {
        add_series(out, first, w, c, i, "cold", i.cold);
        add_series(out, first, w, c, i, "hot", i.hot);
      }
  out += first ? "]}\n" : "\n]}\n";
  return out;
}

int count_sample_series(const run_result& r) {
  int n = 0;
  for (auto& w : r.workloads)
    for (auto& c : w.cases)
      for (auto& i : c.impls) n += !i.cold.samples_us.empty() + !i.hot.samples_us.empty();
  return n;
}

int attach_samples(run_result& r, const json& j, const std::string& origin) {
  source_loc where{origin};
  if (!j.is_object() || j.value("schema", "") != k_samples_schema)
    throw user_error(where, fmt::format("not a kforge samples file (expected \"schema\": \"{}\")", k_samples_schema));
  if (!j.contains("series") || !j["series"].is_array()) throw user_error(where, "series: expected a list");
  int matched = 0;
  const json& all = j["series"];
  for (size_t k = 0; k < all.size(); ++k) {
    const json& s = all[k];
    try {
      std::string which = s.at("series").get<std::string>();
      if (which != "cold" && which != "hot")
        throw user_error(where, fmt::format("series[{}].series: expected cold or hot, got '{}'", k, which));
      auto* w = const_cast<workload_result*>(r.find_workload(s.at("workload").get<std::string>()));
      auto* c = w ? const_cast<case_result*>(w->find_case(s.at("case").get<std::string>())) : nullptr;
      impl_result* i = c ? c->find(s.at("impl").get<std::string>()) : nullptr;
      if (!i) continue;  // a series of a workload this result does not hold (another shard's)
      sample_series& dst = which == "hot" ? i->hot : i->cold;
      dst.samples_us = s.at("samples_us").get<std::vector<double>>();
      dst.discarded = s.value("discarded", dst.discarded);
      if (dst.stats.count == 0) dst.stats.count = static_cast<int>(dst.samples_us.size());
      ++matched;
    } catch (const json::exception& e) {
      throw user_error(where, fmt::format("series[{}]: {}", k, e.what()));
    }
  }
  return matched;
}

int load_samples(run_result& r, const std::string& path) {
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw user_error(source_loc{path}, "not valid JSON (expected a kforge samples file)");
  return attach_samples(r, j, path);
}

}  // namespace kf
