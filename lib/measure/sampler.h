// The device side of the timing protocol behind a small interface (docs/design.md "Measure"): a sampler takes one
// cold sample of a launch, or builds a hot loop of back-to-back launches. cuda_sampler_torch.cpp implements
// it with events, an L2 flush and CUDA graphs; cpu_sampler.cpp with steady_clock and a cache flush; tests
// use a fake. The interleaving and the stopping rule (timing.h) do not know which one they drive.
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace kf::measure {

// Enqueues one run of an implementation on `stream` (a cudaStream_t; null on cpu). Returns 0 on success or
// the implementation's non-zero code (an input it does not handle).
using launch_fn = std::function<int(void* stream)>;

// A launch returned non-zero while being timed: a result about the implementation, not an infra failure.
class launch_failure : public std::runtime_error {
 public:
  explicit launch_failure(int code, const std::string& detail = "")
      : std::runtime_error("launch returned " + std::to_string(code) + (detail.empty() ? "" : ": " + detail)),
        m_code(code) {}
  int code() const { return m_code; }

 private:
  int m_code;
};

// One implementation of a case; its name is unique among those timed together (samplers key state on it).
struct timed_impl {
  std::string name;
  launch_fn launch;
};

struct sample {
  double seconds = 0;       // per launch
  bool kept = true;         // false: taken while the SM clock was below the threshold (discarded)
  double sm_clock_mhz = 0;  // the clock seen right after the sample; 0 when unknown
};

// A prepared loop of `launches()` back-to-back launches (a CUDA graph on cuda); run() times one pass.
class hot_loop {
 public:
  virtual ~hot_loop() = default;
  virtual sample run() = 0;  // seconds are per launch
  virtual int launches() const = 0;
};

class sampler {
 public:
  virtual ~sampler() = default;
  // Runs f once and waits for it, untimed (lazy module loading, allocator warm-up). Throws launch_failure.
  virtual void warmup(const timed_impl& impl) = 0;
  // One cold sample: caches flushed, one launch timed on its own. Throws launch_failure.
  virtual sample cold(const timed_impl& impl) = 0;
  // A hot loop whose pass lasts about target_s given a per-launch estimate. Throws launch_failure, or
  // std::runtime_error when f cannot run back to back (e.g. it cannot be captured into a graph).
  virtual std::unique_ptr<hot_loop> make_hot(const timed_impl& impl, double estimate_s, double target_s) = 0;
  // Copy bandwidth in GB/s (bytes read + written), measured by the sampler's device.
  virtual double copy_bandwidth_gbs() = 0;
  // A launch that does nothing (the launch floor).
  virtual launch_fn empty_launch() = 0;
  // How samples are checked against the clock ("nvml: discarding below 1485 MHz", "not available: ...").
  virtual std::string clock_check() const = 0;
  // The environment the samples were taken in (docs/design.md "Measure": GPU name, SM count, clocks, driver,
  // CUDA, cuDNN and torch versions; on cpu the CPU model and threads).
  virtual nlohmann::json environment() const = 0;
};

}  // namespace kf::measure
