// The operators kforge_ops has registered, torch.ops.kforge.<workload>: one entry per workload with its spec and
// the stored kernels it loaded for each device kind. The dispatcher's kernels (CPU, CUDA, Meta) look their entry
// up at each call, so a second load of a workload swaps its kernels without registering the operator again.
// Include only from *_torch.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/device.h"
#include "exec/kf_abi.h"
#include "spec/spec.h"

namespace kf::ops {

// One device kind's stored kernel, compiled and loaded; or why there is none (the calls then run the eager graph).
struct device_kernel {
  kf_launch_fn launch = nullptr;
  std::string why;     // when there is no launch: "no kernel for sm90-nvidia-h100 in ...", a compile error
  std::string source;  // the stored kernel's file
  std::string key;     // the key it was stored under
  std::string note;    // a same-architecture fallback, unreadable metadata
  std::string arch;    // cuda: the architecture it was compiled for (sm_90a); a GPU of another one runs eager
  nlohmann::json to_json() const;
};

struct op_entry {
  workload_spec spec;
  std::string name;    // the operator's name (call_binding.h op_name)
  std::string schema;  // op_schema
  device_kernel cpu, cuda;
  const device_kernel& kernel(device_kind d) const { return d == device_kind::cuda ? cuda : cpu; }
  // What kforge.describe() and load's report show: the operator, its schema, the spec (spec.h to_json) and kernels.
  nlohmann::json to_json() const;
};

// Registers kforge::<entry.name> with the dispatcher the first time a workload of that name is installed (its
// schema, and the CPU, CUDA and Meta kernels of op_call_torch.h), and from then on makes `entry` what its calls
// use. Throws user_error when the name is already registered with another schema (a spec whose inputs or outputs
// changed since the process loaded it).
void install(std::shared_ptr<const op_entry> entry);
// The entry an operator's calls use now (null for an unknown name).
std::shared_ptr<const op_entry> find_entry(const std::string& name);
// Every installed entry, by name.
std::vector<std::shared_ptr<const op_entry>> installed();

}  // namespace kf::ops
