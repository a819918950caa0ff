// kforge validate: reads workload specs (files or folders, default workloads/) and reports every error with
// file:line:column, the field and what was expected. Exit 0 when all are valid, 2 otherwise.
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "spec/ops.h"
#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/term.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"json", false, "print the result as JSON on stdout"},
    {"ops", false, "list the ops a graph may use, with their arguments, and exit"},
};

struct checked {
  std::string path;
  workload_spec spec;
  std::vector<spec_diagnostic> diags;
};

void print_ops() {
  for (auto& op : op_table()) {
    std::string args;
    for (auto& a : op.args) {
      args += fmt::format("{}{}{}", args.empty() ? "" : ", ", a.name, a.required ? "" : "?");
    }
    std::printf("%s\n", fmt::format("  {:<20} {{{}}}  = {}", op.name, args, op.summary).c_str());
  }
}

std::vector<std::string> collect(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      auto found = find_specs(p);
      if (found.empty()) throw user_error(fmt::format("no spec files (*.yaml) in {}", p));
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(p)) {
      files.push_back(p);
    } else {
      throw user_error(fmt::format("{} does not exist (expected a spec file or a folder of them)", p));
    }
  }
  return files;
}

// Workload names are also folder names: two files with one name would share stored kernels.
void check_unique_names(std::vector<checked>& all) {
  std::map<std::string, std::string> first;
  for (auto& c : all) {
    if (!c.diags.empty() || c.spec.name.empty()) continue;
    auto [it, fresh] = first.emplace(c.spec.name, c.path);
    if (!fresh)
      c.diags.push_back({source_loc{c.path, 0, 0}, "name", fmt::format("`{}` is also the name of {} (expected unique names)", c.spec.name, it->second)});
  }
}

nlohmann::json to_report_json(const std::vector<checked>& all, size_t n_valid) {
  nlohmann::json specs = nlohmann::json::array();
  for (auto& c : all) {
    nlohmann::json errors = nlohmann::json::array();
    for (auto& d : c.diags)
      errors.push_back({{"file", d.loc.file}, {"line", d.loc.line}, {"column", d.loc.column}, {"field", d.field}, {"message", d.message}});
    nlohmann::json s = {{"path", c.path}, {"name", c.spec.name}, {"valid", c.diags.empty()}, {"errors", errors}};
    if (c.diags.empty()) s["cases"] = c.spec.cases.size(), s["hash"] = c.spec.hash;
    specs.push_back(s);
  }
  return {{"specs", specs}, {"valid", n_valid}, {"invalid", all.size() - n_valid}};
}

}  // namespace

std::string validate_help() {
  return "usage: kforge validate [PATH...] [options]\n\n"
         "Checks workload specs (files, or folders of *.yaml; default: workloads/) and reports every problem as\n"
         "file:line:column: error: field: message.\n\noptions:\n" + flags_help(k_flags) +
         "\nexit codes: 0 all specs valid, 2 some spec is invalid (or a path is missing)\n";
}

int validate_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  if (a.has("ops")) {
    print_ops();
    return exit_ok;
  }
  std::vector<std::string> paths = a.positional();
  if (paths.empty()) paths.push_back("workloads");
  std::vector<checked> all;
  for (auto& f : collect(paths)) {
    checked c{f, {}, {}};
    c.diags = parse_spec(f, &c.spec);
    all.push_back(std::move(c));
  }
  check_unique_names(all);
  size_t n_valid = 0, n_errors = 0;
  for (auto& c : all) {
    n_valid += c.diags.empty();
    n_errors += c.diags.size();
  }
  if (a.has("json")) {
    std::printf("%s\n", to_report_json(all, n_valid).dump(2).c_str());
    return n_valid == all.size() ? exit_ok : exit_usage;
  }
  for (auto& c : all) {
    if (c.diags.empty()) {
      size_t gated = 0;
      for (auto& k : c.spec.cases) gated += k.gate;
      std::printf("%s\n", fmt::format("{} {}: {} ({} inputs, {} ops, {} cases, {} gated)", term::green("ok"), c.path,
                                      c.spec.name, c.spec.inputs.size(), c.spec.graph.size(), c.spec.cases.size(), gated).c_str());
      continue;
    }
    for (auto& d : c.diags) {
      std::string where = d.loc.str().empty() ? c.path : d.loc.str();
      std::printf("%s\n", fmt::format("{}: {} {}{}", where, term::red("error:"), d.field.empty() ? "" : d.field + ": ", d.message).c_str());
    }
  }
  std::printf("%s\n", fmt::format("{} spec{} checked: {} valid, {} invalid ({} error{})", all.size(), all.size() == 1 ? "" : "s",
                                  n_valid, all.size() - n_valid, n_errors, n_errors == 1 ? "" : "s").c_str());
  return n_valid == all.size() ? exit_ok : exit_usage;
}

}  // namespace kf
