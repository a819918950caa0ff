// SM clock readings through NVML, loaded with dlopen at run time so that nothing links against the driver's
// library: on a machine without it the clock check is off, and says so, instead of the worker not starting.
#pragma once
#include <optional>
#include <string>

namespace kf::measure {

class nvml_clocks {
 public:
  // Loads `library` (default the driver's libnvidia-ml.so.1) and finds the device with this PCI bus id
  // ("0000:17:00.0", as cudaDeviceGetPCIBusId gives it). Never throws: check available() and why_not().
  explicit nvml_clocks(const std::string& pci_bus_id, const std::string& library = "libnvidia-ml.so.1");
  ~nvml_clocks();
  nvml_clocks(const nvml_clocks&) = delete;
  nvml_clocks& operator=(const nvml_clocks&) = delete;

  bool available() const { return m_device != nullptr; }
  const std::string& why_not() const { return m_why_not; }
  std::optional<double> sm_clock_mhz() const;      // the current SM clock
  std::optional<double> max_sm_clock_mhz() const;  // the default (maximum) SM clock
  std::optional<std::string> driver_version() const;

 private:
  struct api;
  void* m_lib = nullptr;
  void* m_device = nullptr;
  api* m_api = nullptr;
  std::string m_why_not;
};

}  // namespace kf::measure
