#include "spec/input_cache_torch.h"

#include <cstdlib>
#include <list>
#include <map>
#include <mutex>

namespace kf {
namespace {

struct cache {
  std::mutex mutex;
  std::list<std::pair<std::string, at::Tensor>> lru;  // most recent first
  std::map<std::string, decltype(lru)::iterator> by_key;
  input_cache_stats stats;
  cache() {
    const char* mb = std::getenv("KFORGE_INPUT_CACHE_MB");
    stats.budget = (mb && *mb ? std::atoll(mb) : 2048) * 1024 * 1024;
  }
  void evict_to(int64_t budget) {
    while (stats.bytes > budget && !lru.empty()) {
      stats.bytes -= static_cast<int64_t>(lru.back().second.nbytes());
      by_key.erase(lru.back().first);
      lru.pop_back();
    }
  }
};

cache& the_cache() {
  static cache c;
  return c;
}

}  // namespace

at::Tensor cached_input(const std::string& key, const std::function<at::Tensor()>& make) {
  cache& c = the_cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (auto it = c.by_key.find(key); it != c.by_key.end()) {
      c.lru.splice(c.lru.begin(), c.lru, it->second);
      ++c.stats.hits;
      return it->second->second;
    }
    ++c.stats.misses;
  }
  at::Tensor t = make();
  const auto bytes = static_cast<int64_t>(t.nbytes());
  std::lock_guard<std::mutex> lock(c.mutex);
  if (bytes > c.stats.budget || c.by_key.count(key)) return t;
  c.evict_to(c.stats.budget - bytes);
  c.lru.emplace_front(key, t);
  c.by_key[key] = c.lru.begin();
  c.stats.bytes += bytes;
  return t;
}

input_cache_stats input_cache_statistics() {
  cache& c = the_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void set_input_cache_budget(int64_t bytes) {
  cache& c = the_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.budget = bytes < 0 ? 0 : bytes;
  c.evict_to(c.stats.budget);
}

}  // namespace kf
