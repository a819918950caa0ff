// A bounded, process-wide cache of generated host inputs. Verifying many candidates of one workload in one
// worker (a search) draws the same seeded inputs again and again; on the CPU a 256 MiB attention input takes
// about a second to draw. Entries are keyed by everything that decides the values (make_input's key) and
// evicted least recently used first. A second cache, per GPU, keeps their device copies: handing a candidate
// its inputs is then a copy on the device, not one over PCIe (about 3 GB of GroupNorm inputs per candidate).
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

// A fresh copy on `device` (a GPU) of the input cached under `key`, whose host value is `host`: copied from the
// device cache (filled from `host` on a miss), the copy complete when this returns. The device cache holds at
// most $KFORGE_DEVICE_INPUT_CACHE_MB megabytes, else an eighth of the device's memory, at most 16 GiB.
at::Tensor device_input_copy(const std::string& key, const at::Tensor& host, const c10::Device& device);

input_cache_stats device_input_cache_statistics(const c10::Device& device);

// 0 disables the cache (and empties it). Default: $KFORGE_INPUT_CACHE_MB megabytes, else a quarter of the host's
// memory between 2 and 16 GiB.
void set_input_cache_budget(int64_t bytes);

}  // namespace kf
