// NVML through dlopen: see nvml.h. The few declarations below follow nvml.h of the CUDA toolkit (a stable
// C ABI: return codes are ints, 0 is success; device handles are opaque pointers).
#include "measure/nvml.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace kf::measure {

namespace {
using nvml_return = int;
using nvml_device = void*;
constexpr int k_nvml_clock_sm = 1;  // NVML_CLOCK_SM
}  // namespace

struct nvml_clocks::api {
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  nvml_return (*by_pci)(const char*, nvml_device*) = nullptr;
  nvml_return (*clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*max_clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*driver)(char*, unsigned) = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  bool initialized = false;
};

nvml_clocks::nvml_clocks(const std::string& pci_bus_id, const std::string& library) {
  m_lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m_lib) {
    const char* e = dlerror();
    m_why_not = fmt::format("cannot load {}: {}", library, e ? e : "unknown error");
    return;
  }
  m_api = new api;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(m_lib, name));
    if (!fn && m_why_not.empty()) m_why_not = fmt::format("{} lacks {}", library, name);
  };
  sym(m_api->init, "nvmlInit_v2");
  sym(m_api->shutdown, "nvmlShutdown");
  sym(m_api->by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  sym(m_api->clock, "nvmlDeviceGetClockInfo");
  sym(m_api->max_clock, "nvmlDeviceGetMaxClockInfo");
  sym(m_api->driver, "nvmlSystemGetDriverVersion");
  sym(m_api->error_string, "nvmlErrorString");
  if (!m_why_not.empty()) return;
  if (nvml_return rc = m_api->init(); rc != 0) {
    m_why_not = fmt::format("nvmlInit failed: {}", m_api->error_string(rc));
    return;
  }
  m_api->initialized = true;
  nvml_device dev = nullptr;
  if (nvml_return rc = m_api->by_pci(pci_bus_id.c_str(), &dev); rc != 0) {
    m_why_not = fmt::format("NVML has no device at PCI bus id {}: {}", pci_bus_id, m_api->error_string(rc));
    return;
  }
  m_device = dev;
}

nvml_clocks::~nvml_clocks() {
  if (m_api && m_api->initialized) m_api->shutdown();
  delete m_api;
  if (m_lib) dlclose(m_lib);
}

std::optional<double> nvml_clocks::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (!m_device || m_api->clock(m_device, k_nvml_clock_sm, &mhz) != 0) return std::nullopt;
  return mhz;
}

std::optional<double> nvml_clocks::max_sm_clock_mhz() const {
  unsigned mhz = 0;
  if (!m_device || m_api->max_clock(m_device, k_nvml_clock_sm, &mhz) != 0) return std::nullopt;
  return mhz;
}

std::optional<std::string> nvml_clocks::driver_version() const {
  char buf[96] = {};
  if (!m_device || m_api->driver(buf, sizeof buf) != 0) return std::nullopt;
  return std::string(buf);
}

}  // namespace kf::measure
