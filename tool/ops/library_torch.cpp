// The kforge namespace's own operators, the doors to the loader from Python and TorchScript (torch.ops.kforge._load,
// _describe, _loaded, _op_table: workload operators never start with an underscore), and the C++ API of
// kforge_ops.h.
#include <cstdlib>

#include <torch/library.h>

#include "kforge_ops.h"
#include "loader_torch.h"
#include "op_registry_torch.h"
#include "register.h"  // baselines/
#include "search/families/elementwise_emit.h"
#include "spec/ops.h"
#include "util/error.h"

namespace {

// kforge's errors as torch's, so Python sees a RuntimeError with the message.
template <class F>
auto torch_errors(F&& f) {
  try {
    return f();
  } catch (const kf::user_error& e) {
    C10_THROW_ERROR(Error, e.what());
  } catch (const kf::infra_error& e) {
    C10_THROW_ERROR(Error, e.what());
  }
}

std::string load_op(const std::string& workloads_dir, const std::string& device, const std::string& cache_dir,
                    const std::vector<std::string>& names) {
  return kforge::load(workloads_dir, device, cache_dir, names);
}

std::string describe_op(const std::string& name) {
  auto entry = kf::ops::find_entry(name);
  TORCH_CHECK(entry, "kforge: no operator `", name, "` is loaded");
  return entry->to_json().dump();
}

std::vector<std::string> loaded_op() {
  std::vector<std::string> names;
  for (auto& e : kf::ops::installed()) names.push_back(e->name);
  return names;
}

const char* kind_code(kf::arg_kind k) {
  switch (k) {
    case kf::arg_kind::integer: return "integer";
    case kf::arg_kind::number: return "number";
    case kf::arg_kind::boolean: return "boolean";
    case kf::arg_kind::string: return "string";
    case kf::arg_kind::dtype: return "dtype";
    case kf::arg_kind::tensor: return "tensor";
    case kf::arg_kind::int_list: return "int_list";
    case kf::arg_kind::fill: return "fill";
  }
  return "unknown";
}

// The op registry's argument schema (spec/ops.h), for kforge.patch: what a module's arguments are compared with; and
// whether each op is elementwise (ew::is_elementwise, the pointwise family's rule), for kforge.compile's policy (an
// elementwise-only workload is left to inductor, which fuses such chains into their neighbours).
std::string op_table_op() {
  nlohmann::json table = nlohmann::json::object();
  for (const kf::op_def& op : kf::op_table()) {
    nlohmann::json args = nlohmann::json::array();
    for (const kf::arg_def& a : op.args)
      args.push_back({{"name", a.name}, {"kind", kind_code(a.kind)}, {"required", a.required},
                      {"default", a.default_value}});
    table[op.name] = {{"args", args},
                      {"outputs", op.output_names.empty() ? std::vector<std::string>{"out"} : op.output_names},
                      {"elementwise", kf::ew::is_elementwise(op.name)}};
  }
  return table.dump();
}

}  // namespace

TORCH_LIBRARY(kforge, m) {
  m.def("_load(str workloads_dir, str device, str cache_dir, str[] names) -> str", &load_op);
  m.def("_describe(str op) -> str", &describe_op);
  m.def("_loaded() -> str[]", &loaded_op);
  m.def("_op_table() -> str", &op_table_op);
}

namespace kforge {

std::string load(const std::string& workloads_dir, const std::string& device, const std::string& cache_dir,
                 const std::vector<std::string>& names) {
  return torch_errors([&] {
    kf::register_baselines();  // the spec parser checks `baselines` against the registered names
    kf::ops::load_options o;
    o.workloads_dir = workloads_dir;
    if (o.workloads_dir.empty()) {
      const char* env = std::getenv("KFORGE_WORKLOADS");
      TORCH_CHECK(env && *env, "kforge.load: no workloads folder given and KFORGE_WORKLOADS is not set");
      o.workloads_dir = env;
    }
    o.device = device.empty() ? "auto" : device;
    o.cache_dir = cache_dir;
    o.names = names;
    return kf::ops::load(o).dump();
  });
}

std::string load_from_env() {
  const char* dir = std::getenv("KFORGE_WORKLOADS");
  if (!dir || !*dir) return "";
  const char* device = std::getenv("KFORGE_DEVICE");
  return load(dir, device && *device ? device : "auto");
}

}  // namespace kforge
