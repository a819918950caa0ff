// LibTorch eager implementations of the graph ops, a table keyed by the op name (the same names as ops.cpp
// and baselines/compile/export.py). Include only from *_torch.cpp files.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "spec/ops.h"

namespace kf {

at::ScalarType to_scalar_type(dtype t);
dtype from_scalar_type(at::ScalarType t);  // throws infra_error for types kforge does not use

// What an op implementation gets: its input, its arguments (defaults applied by the registry) and the
// tensors its tensor arguments name. `f64` asks for the float64 reference: dtype arguments and casts to a
// floating type stay float64.
struct torch_op_args {
  const op_def& op;
  const nlohmann::json& args;
  std::map<std::string, at::Tensor> tensors;
  bool f64 = false;
  const nlohmann::json& value(const std::string& name) const;
  bool has(const std::string& name) const;
  std::optional<at::Tensor> tensor(const std::string& name) const;  // nullopt when not given
  std::optional<at::ScalarType> dtype_arg(const std::string& name) const;  // float64 in f64 mode
};

struct torch_op {
  std::string name;
  std::function<std::vector<at::Tensor>(const at::Tensor& x, const torch_op_args& a)> run;
};

const std::vector<torch_op>& torch_op_table();
const torch_op* find_torch_op(const std::string& name);

}  // namespace kf
