// The vendor baseline. What it is, honestly: the graph run op by op where the graph's core op (softmax,
// log_softmax, adaptive_avg_pool2d to 1x1, linear) is the vendor library's call and every other op (softcap,
// casts, flatten...) is LibTorch eager. The results name exactly that ("eager softcap, cudnnSoftmaxForward,
// eager cast"). A graph with no op the vendor covers (group_norm, topk) is "not available for this op", and
// so is every graph on the cpu device.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/impl_kind_torch.h"
#include "spec/ops.h"
#include "vendor/vendor_ops_torch.h"

namespace kf {
namespace vendor {

const std::vector<vendor_op>& vendor_op_table() {
  static const std::vector<vendor_op> table{
      {"softmax", "cudnnSoftmaxForward", [](const at::Tensor& x, const torch_op_args& a) { return cudnn_softmax(x, a, false); }},
      {"log_softmax", "cudnnSoftmaxForward(LOG)", [](const at::Tensor& x, const torch_op_args& a) { return cudnn_softmax(x, a, true); }},
      {"adaptive_avg_pool2d", "cudnnPoolingForward(AVERAGE)", cudnn_adaptive_avg_pool_1x1},
      {"linear", "cublasLtMatmul(+bias epilogue)", cublaslt_linear},
  };
  return table;
}

const vendor_op* find_vendor_op(const std::string& op) {
  for (const auto& v : vendor_op_table())
    if (v.op == op) return &v;
  return nullptr;
}

}  // namespace vendor

namespace {

// Runs the graph with vendor calls where the table has them; `steps` gets one entry per op.
std::vector<at::Tensor> run_vendor_graph(const workload_spec& spec, const std::vector<at::Tensor>& inputs,
                                         std::vector<std::string>* steps) {
  std::map<std::string, at::Tensor> by_name;
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) by_name[spec.inputs[i].name] = inputs.at(i);
  std::vector<at::Tensor> current;
  for (std::size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    const op_def* def = find_op(call.op);
    const torch_op* eager = find_torch_op(call.op);
    KF_ASSERT(def && eager, "op {} has no registry entry or no torch implementation", call.op);
    torch_op_args a{*def, call.args, {}, false};
    for (auto& arg : def->args)
      if (arg.kind == arg_kind::tensor && call.args.contains(arg.name) && call.args[arg.name].is_string())
        a.tensors[arg.name] = by_name.at(call.args[arg.name].get<std::string>());
    at::Tensor x = i == 0 ? by_name.at(call.args.at("input").get<std::string>()) : current.at(0);
    if (const vendor::vendor_op* v = vendor::find_vendor_op(call.op)) {
      // softmax(dtype=) converts first; pooling has no dtype argument to ask about.
      if (steps && def->find_arg("dtype"))
        if (auto t = a.dtype_arg("dtype"); t && *t != x.scalar_type())
          steps->push_back(fmt::format("eager cast to {}", c10::toString(*t)));
      current = {v->run(x, a)};
      if (steps) steps->push_back(v->call);
    } else {
      current = eager->run(x, a);
      if (steps) steps->push_back("eager " + call.op);
    }
  }
  return current;
}

}  // namespace

std::vector<prepared_impl> prepare_vendor(const nlohmann::json&, const impl_context& ctx) {
  prepared_impl p;
  p.name = "vendor";
  if (!ctx.device.is_cuda()) {
    p.not_available = "not available on cpu: cuDNN and cuBLASLt are CUDA libraries";
    return {p};
  }
  std::vector<std::string> covered;
  for (const auto& call : ctx.spec.graph)
    if (vendor::find_vendor_op(call.op)) covered.push_back(call.op);
  if (covered.empty()) {
    std::vector<std::string> ops;
    for (const auto& call : ctx.spec.graph) ops.push_back(call.op);
    p.not_available = fmt::format("not available for this op: no cuDNN/cuBLASLt call covers {}", fmt::join(ops, ", "));
    return {p};
  }
  // One run now, on LibTorch's current stream, decides whether the library takes these shapes and types.
  std::vector<std::string> steps;
  try {
    run_vendor_graph(ctx.spec, ctx.inputs, &steps);
  } catch (const vendor::not_applicable& e) {
    p.not_available = fmt::format("not available for this case: {}", e.what());
    return {p};
  }
  p.description = fmt::format("{}", fmt::join(steps, ", "));
  p.details["steps"] = steps;
  p.details["vendor_calls"] = static_cast<int>(covered.size());
  p.details["eager_ops"] = static_cast<int>(steps.size() - covered.size());
  const workload_spec* spec = &ctx.spec;
  std::vector<at::Tensor> inputs = ctx.inputs;
  c10::Device device = ctx.device;
  p.launch = [spec, inputs, device](void* stream) {
    return run_on_stream(stream, device, [&] {
      try {
        run_vendor_graph(*spec, inputs, nullptr);
      } catch (const vendor::not_applicable& e) {
        throw measure::launch_failure(-1, e.what());
      }
    });
  };
  return {p};
}

}  // namespace kf
