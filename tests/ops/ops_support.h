// What the kforge_ops tests share: loading workloads into the library (the compile cache under the build folder's
// test-cache, as the other device tests use it), calling an operator through the dispatcher, and catching the
// warnings the operators give.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kforge_ops.h"
#include "search/family.h"
#include "spec/spec_parse.h"

namespace kf::test {

inline const std::filesystem::path k_ops_workloads = std::filesystem::path(KFORGE_SOURCE_DIR) / "workloads";
inline const std::filesystem::path k_ops_test_workloads =
    std::filesystem::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "ops" / "workloads";

// A bundled workload's spec (the family table linked first: the parser checks search.families against it).
inline workload_spec ops_spec(const std::string& name, const std::filesystem::path& dir = k_ops_workloads) {
  (void)families();
  return load_spec(name, dir.string());
}

// kforge::load into the tests' compile cache; the report.
inline nlohmann::json load_ops(const std::filesystem::path& dir, const std::string& device,
                               const std::vector<std::string>& names) {
  std::string cache = (std::filesystem::path(KFORGE_BINARY_DIR) / "test-cache").string();
  return nlohmann::json::parse(kforge::load(dir.string(), device, cache, names));
}

// The report's entry for one operator (null when it is not there).
inline nlohmann::json loaded_entry(const nlohmann::json& report, const std::string& op) {
  for (auto& e : report["loaded"])
    if (e["op"] == op) return e;
  return nullptr;
}

// torch.ops.kforge.<op>(inputs...), through the boxed dispatcher: its outputs.
inline std::vector<at::Tensor> call_kforge(const std::string& op, const std::vector<at::Tensor>& inputs) {
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(("kforge::" + op).c_str(), "");
  std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
  handle.callBoxed(&stack);
  std::vector<at::Tensor> out;
  for (auto& v : stack) out.push_back(v.toTensor());
  return out;
}

// The warnings given while it lives (on this thread).
class warning_catcher : public c10::WarningHandler {
 public:
  warning_catcher() : m_guard(this) {}
  void process(const c10::Warning& w) override { m_messages.push_back(w.msg()); }
  const std::vector<std::string>& messages() const { return m_messages; }
  std::string all() const {
    std::string s;
    for (auto& m : m_messages) s += m + "\n";
    return s;
  }

 private:
  std::vector<std::string> m_messages;
  c10::WarningUtils::WarningHandlerGuard m_guard;
};

inline bool have_gpu_device() { return std::filesystem::exists("/dev/nvidiactl"); }

}  // namespace kf::test
