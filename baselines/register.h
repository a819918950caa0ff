// The baselines' worker side: each registers its implementation kind with measure's registry
// (measure/impl_kind_torch.h). The worker's main calls this once, before it serves requests; lib/ never names a
// baseline. Core header: no LibTorch here.
#pragma once

namespace kf {

// Registers "eager", "compile" and "vendor", in that order.
void register_baselines();

}  // namespace kf
