// The eager baseline: the workload's graph run op by op by LibTorch (the spec's run_graph, the same code as
// the reference), on the measuring stream. Its allocations are part of what eager costs. It is also verified like
// a candidate (the search's evaluator verifies it to draw the inputs while its first batch compiles).
#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "measure/impl_kind_torch.h"
#include "spec/reference_torch.h"
#include "util/error.h"

namespace kf {
namespace {

// Verify's view: the graph's results copied into the harness's outputs.
class eager_impl : public impl {
 public:
  eager_impl(const workload_spec& spec, const device_id& device) : m_spec(spec), m_device(device) {}
  std::string name() const override { return "eager"; }
  int launch(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out, void* stream) override {
#if KFORGE_WITH_CUDA
    if (m_device.kind == device_kind::cuda) {
      c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream),
                                                                         static_cast<c10::DeviceIndex>(m_device.index)));
      return run(in, out);
    }
#endif
    (void)stream;
    return run(in, out);
  }

 private:
  int run(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) {
    auto results = run_graph(m_spec, in);
    KF_ASSERT(results.size() == out.size(), "eager made {} outputs, the harness allocated {}", results.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i].copy_(results[i]);
    return 0;
  }
  const workload_spec& m_spec;
  device_id m_device;
};

}  // namespace

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

std::unique_ptr<impl> make_eager(const nlohmann::json&, const workload_spec& spec, const device_id& device) {
  return std::make_unique<eager_impl>(spec, device);
}

}  // namespace kf
