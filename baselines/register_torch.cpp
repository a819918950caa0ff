// The baselines' implementation kinds, registered with measure (see register.h); their parent side is
// register.cpp.
#include "register.h"

#include "measure/impl_kind_torch.h"

namespace kf {

// The entries, each in its own folder.
std::vector<prepared_impl> prepare_eager(const nlohmann::json& impl, const impl_context& ctx);    // eager/
std::vector<prepared_impl> prepare_compile(const nlohmann::json& impl, const impl_context& ctx);  // compile/
std::vector<prepared_impl> prepare_vendor(const nlohmann::json& impl, const impl_context& ctx);   // vendor/

void register_baseline_kinds() {
  register_timed_impl_kind({"eager", "LibTorch eager, op by op", prepare_eager});
  register_timed_impl_kind({"compile", "torch.compile through an AOTInductor package (.pt2)", prepare_compile});
  register_timed_impl_kind({"vendor", "the vendor library (cuDNN / cuBLASLt) for the graph's core op", prepare_vendor});
}

}  // namespace kf
