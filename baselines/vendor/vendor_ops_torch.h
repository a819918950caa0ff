// The vendor library calls the vendor baseline uses for a graph's core op, a table keyed by op name.
// Include only from *_torch.cpp files.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "spec/ops_torch.h"

namespace kf::vendor {

// The vendor library does not cover this op with these arguments or types: the baseline is "not available".
class not_applicable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct vendor_op {
  std::string op;    // the graph op it replaces
  std::string call;  // the library call, for the description ("cudnnSoftmaxForward")
  // Runs on LibTorch's current CUDA stream. Throws not_applicable, or kf::cuda_error for a failed call.
  std::function<at::Tensor(const at::Tensor& x, const torch_op_args& a)> run;
};

const std::vector<vendor_op>& vendor_op_table();
const vendor_op* find_vendor_op(const std::string& op);

// The entries (cudnn_ops_torch.cpp, cublaslt_linear_torch.cpp).
at::Tensor cudnn_softmax(const at::Tensor& x, const torch_op_args& a, bool log);
at::Tensor cudnn_adaptive_avg_pool_1x1(const at::Tensor& x, const torch_op_args& a);
at::Tensor cublaslt_linear(const at::Tensor& x, const torch_op_args& a);

}  // namespace kf::vendor
