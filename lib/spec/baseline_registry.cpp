// The baseline registry: see baseline_registry.h.
#include "spec/baseline_registry.h"

#include <algorithm>

#include "util/error.h"

namespace kf {
namespace {

struct registry {
  std::vector<baseline> entries;
  std::vector<std::string> names;  // entries' names, kept beside them for baseline_names()'s reference
};

registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

bool baseline::runs_on(std::string_view device_kind) const {
  return devices.empty() || std::find(devices.begin(), devices.end(), device_kind) != devices.end();
}

const std::vector<baseline>& registered_baselines() { return the_registry().entries; }

const baseline* find_baseline(std::string_view name) {
  for (const auto& b : registered_baselines())
    if (b.name == name) return &b;
  return nullptr;
}

const std::vector<std::string>& baseline_names() {
  KF_ASSERT(!the_registry().names.empty(),
            "no baselines registered: the program's main calls register_baselines() (baselines/register.h)");
  return the_registry().names;
}

std::vector<std::string> default_baseline_names() {
  std::vector<std::string> out;
  for (const auto& b : registered_baselines())
    if (b.by_default) out.push_back(b.name);
  return out;
}

void register_baseline(baseline b) {
  KF_ASSERT(!b.name.empty(), "a baseline needs a name");
  KF_ASSERT(!find_baseline(b.name), "baseline {} registered twice", b.name);
  registry& r = the_registry();
  r.names.push_back(b.name);
  r.entries.push_back(std::move(b));
}

void unregister_baseline(std::string_view name) {
  registry& r = the_registry();
  auto it = std::find_if(r.entries.begin(), r.entries.end(), [&](const baseline& b) { return b.name == name; });
  KF_ASSERT(it != r.entries.end(), "baseline {} is not registered", name);
  r.entries.erase(it);
  r.names.erase(std::find(r.names.begin(), r.names.end(), name));
}

bool baseline_skipped(const nlohmann::json& impl, std::string* why) {
  if (!impl.is_object() || !impl.contains("skipped") || !impl["skipped"].is_string()) return false;
  if (why) *why = impl["skipped"].get<std::string>();
  return true;
}

baseline_preparers::baseline_preparers(baseline_target target) : m_target(std::move(target)) {}

baseline_preparers::~baseline_preparers() = default;

baseline_preparer* baseline_preparers::preparer(const std::string& name) {
  if (auto it = m_made.find(name); it != m_made.end()) return it->second.get();
  const baseline* b = find_baseline(name);
  if (!b || !b->make_preparer) return nullptr;
  return (m_made[name] = b->make_preparer(m_target)).get();
}

nlohmann::json baseline_preparers::impl(const std::string& name, const workload_spec& spec,
                                        const std::vector<std::string>& cases, const std::string& gpu_key) {
  if (baseline_preparer* p = preparer(name)) return p->impl(spec, cases, gpu_key);
  const baseline* b = find_baseline(name);
  if (b && !b->impl.is_null()) return b->impl;
  return {{"kind", name}};
}

void baseline_preparers::prepare(const std::string& name, const std::vector<baseline_work>& work,
                                 const std::string& gpu_key) {
  if (baseline_preparer* p = preparer(name)) p->prepare(work, gpu_key);
}

}  // namespace kf
