// Reporters: each renders a finished run_result in one format and writes it atomically. They never measure.
// The table (reporters()) is keyed by format name: "junit", "json", "markdown", "gbench", "html", "samples".
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_result.h"

namespace kf {

class reporter {
 public:
  virtual ~reporter() = default;
  virtual std::string_view format() const = 0;       // the table key, also the CLI flag (--junit, --json...)
  virtual std::string_view description() const = 0;  // one line for --help
  virtual std::string render(const run_result& r) const = 0;
  // Renders and writes with write_file_atomic (throws infra_error when the file cannot be written).
  void write(const run_result& r, const std::filesystem::path& path) const;
};

const std::vector<std::unique_ptr<reporter>>& reporters();
// Throws user_error with a suggestion for an unknown format.
const reporter& find_reporter(std::string_view format);

// The individual formats (also reachable through the table).
std::string render_junit(const run_result& r);
std::string render_json(const run_result& r);
std::string render_markdown(const run_result& r, size_t max_bytes = 64 * 1024);
std::string render_gbench(const run_result& r);
std::string render_html(const run_result& r);

}  // namespace kf
