// The baselines register themselves with lib, which never names one (CONTRIBUTING.md "Adding a baseline").
// Two sides, two calls: the parent side (spec/baseline_registry.h: the names, what kforge prepares, how the
// reports show them) and the worker side (measure/impl_kind_torch.h: how kforge-worker verifies and times them).
// Core header: no LibTorch here.
#pragma once

namespace kf {

// Registers each baseline's parent side: "eager", "compile" and "vendor", in that order (register.cpp). Every
// program that reads specs or renders reports calls it at start (kforge's main, the tests' main); later calls do
// nothing.
void register_baselines();

// Registers each baseline's implementation kind with the worker's registry (register_torch.cpp); kforge-worker's
// main calls it once, before it serves requests.
void register_baseline_kinds();

}  // namespace kf
