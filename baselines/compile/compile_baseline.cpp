// The torch.compile baseline's parent side (registered by register.cpp): packages exported by export_cache for
// each gated case and mode before the worker times them, and what the reports say of its modes.
#include <fmt/format.h>

#include "compile/export_cache.h"
#include "report/text_escape.h"
#include "spec/baseline_registry.h"

namespace kf {
namespace {

class compile_preparer final : public baseline_preparer {
 public:
  explicit compile_preparer(const baseline_target& t) : m_device(t.device), m_exports([&] {
    export_options o;
    o.cache_root = t.cache_root;
    return o;
  }()) {}

  nlohmann::json impl(const workload_spec& spec, const std::vector<std::string>& cases,
                      const std::string& gpu_key) override {
    if (!m_exports.unavailable().empty()) return {{"skipped", m_exports.unavailable()}};
    nlohmann::json impl = m_exports.impl_for(spec, cases, m_device, gpu_key);
    // Every case and mode failed to export: nothing to time, say why (the first reason).
    bool any = false;
    if (impl.contains("pt2") && impl["pt2"].is_object())
      for (auto& [c, modes] : impl["pt2"].items())
        if (modes.is_object() && !modes.empty()) any = true;
    if (any) return impl;
    std::string why = "skipped: the export produced no package";
    if (impl.contains("skipped"))
      for (auto& [c, modes] : impl["skipped"].items())
        for (auto& [m, text] : modes.items())
          if (text.is_string()) {
            why = text.get<std::string>();
            break;
          }
    return {{"skipped", why}};
  }

  void prepare(const std::vector<baseline_work>& work, const std::string& gpu_key) override {
    std::vector<export_cache::wanted> wanted;
    for (const auto& w : work) wanted.push_back({w.spec, w.cases});
    m_exports.prefetch(wanted, m_device, gpu_key);
  }

 private:
  std::string m_device;
  export_cache m_exports;
};

// Each mode's median where a case timed more than one: the table compares with the faster, and what the other
// took says how much the baseline depends on the export ("default 1.63 µs, max-autotune 1.71 µs").
std::string modes_line(const nlohmann::json& details) {
  if (!details.is_object() || !details.contains("modes_median_us")) return "";
  const auto& modes = details["modes_median_us"];
  if (!modes.is_object() || modes.size() < 2) return "";
  std::string parts;
  for (auto& [mode, v] : modes.items())
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", mode,
                         v.is_number() ? format_us(v.get<double>()) + " µs" : v.dump());
  return parts;
}

}  // namespace

baseline compile_baseline() {
  return {.name = "compile",
          .summary = "torch.compile through an AOTInductor package (.pt2), the faster of its export modes",
          .make_preparer = [](const baseline_target& t) { return std::make_unique<compile_preparer>(t); },
          .title = "torch.compile",
          .preparing = "exporting",
          .color = "#f58518",
          .details = modes_line,
          .details_title = "torch.compile by mode (the faster is compared)"};
}

}  // namespace kf
