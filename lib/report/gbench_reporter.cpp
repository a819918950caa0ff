// Google Benchmark JSON (the `--benchmark_out_format=json` shape) so dashboards built for it (e.g.
// github-action-benchmark, compare.py) read kforge runs: a benchmark per workload/case/impl, time in us.
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "report/reporter.h"
#include "report/text_escape.h"

namespace kf {
namespace {
using json = nlohmann::json;

json entry(const std::string& run_name, int family, const sample_series& s, const char* aggregate, double value) {
  json e = {{"name", aggregate ? run_name + "_" + aggregate : run_name},
            {"family_index", family},
            {"per_family_instance_index", 0},
            {"run_name", run_name},
            {"run_type", aggregate ? "aggregate" : "iteration"},
            {"repetitions", s.stats.count},
            {"repetition_index", 0},
            {"threads", 1},
            {"iterations", s.stats.count},
            {"real_time", value},
            {"cpu_time", value},
            {"time_unit", "us"}};
  if (aggregate) {
    e.erase("repetition_index");
    e["aggregate_name"] = aggregate;
    e["aggregate_unit"] = std::string(aggregate) == "cv" ? "percentage" : "time";
  }
  return e;
}

}  // namespace

std::string render_gbench(const run_result& r) {
  json context = {{"date", r.env.started_at},
                  {"host_name", r.env.host},
                  {"executable", "kforge run"},
                  {"num_cpus", r.env.threads},
                  {"mhz_per_cpu", 0},
                  {"cpu_scaling_enabled", false},
                  {"caches", json::array()},
                  {"load_avg", json::array()},
                  {"library_build_type", "release"},
                  {"kforge_version", r.env.kforge_version},
                  {"gpu_key", r.env.gpu_key},
                  {"gpu_name", r.env.gpu_name},
                  {"git_commit", r.env.git_commit}};
  json benchmarks = json::array();
  int family = 0;
  for (auto& w : r.workloads)
    for (auto& c : w.cases)
      for (auto& i : c.impls) {
        std::string name = fmt::format("{}/{}/{}", w.name, c.name, i.impl);
        const sample_series& s = i.series(c.metric);
        if (i.status != impl_status::ok || s.stats.count == 0) {
          json e = entry(name, family++, s, nullptr, 0);
          e["error_occurred"] = true;
          e["error_message"] = fmt::format("{}: {}", impl_status_name(i.status), i.why.empty() ? "no samples" : i.why);
          benchmarks.push_back(e);
          continue;
        }
        double mean = std::accumulate(s.samples_us.begin(), s.samples_us.end(), 0.0) / double(s.samples_us.size());
        double var = 0;
        for (double x : s.samples_us) var += (x - mean) * (x - mean);
        double stddev = s.samples_us.size() > 1 ? std::sqrt(var / double(s.samples_us.size() - 1)) : 0;
        benchmarks.push_back(entry(name, family, s, nullptr, s.stats.median_us));
        benchmarks.push_back(entry(name, family, s, "mean", mean));
        benchmarks.push_back(entry(name, family, s, "median", s.stats.median_us));
        benchmarks.push_back(entry(name, family, s, "stddev", stddev));
        benchmarks.push_back(entry(name, family, s, "cv", mean > 0 ? stddev / mean : 0));
        benchmarks.push_back(entry(name, family, s, "min", s.stats.min_us));
        ++family;
      }
  return safe_dump(json{{"context", context}, {"benchmarks", benchmarks}}, 2) + "\n";
}

}  // namespace kf
