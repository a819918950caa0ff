// The family table: every kernel family for every device, keyed by name. Add a family here (one line)
// after writing its lib/search/families/<name>_<device>.cpp.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/family.h"
#include "search/graph_match.h"
#include "spec/spec_parse.h"
#include "store/kernel_header.h"
#include "util/error.h"

namespace kf {

// Factories, one per family (each defined in its own file under lib/search/families/).
std::unique_ptr<family> make_row_softmax_cpu();
std::unique_ptr<family> make_group_norm_cpu();
std::unique_ptr<family> make_pool_cpu();
std::unique_ptr<family> make_adaptive_pool_cpu();
std::unique_ptr<family> make_row_softmax_cuda();
std::unique_ptr<family> make_group_norm_cuda();
std::unique_ptr<family> make_pool_cuda();
std::unique_ptr<family> make_adaptive_pool_cuda();
std::unique_ptr<family> make_pointwise_cuda();
std::unique_ptr<family> make_row_norm_cuda();
std::unique_ptr<family> make_pointwise_cpu();
std::unique_ptr<family> make_row_norm_cpu();
std::unique_ptr<family> make_col_softmax_cuda();
std::unique_ptr<family> make_col_softmax_cpu();
std::unique_ptr<family> make_group_norm_nhwc_cuda();
std::unique_ptr<family> make_generic_cpu();
std::unique_ptr<family> make_generic_cuda();

const std::vector<std::unique_ptr<family>>& families() {
  static const std::vector<std::unique_ptr<family>> table = [] {
    std::vector<std::unique_ptr<family>> t;
    t.push_back(make_row_softmax_cpu());
    t.push_back(make_group_norm_cpu());
    t.push_back(make_pool_cpu());
    t.push_back(make_adaptive_pool_cpu());
    t.push_back(make_row_softmax_cuda());
    t.push_back(make_group_norm_cuda());
    t.push_back(make_pool_cuda());
    t.push_back(make_adaptive_pool_cuda());
    t.push_back(make_pointwise_cuda());
    t.push_back(make_row_norm_cuda());
    t.push_back(make_pointwise_cpu());
    t.push_back(make_row_norm_cpu());
    t.push_back(make_col_softmax_cuda());
    t.push_back(make_col_softmax_cpu());
    t.push_back(make_group_norm_nhwc_cuda());
    t.push_back(make_generic_cpu());
    t.push_back(make_generic_cuda());
    return t;
  }();
  return table;
}

namespace {

// The names a spec's search.families may use (spec_parse.h's known_family_names): every family by base name
// (`row_softmax` selects row_softmax_cpu and row_softmax_cuda, see family_selected), then by full name.
std::vector<std::string> family_spec_names() {
  std::vector<std::string> base, full;
  auto add = [](std::vector<std::string>& v, const std::string& n) {
    if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
  };
  for (auto& f : families()) {
    std::string n = f->name(), suffix = fmt::format("_{}", device_kind_name(f->device()));
    if (n.ends_with(suffix)) add(base, n.substr(0, n.size() - suffix.size()));
    add(full, n);
  }
  for (auto& n : full) add(base, n);
  return base;
}

// spec sits below search: the table tells the spec parser its names at static initialization. Binaries that parse
// search.families link this file through families() (the search, the tests); one that did not would assert.
[[maybe_unused]] const bool k_family_names_installed = set_family_names_source(family_spec_names);

}  // namespace

const family* find_family(std::string_view name, device_kind device) {
  for (auto& f : families())
    if (f->name() == name && f->device() == device) return f.get();
  return nullptr;
}

bool selects(const workload_spec& spec, const family& f) {
  if (family_selected(spec, f.name())) return true;
  for (auto& alias : f.selected_by())
    if (std::find(spec.search.families.begin(), spec.search.families.end(), alias) != spec.search.families.end())
      return true;
  return false;
}

std::vector<const family*> covering_families(const workload_spec& spec, device_kind device) {
  std::vector<const family*> out, fallbacks;
  for (auto& f : families())
    if (f->device() == device && selects(spec, *f) && f->covers(spec, nullptr))
      (f->fallback() ? fallbacks : out).push_back(f.get());
  // With a search.families list, a selected fallback was named there.
  if (out.empty() || !spec.search.families.empty()) out.insert(out.end(), fallbacks.begin(), fallbacks.end());
  return out;
}

bool knobs_in_range(const family& f, const knob_values& v, std::string* why_not) {
  auto fail = [&](std::string m) {
    if (why_not) *why_not = std::move(m);
    return false;
  };
  auto ks = f.knobs();
  for (auto& k : ks) {
    auto it = v.find(k.name);
    if (it == v.end()) return fail(fmt::format("knob {} is not set", k.name));
    if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end())
      return fail(fmt::format("knob {}={} is not one of its values ({})", k.name, it->second, fmt::join(k.values, ", ")));
  }
  for (auto& [name, _] : v)
    if (std::none_of(ks.begin(), ks.end(), [&](const knob& k) { return k.name == name; })) {
      std::vector<std::string> names;
      for (auto& k : ks) names.push_back(k.name);
      return fail(fmt::format("{} has no knob {} (its knobs: {})", f.name(), name, fmt::join(names, ", ")));
    }
  return true;
}

bool knob_read(const family& f, const workload_spec& spec, const knob_values& v, const std::string& name) {
  for (auto& k : f.knobs()) {
    if (k.name != name) continue;
    for (auto& value : k.values) {
      auto w = v;
      w[name] = value;
      if (f.canonical_knobs(spec, w).at(name) != value) return false;
    }
    return true;
  }
  KF_ASSERT(false, "{} has no knob {}", f.name(), name);
}

std::string family_kernel_header(const family& f, const workload_spec& spec, const knob_values& v,
                                 const std::string& computes) {
  return format_kernel_header({f.name(), f.version(), f.canonical_knobs(spec, v), computes});
}

int knob_int(const knob_values& v, const std::string& name) {
  auto it = v.find(name);
  KF_ASSERT(it != v.end(), "knob {} missing", name);
  try {
    return std::stoi(it->second);
  } catch (...) {
    KF_ASSERT(false, "knob {}={} is not a number", name, it->second);
  }
}

int input_index(const workload_spec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].name == name) return static_cast<int>(i);
  KF_ASSERT(false, "input {} not in the spec (the matcher checked it)", name);
}

}  // namespace kf
