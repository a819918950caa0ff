#include "exec/device.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "util/error.h"
#include "util/subprocess.h"

namespace kf {

std::string_view device_kind_name(device_kind d) { return d == device_kind::cpu ? "cpu" : "cuda"; }

std::string device_id::str() const {
  return kind == device_kind::cpu ? std::string("cpu") : fmt::format("cuda:{}", index);
}

device_id parse_device(std::string_view text) {
  auto bad = [&] {
    return user_error(fmt::format("--device: expected cpu, cuda, cuda:N or auto, got '{}'", text));
  };
  if (text == "cpu") return {device_kind::cpu, 0};
  if (text == "cuda" || text == "gpu") return {device_kind::cuda, 0};
  if (text.starts_with("cuda:")) {
    std::string_view n = text.substr(5);
    if (n.empty() || n.size() > 3) throw bad();
    int index = 0;
    for (char c : n) {
      if (!std::isdigit(static_cast<unsigned char>(c))) throw bad();
      index = index * 10 + (c - '0');
    }
    return {device_kind::cuda, index};
  }
  throw bad();
}

gpu_probe probe_gpus() {
  gpu_probe p;
  p.device_node = ::access("/dev/nvidia0", F_OK) == 0;
  if (!find_program("nvidia-smi")) {
    p.smi_error = "nvidia-smi is not on PATH";
    return p;
  }
  process_options opt;
  opt.timeout = std::chrono::seconds(20);
  auto r = run_process({"nvidia-smi", "-L"}, opt);
  if (!r.ok()) {
    p.smi_error = fmt::format("nvidia-smi -L failed ({})", r.describe());
    return p;
  }
  size_t pos = 0;
  while ((pos = r.out.find("GPU ", pos)) != std::string::npos) {
    if (pos == 0 || r.out[pos - 1] == '\n') ++p.smi_gpus;
    pos += 4;
  }
  return p;
}

device_choice choose_device(std::string_view text) {
  if (text != "auto") return choose_device(text, gpu_probe{});
  return choose_device(text, probe_gpus());
}

device_choice choose_device(std::string_view text, const gpu_probe& probe) {
  if (text != "auto") {
    device_id id = parse_device(text);
    return {id, fmt::format("using {} (as asked)", id.str())};
  }
  if (probe.smi_gpus > 0)
    return {{device_kind::cuda, 0}, fmt::format("--device auto: using cuda:0 (nvidia-smi lists {} GPU{})",
                                                probe.smi_gpus, probe.smi_gpus == 1 ? "" : "s")};
  if (probe.device_node)
    return {{device_kind::cuda, 0}, "--device auto: using cuda:0 (/dev/nvidia0 exists)"};
  std::string reason = "no /dev/nvidia0";
  reason += probe.smi_error.empty() ? " and nvidia-smi lists no GPU" : fmt::format(" and {}", probe.smi_error);
  return {{device_kind::cpu, 0}, fmt::format("--device auto: no CUDA GPU found ({}); falling back to cpu", reason)};
}

std::string slug(std::string_view text) {
  std::string out;
  bool dash = false;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      if (dash && !out.empty()) out.push_back('-');
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      dash = false;
    } else {
      dash = true;
    }
  }
  return out;
}

std::string cpu_key() {
  utsname u{};
  std::string machine = ::uname(&u) == 0 ? u.machine : "unknown";
  return "cpu-" + slug(machine);
}

std::string gpu_key(const nlohmann::json& env) {
  std::string device = env.value("device", "");
  if (device == "cpu" || (device.empty() && !env.contains("gpu_name"))) return cpu_key();
  std::string arch = env.value("arch", "");  // "sm_90"
  std::string name = env.value("gpu_name", "");
  if (arch.empty() || name.empty())
    throw infra_error(fmt::format("worker env lacks arch or gpu_name, cannot form a GPU key: {}", env.dump()));
  std::string a;
  for (char c : arch)
    if (std::isalnum(static_cast<unsigned char>(c))) a.push_back(static_cast<char>(std::tolower(c)));
  return a + "-" + slug(name);
}

std::filesystem::path gpu_timing_lock(const device_id& d) {
  if (d.kind != device_kind::cuda) return {};
  std::string name = std::to_string(d.index);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    std::istringstream listed(visible);
    std::string item;
    for (int i = 0; std::getline(listed, item, ','); ++i) {
      std::erase_if(item, [](unsigned char c) { return std::isspace(c); });
      if (i == d.index && !item.empty()) name = slug(item);  // an ordinal of the machine, or a GPU's UUID
    }
  }
  const char* dir = std::getenv("KFORGE_LOCK_DIR");
  return std::filesystem::path(dir && *dir ? dir : "/tmp") / fmt::format("kforge-gpu-timing-{}.lock", name);
}

}  // namespace kf
