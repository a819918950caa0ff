#include "report/reporter.h"
#include "report/samples_file.h"
#include "report/text_escape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/suggest.h"

namespace kf {

void reporter::write(const run_result& r, const std::filesystem::path& path) const {
  write_file_atomic(path, render(r));
}

namespace {

// One adapter per format: the table stays data, the formats stay plain functions.
class function_reporter final : public reporter {
 public:
  function_reporter(std::string_view format, std::string_view description, std::string (*fn)(const run_result&))
      : m_format(format), m_description(description), m_fn(fn) {}
  std::string_view format() const override { return m_format; }
  std::string_view description() const override { return m_description; }
  std::string render(const run_result& r) const override { return m_fn(r); }

 private:
  std::string_view m_format, m_description;
  std::string (*m_fn)(const run_result&);
};

std::string markdown_default(const run_result& r) { return render_markdown(r); }

}  // namespace

const std::vector<std::unique_ptr<reporter>>& reporters() {
  static const std::vector<std::unique_ptr<reporter>> table = [] {
    std::vector<std::unique_ptr<reporter>> t;
    t.push_back(std::make_unique<function_reporter>("junit", "JUnit XML: a testsuite per workload, a testcase per check", render_junit));
    t.push_back(std::make_unique<function_reporter>("json", "the run record (schema kforge.run/1): summaries per series, no raw samples", render_json));
    t.push_back(std::make_unique<function_reporter>("markdown", "a table for a PR comment or $GITHUB_STEP_SUMMARY (< 64 KB)", markdown_default));
    t.push_back(std::make_unique<function_reporter>("gbench", "Google Benchmark JSON for existing dashboards", render_gbench));
    t.push_back(std::make_unique<function_reporter>("html", "a self-contained HTML explorer of results and search trees", render_html));
    t.push_back(std::make_unique<function_reporter>("samples", "the raw samples, one line per series (schema kforge.samples/1)", render_samples));
    return t;
  }();
  return table;
}

const reporter& find_reporter(std::string_view format) {
  std::vector<std::string> names;
  for (auto& r : reporters()) {
    if (r->format() == format) return *r;
    names.emplace_back(r->format());
  }
  std::string hint = did_you_mean(format, names);
  throw user_error(fmt::format("unknown report format '{}'{}; known: {}", format,
                               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint), fmt::join(names, ", ")));
}

std::string render_json(const run_result& r) { return safe_dump(to_json(r), 1) + "\n"; }

}  // namespace kf
