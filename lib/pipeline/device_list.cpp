#include "pipeline/device_list.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"

namespace kf {
namespace {

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    items.emplace_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

// Names for the reports: a device listed once is its own name; a repeated one is numbered ("cpu#1", "cpu#2").
std::vector<std::string> names_of(const std::vector<device_id>& ids) {
  std::map<std::string, int> count, seen;
  for (const auto& id : ids) ++count[id.str()];
  std::vector<std::string> names;
  for (const auto& id : ids) {
    std::string s = id.str();
    names.push_back(count[s] == 1 ? s : fmt::format("{}#{}", s, ++seen[s]));
  }
  return names;
}

}  // namespace

device_list parse_device_list(std::string_view text) {
  bool needs_probe =
      text == "all" || text.find("cuda") != std::string_view::npos || text.find("gpu") != std::string_view::npos;
  return parse_device_list(text, needs_probe ? probe_gpus() : gpu_probe{});
}

device_list parse_device_list(std::string_view text, const gpu_probe& probe) {
  const std::string choices = "`all` or a comma list of cpu, cuda, cuda:N (repeats allowed)";
  device_list out;
  if (text == "all") {
    if (probe.smi_gpus > 0) {
      for (int i = 0; i < probe.smi_gpus; ++i) out.ids.push_back({device_kind::cuda, i});
      out.why = fmt::format("--devices all: {} GPU{} (nvidia-smi lists them), one worker each", probe.smi_gpus,
                            probe.smi_gpus == 1 ? "" : "s");
    } else if (probe.device_node) {
      out.ids.push_back({device_kind::cuda, 0});
      out.why = fmt::format(
          "--devices all: using cuda:0 only (/dev/nvidia0 exists, but nvidia-smi cannot count the "
          "GPUs: {})",
          probe.smi_error.empty() ? "it lists none" : probe.smi_error);
    } else {
      out.ids.push_back({device_kind::cpu, 0});
      std::string reason = "no /dev/nvidia0";
      reason += probe.smi_error.empty() ? " and nvidia-smi lists no GPU" : fmt::format(" and {}", probe.smi_error);
      out.why = fmt::format("--devices all: no CUDA GPU found ({}); falling back to cpu", reason);
    }
    out.names = names_of(out.ids);
    return out;
  }
  for (const auto& item : split_commas(text)) {
    if (item.empty()) throw user_error(fmt::format("--devices: an empty item in '{}': expected {}", text, choices));
    if (item == "all" || item == "auto")
      throw user_error(
          fmt::format("--devices: '{}' stands alone, not in a list ('{}'): expected {}", item, text, choices));
    device_id id;
    try {
      id = parse_device(item);
    } catch (const user_error&) {
      throw user_error(fmt::format("--devices: unknown device '{}' in '{}': expected {}", item, text, choices));
    }
    if (id.kind == device_kind::cuda && probe.smi_gpus > 0 && id.index >= probe.smi_gpus)
      throw user_error(fmt::format("--devices: {}: nvidia-smi lists {} GPU{} (cuda:0 to cuda:{})", id.str(),
                                   probe.smi_gpus, probe.smi_gpus == 1 ? "" : "s", probe.smi_gpus - 1));
    out.ids.push_back(id);
  }
  out.names = names_of(out.ids);
  out.why = fmt::format("--devices: {} (as asked), one worker each", fmt::join(out.names, ", "));
  for (const auto& name : out.names)
    if (name.find('#') != std::string::npos) {  // the workers share the device: each skews the other's timings
      out.why += "; workers sharing a device time each other's load: for testing the scheduling, not for numbers";
      break;
    }
  return out;
}

void check_one_gpu_key(const std::vector<std::string>& names, const std::vector<std::string>& keys,
                       std::string_view why) {
  KF_ASSERT(names.size() == keys.size(), "{} devices, {} keys", names.size(), keys.size());
  std::map<std::string, std::vector<std::string>> by_key;
  for (size_t i = 0; i < names.size(); ++i) by_key[keys[i]].push_back(names[i]);
  if (by_key.size() <= 1) return;
  std::vector<std::string> parts;
  for (auto& [key, on] : by_key) parts.push_back(fmt::format("{} on {}", key, fmt::join(on, ", ")));
  throw user_error(fmt::format("--devices: the devices have different GPU keys ({}); {}", fmt::join(parts, "; "), why));
}

}  // namespace kf
