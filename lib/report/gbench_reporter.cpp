// Google Benchmark JSON (the `--benchmark_out_format=json` shape) so dashboards built for it (e.g.
// github-action-benchmark, compare.py) read kforge runs: one benchmark run per workload/case/impl, its
// real_time the median in us. kforge takes one series per implementation, so each is one run (repetitions 1,
// no aggregates): the sample count is `iterations`, and the spread goes in user counters (plain numbers a
// dashboard does not chart as times: noise is relative, the quartiles and the median's interval in us).
#include <fmt/format.h>

#include "report/reporter.h"
#include "report/text_escape.h"

namespace kf {
namespace {
using json = nlohmann::json;

json entry(const std::string& run_name, int family, const sample_series& s, double value) {
  return {{"name", run_name},
          {"family_index", family},
          {"per_family_instance_index", 0},
          {"run_name", run_name},
          {"run_type", "iteration"},
          {"repetitions", 1},
          {"repetition_index", 0},
          {"threads", 1},
          {"iterations", s.stats.count},
          {"real_time", value},
          {"cpu_time", value},
          {"time_unit", "us"}};
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
          json e = entry(name, family++, s, 0);
          e["error_occurred"] = true;
          e["error_message"] = fmt::format("{}: {}", impl_status_name(i.status), i.why.empty() ? "no samples" : i.why);
          benchmarks.push_back(e);
          continue;
        }
        json e = entry(name, family++, s, round_sig(s.stats.median_us));
        // User counters: numbers, not times (a dashboard charts real_time / cpu_time as times, these as values).
        e["noise"] = round_sig(s.stats.noise, 3);
        e["min_us"] = round_sig(s.stats.min_us);
        e["q1_us"] = round_sig(s.stats.q1_us);
        e["q3_us"] = round_sig(s.stats.q3_us);
        e["ci_lo_us"] = round_sig(s.stats.ci_lo_us);
        e["ci_hi_us"] = round_sig(s.stats.ci_hi_us);
        e["discarded"] = s.discarded;
        benchmarks.push_back(e);
      }
  return safe_dump(json{{"context", context}, {"benchmarks", benchmarks}}, 2) + "\n";
}

}  // namespace kf
