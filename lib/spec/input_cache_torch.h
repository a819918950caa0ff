// A bounded, process-wide cache of generated host inputs. Verifying many candidates of one workload in one
// worker (a search) draws the same seeded inputs again and again; on the CPU a 256 MiB attention input takes
// about a second to draw. Entries are keyed by everything that decides the values (make_input's key) and
// evicted least recently used first.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <ATen/ATen.h>

namespace kf {

struct input_cache_stats {
  int64_t hits = 0, misses = 0;
  int64_t bytes = 0;   // held now
  int64_t budget = 0;  // at most
};

// The tensor stored under `key`, or `make()`'s result, stored when it fits the budget. Callers must not
// modify the returned tensor (copy it first).
at::Tensor cached_input(const std::string& key, const std::function<at::Tensor()>& make);

input_cache_stats input_cache_statistics();

// 0 disables the cache (and empties it). Default: $KFORGE_INPUT_CACHE_MB megabytes, else a quarter of the host's
// memory between 2 and 16 GiB.
void set_input_cache_budget(int64_t bytes);

}  // namespace kf
