// The installed operators (op_registry_torch.h) and their registration with the dispatcher.
#include "op_registry_torch.h"

#include <map>
#include <mutex>

#include <ATen/core/stack.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include "op_call_torch.h"
#include "spec/ops.h"
#include "util/error.h"
#include "verify/tolerance.h"

namespace kf::ops {
namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const op_entry>> entries;
  // One fragment of the kforge namespace per operator, alive for the process: the dispatcher drops an operator's
  // registration with its Library.
  std::vector<std::unique_ptr<torch::Library>> libraries;
};

registry& the_registry() {
  static registry* r = new registry;  // never destroyed: the dispatcher may call in while the process exits
  return *r;
}

// The dispatcher's kernel for one key: pops the inputs, calls, pushes the outputs (one IValue per output, the
// schema's tuple).
class boxed_kernel final : public c10::OperatorKernel {
 public:
  boxed_kernel(std::string name, c10::DispatchKey key) : m_name(std::move(name)), m_key(key) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    std::shared_ptr<const op_entry> entry = find_entry(m_name);
    TORCH_CHECK(entry, "kforge.", m_name, " is not loaded");
    const size_t n = entry->spec.inputs.size();
    TORCH_CHECK(stack->size() >= n, "kforge.", m_name, ": ", stack->size(), " arguments, the schema has ", n);
    std::vector<at::Tensor> inputs;
    for (const c10::IValue& v : torch::jit::last(*stack, n)) inputs.push_back(v.toTensor());
    torch::jit::drop(*stack, n);
    std::vector<at::Tensor> out = m_key == c10::DispatchKey::Meta ? call_meta(*entry, inputs)
                                  : call_op(*entry, m_key == c10::DispatchKey::CUDA ? device_kind::cuda : device_kind::cpu,
                                            inputs);
    for (at::Tensor& t : out) torch::jit::push(*stack, std::move(t));
  }

 private:
  std::string m_name;
  c10::DispatchKey m_key;
};

void register_operator(registry& r, const op_entry& e) {
  auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "kforge", std::nullopt, __FILE__, __LINE__);
  lib->def(e.schema.c_str());
  std::vector<c10::DispatchKey> keys = {c10::DispatchKey::CPU, c10::DispatchKey::Meta};
#if KFORGE_WITH_CUDA
  keys.push_back(c10::DispatchKey::CUDA);
#endif
  for (c10::DispatchKey key : keys)
    lib->impl(e.name.c_str(), key, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<boxed_kernel>(e.name, key)));
  // No backward: a backward through the operator fails saying so (torch's default only warns, then gives no gradient).
  lib->impl(e.name.c_str(), c10::DispatchKey::Autograd, torch::autograd::autogradNotImplementedFallback());
  r.libraries.push_back(std::move(lib));
}

}  // namespace

nlohmann::json device_kernel::to_json() const {
  nlohmann::json j = {{"kernel", launch != nullptr}};
  if (!source.empty()) j["source"] = source;
  if (!key.empty()) j["key"] = key;
  if (!arch.empty()) j["arch"] = arch;
  if (!note.empty()) j["note"] = note;
  if (!why.empty()) j["why"] = why;
  return j;
}

nlohmann::json op_entry::to_json() const {
  // Each output's dtype and the verifier's default tolerance for it (verify/tolerance.h: the spec's own, in "spec",
  // may tighten it; the verifier widens it to 4x eager's error where eager needs more).
  nlohmann::json outputs = nlohmann::json::array();
  std::vector<std::string> names = output_names(spec);
  std::vector<tensor_desc> descs = spec.cases.empty() ? std::vector<tensor_desc>{} : infer_outputs(spec, spec.cases.front());
  for (size_t i = 0; i < names.size() && i < descs.size(); ++i) {
    tolerance t = default_tolerance(descs[i].type);
    outputs.push_back({{"name", names[i]}, {"dtype", dtype_name(descs[i].type)}, {"rtol", t.rtol}, {"atol", t.atol}});
  }
  return {{"workload", spec.name}, {"op", name}, {"schema", schema}, {"spec", kf::to_json(spec)},
          {"outputs", names}, {"output_tolerance", outputs},
          {"kernels", {{"cpu", cpu.to_json()}, {"cuda", cuda.to_json()}}}};
}

void install(std::shared_ptr<const op_entry> entry) {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(entry->name);
  if (it != r.entries.end()) {
    if (it->second->schema != entry->schema)
      throw user_error(fmt::format("kforge.{} is registered as `{}`; {} now says `{}` (restart the process to load it)",
                                   entry->name, it->second->schema, entry->spec.path, entry->schema));
    it->second = std::move(entry);
    return;
  }
  register_operator(r, *entry);
  std::string name = entry->name;
  r.entries.emplace(std::move(name), std::move(entry));
}

std::shared_ptr<const op_entry> find_entry(const std::string& name) {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const op_entry>> installed() {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::shared_ptr<const op_entry>> out;
  for (auto& [name, e] : r.entries) out.push_back(e);
  return out;
}

}  // namespace kf::ops
