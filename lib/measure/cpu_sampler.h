// The timing protocol on the cpu device: steady_clock around one call after evicting the last-level cache
// (cold), or around a loop of calls (hot). No clock check: nothing is discarded.
#pragma once
#include <cstdint>
#include <vector>

#include "measure/sampler.h"

namespace kf::measure {

// The size of the largest CPU cache in bytes, from /sys/devices/system/cpu/cpu0/cache (0 when unknown).
int64_t last_level_cache_bytes(const std::string& sysfs_cache_dir = "/sys/devices/system/cpu/cpu0/cache");

class cpu_sampler : public sampler {
 public:
  cpu_sampler();
  void warmup(const timed_impl& impl) override;
  sample cold(const timed_impl& impl) override;
  std::unique_ptr<hot_loop> make_hot(const timed_impl& impl, double estimate_s, double target_s) override;
  double copy_bandwidth_gbs() override;
  launch_fn empty_launch() override;
  std::string clock_check() const override;
  nlohmann::json environment() const override;  // cpu_model, threads, llc_bytes
  int64_t flush_bytes() const { return static_cast<int64_t>(m_flush.size()); }

 private:
  void flush_caches();
  std::vector<uint8_t> m_flush;
  uint8_t m_round = 0;
};

}  // namespace kf::measure
