// The eager baseline: the workload's graph run op by op by LibTorch (the spec's run_graph, the same code as
// the reference), on the measuring stream. Its allocations are part of what eager costs.
#include "measure/impl_kind_torch.h"
#include "spec/reference_torch.h"

namespace kf {

std::vector<prepared_impl> prepare_eager(const nlohmann::json&, const impl_context& ctx) {
  prepared_impl p;
  p.name = "eager";
  p.description = "LibTorch eager, op by op";
  const workload_spec* spec = &ctx.spec;
  std::vector<at::Tensor> inputs = ctx.inputs;
  c10::Device device = ctx.device;
  p.launch = [spec, inputs, device](void* stream) {
    return run_on_stream(stream, device, [&] { run_graph(*spec, inputs); });
  };
  return {p};
}

}  // namespace kf
