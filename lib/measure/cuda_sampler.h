// The timing protocol on a CUDA device (docs/design.md "Measure"). Cold: flush L2, hold the stream with a
// blocking kernel, record events around one launch, release, sync. Hot: a CUDA graph of N back-to-back
// launches (N so a replay lasts about 1 ms, at most 1000), timed per replay, reported per launch. Samples
// taken while the SM clock is below 75 % of the maximum (read through NVML, if present) are discarded.
// Plain C++ interface; the implementation (cuda_sampler_torch.cpp) uses LibTorch's graph capture so that
// baselines that allocate through the caching allocator can be captured too.
#pragma once
#include <memory>
#include <string>

#include "measure/sampler.h"

namespace kf::measure {

struct cuda_sampler_options {
  double clock_threshold = 0.75;     // of the maximum SM clock; 0 keeps every sample
  double block_timeout_s = 0.5;      // the blocking kernel gives up after this (an impl that syncs the host)
  int max_hot_launches = 1000;
  std::string nvml_library = "libnvidia-ml.so.1";
};

// Samples on `stream` (a cudaStream_t of `device`, not the legacy default stream). Throws kf::cuda_error.
std::unique_ptr<sampler> make_cuda_sampler(int device, void* stream, const cuda_sampler_options& options = {});

}  // namespace kf::measure
