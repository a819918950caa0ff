// Devices as the command line names them (cpu, cuda, cuda:N, auto) and the GPU key that stored kernels and
// history are filed under (arch + product name, e.g. sm90-nvidia-h200). Core code: never touches CUDA; `auto`
// looks for a GPU through the device node and nvidia-smi.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kf {

enum class device_kind { cpu, cuda };
std::string_view device_kind_name(device_kind d);  // "cpu" | "cuda"

struct device_id {
  device_kind kind = device_kind::cpu;
  int index = 0;  // the CUDA ordinal; 0 for cpu
  std::string str() const;  // "cpu" | "cuda:N"
  bool operator==(const device_id&) const = default;
};

// What `auto` found, for the sentence that says which device was picked and why.
struct gpu_probe {
  bool device_node = false;  // /dev/nvidia0 exists
  int smi_gpus = 0;          // GPUs listed by `nvidia-smi -L`
  std::string smi_error;     // why nvidia-smi could not be asked, when it could not
};
gpu_probe probe_gpus();

struct device_choice {
  device_id id;
  std::string why;  // one sentence: which device and why (says so when auto fell back to cpu)
};

// Parses "cpu", "cuda", "cuda:N" or "auto"; throws user_error naming the flag's value and the choices.
// `auto` runs probe_gpus(); pass a probe to decide without touching the machine (tests).
device_choice choose_device(std::string_view text);
device_choice choose_device(std::string_view text, const gpu_probe& probe);
device_id parse_device(std::string_view text);  // no `auto`

// The key kernels and history are stored under. For a GPU: "sm<major><minor>-<product slug>" from the worker's
// env (`arch` "sm_90" and `gpu_name` "NVIDIA H200" -> "sm90-nvidia-h200"); for the cpu device: cpu_key().
std::string gpu_key(const nlohmann::json& env);
// "cpu-<machine>" (uname, e.g. cpu-x86-64): generic on purpose, so a cpu kernel is shared by every host.
std::string cpu_key();
// Lowercase letters and digits, every other run of characters one '-'.
std::string slug(std::string_view text);

// The file whose lock (util/file_lock.h) every timing on this GPU holds: the worker's measure requests (kforge run,
// search, calibrate: worker_client takes it) and the torch.compile exporter's inductor benchmarks (export.py
// --bench-lock), so that processes sharing a GPU (a search beside a run's exports, a nightly retune beside a PR's
// gate) time one at a time instead of on a GPU the other is loading. Machine-wide: in $KFORGE_LOCK_DIR, else
// /tmp; named by the GPU as CUDA_VISIBLE_DEVICES lists it when that remaps the ordinals (two processes that both
// see their GPU as cuda:0 share a lock only when it is the same GPU). Empty for the cpu device.
std::filesystem::path gpu_timing_lock(const device_id& d);

}  // namespace kf
