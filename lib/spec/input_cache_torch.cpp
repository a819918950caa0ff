#include "spec/input_cache_torch.h"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include <unistd.h>

#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace kf {
namespace {

// Tensors by key, least recently used evicted first, within a byte budget.
struct cache {
  std::mutex mutex;
  std::list<std::pair<std::string, at::Tensor>> lru;  // most recent first
  std::map<std::string, decltype(lru)::iterator> by_key;
  input_cache_stats stats;

  explicit cache(int64_t budget) { stats.budget = budget; }

  at::Tensor get_or_make(const std::string& key, const std::function<at::Tensor()>& make) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto it = by_key.find(key); it != by_key.end()) {
        lru.splice(lru.begin(), lru, it->second);
        ++stats.hits;
        return it->second->second;
      }
      ++stats.misses;
    }
    at::Tensor t = make();
    const auto bytes = static_cast<int64_t>(t.nbytes());
    std::lock_guard<std::mutex> lock(mutex);
    if (bytes > stats.budget || by_key.count(key)) return t;
    evict_to(stats.budget - bytes);
    lru.emplace_front(key, t);
    by_key[key] = lru.begin();
    stats.bytes += bytes;
    return t;
  }
  void evict_to(int64_t budget) {
    while (stats.bytes > budget && !lru.empty()) {
      stats.bytes -= static_cast<int64_t>(lru.back().second.nbytes());
      by_key.erase(lru.back().first);
      lru.pop_back();
    }
  }
  input_cache_stats statistics() {
    std::lock_guard<std::mutex> lock(mutex);
    return stats;
  }
};

constexpr int64_t k_gib = int64_t{1} << 30;

int64_t megabytes_from_env(const char* name, int64_t fallback) {
  const char* mb = std::getenv(name);
  return mb && *mb ? std::atoll(mb) * 1024 * 1024 : fallback;
}

// A quarter of the host's memory, between 2 and 16 GiB: a search verifies every candidate on the same inputs
// (3 seeds x 2 sets + the adversarial ones per case), and when they do not all fit, least-recently-used eviction
// of that cyclic pattern evicts each set just before it is needed again (measured on an H200 with 256 MiB
// GroupNorm inputs and a 2 GiB cache: 24 of 25 s of each verification went to drawing inputs).
int64_t host_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const int64_t quarter = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 4 : 2 * k_gib;
  return megabytes_from_env("KFORGE_INPUT_CACHE_MB", std::clamp(quarter, 2 * k_gib, 16 * k_gib));
}

// An eighth of the device's memory, at most 16 GiB: the candidate's outputs, the reference and the timing
// buffers need the rest.
int64_t device_budget(int index) {
  int64_t eighth = 0;
#if KFORGE_WITH_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) == cudaSuccess) eighth = static_cast<int64_t>(p.totalGlobalMem) / 8;
  cudaGetLastError();
#else
  (void)index;
#endif
  return megabytes_from_env("KFORGE_DEVICE_INPUT_CACHE_MB", std::min(eighth, 16 * k_gib));
}

cache& host_cache() {
  static cache c(host_budget());
  return c;
}

cache& device_cache(const c10::Device& device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<cache>> by_device;
  std::lock_guard<std::mutex> lock(mutex);
  auto& c = by_device[device.index()];
  if (!c) c = std::make_unique<cache>(device_budget(device.index()));
  return *c;
}

}  // namespace

at::Tensor cached_input(const std::string& key, const std::function<at::Tensor()>& make) {
  return host_cache().get_or_make(key, make);
}

input_cache_stats input_cache_statistics() { return host_cache().statistics(); }

at::Tensor device_input_copy(const std::string& key, const at::Tensor& host, const c10::Device& device) {
  at::Tensor kept = device_cache(device).get_or_make(key, [&] { return host.to(device); });
  at::Tensor copy = kept.clone();  // same strides (channels_last stays so), a fresh address
#if KFORGE_WITH_CUDA
  c10::cuda::getCurrentCUDAStream(device.index()).synchronize();  // whatever stream the candidate runs on next
#endif
  return copy;
}

input_cache_stats device_input_cache_statistics(const c10::Device& device) { return device_cache(device).statistics(); }

void set_input_cache_budget(int64_t bytes) {
  cache& c = host_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.budget = bytes < 0 ? 0 : bytes;
  c.evict_to(c.stats.budget);
}

}  // namespace kf
