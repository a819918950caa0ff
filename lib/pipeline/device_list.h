// `kforge run --devices LIST`: the devices a run spreads its workloads over (pipeline/run_devices.cpp), one worker
// each. Core code: `all` finds the GPUs through the device node and nvidia-smi (exec/device.h), never CUDA.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "exec/device.h"

namespace kf {

struct device_list {
  std::vector<device_id> ids;      // one worker each, in the order given
  std::vector<std::string> names;  // what the reports call them: "cuda:1"; "cpu#1", "cpu#2" for a repeated device
  std::string why;                 // one sentence: which devices and why (says so when `all` fell back to cpu)
};

// "all" (every CUDA device the machine has; the cpu when it has none, and says so) or a comma list of cpu, cuda,
// cuda:N; a device may repeat (two workers on one device: how CI, with no GPU, covers the scheduling). Throws
// user_error naming --devices, the bad item and the choices: an empty item, an unknown device, `auto` or `all`
// inside a list, a cuda:N beyond the GPUs nvidia-smi lists. Pass a probe to decide without the machine (tests).
device_list parse_device_list(std::string_view text);
device_list parse_device_list(std::string_view text, const gpu_probe& probe);

// Throws user_error unless every device (names[i] has keys[i]) has one GPU key, naming each key with its devices;
// `why` says what the one key is for (the run's history, the search's comparisons).
void check_one_gpu_key(const std::vector<std::string>& names, const std::vector<std::string>& keys,
                       std::string_view why);

}  // namespace kf
