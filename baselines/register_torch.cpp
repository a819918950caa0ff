// The baselines' implementation kinds, registered with the worker's table (see register.h); their parent side is
// register.cpp.
#include "register.h"

#include "measure/impl_kind_torch.h"

namespace kf {

// The entries, each in its own folder.
std::vector<prepared_impl> prepare_eager(const nlohmann::json& impl, const impl_context& ctx);    // eager/
std::unique_ptr<impl> make_eager(const nlohmann::json& impl, const workload_spec& spec, const device_id& device);
std::vector<prepared_impl> prepare_compile(const nlohmann::json& impl, const impl_context& ctx);  // compile/
std::vector<prepared_impl> prepare_vendor(const nlohmann::json& impl, const impl_context& ctx);   // vendor/

void register_baseline_kinds() {
  register_impl_kind({"eager", "LibTorch eager, op by op", prepare_eager, make_eager});
  register_impl_kind({.name = "compile",
                      .summary = "torch.compile through an AOTInductor package (.pt2)",
                      .prepare = prepare_compile,
                      .modes = true});
  register_impl_kind({"vendor", "the vendor library (cuDNN / cuBLASLt) for the graph's core op", prepare_vendor});
}

}  // namespace kf
