// Reading a workload spec (YAML, version 1) with strict validation: every problem in a file is collected
// and reported with file:line:column, the field's path and what was expected.
#pragma once
#include <string>
#include <vector>

#include "spec/baseline_registry.h"
#include "spec/spec.h"
#include "util/error.h"

namespace kf {

// The most dims a spec's tensor may have: the kernel ABI's kf_tensor holds that many (exec/kf_abi.h's KF_MAX_DIMS;
// exec, above spec, asserts that they agree).
constexpr int k_max_dims = 8;

struct spec_diagnostic {
  source_loc loc;
  std::string field;    // e.g. "graph[1].softmax.dim"; empty for file-level problems
  std::string message;  // what is wrong and what was expected
  std::string str() const;  // "file:line:col: field: message"
};

// Parses and validates the file at `path` into *out. Returns every diagnostic (empty: the spec is valid and
// *out is filled, with `path` and `hash` set). On errors *out holds what could be read.
std::vector<spec_diagnostic> parse_spec(const std::string& path, workload_spec* out);
// The same from text (the file name is used in locations and to check the spec's name).
std::vector<spec_diagnostic> parse_spec_text(const std::string& text, const std::string& path, workload_spec* out);

// A spec by name (workloads_dir/NAME.yaml) or by path (anything ending in .yaml/.yml or containing a '/').
// Throws user_error listing every diagnostic.
workload_spec load_spec(const std::string& name_or_path, const std::string& workloads_dir = "workloads");

// The spec files (*.yaml, *.yml) directly inside `dir`, sorted. Throws user_error when `dir` is not a folder.
std::vector<std::string> find_specs(const std::string& dir);
// The workloads a command was given (names or paths), or every spec in `dir` when none; throws user_error
// (naming `dir`) when there are none.
std::vector<std::string> workload_names(const std::vector<std::string>& given, const std::string& dir);
// load_spec of each, in order.
std::vector<workload_spec> load_specs(const std::vector<std::string>& names, const std::string& dir);

// The kernel family names a spec's `search.families` may use: by base name (`row_softmax` selects row_softmax_cpu
// and row_softmax_cuda), then by full name. spec sits below search, so the family table installs the list
// (search/families.cpp, at static initialization); asking before any did is a broken invariant.
const std::vector<std::string>& known_family_names();
using family_names_source = std::vector<std::string> (*)();
// Installs the source of known_family_names() (one source; returns true so it can initialize a constant).
bool set_family_names_source(family_names_source source);
// The libraries a candidate may be allowed to call. (The baseline names are the registry's: baseline_names() in
// baseline_registry.h.)
const std::vector<std::string>& library_names();

}  // namespace kf
