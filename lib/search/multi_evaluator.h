// The search on several devices (`kforge search --devices`): one evaluator per device (a worker each; a device may
// repeat), a batch's candidates taken from one queue by a thread per device, so that a slow device takes fewer.
// Each candidate is verified and timed whole on one device; its per-case times are put on the reference device's
// scale (the first device alive when the baselines were timed) by the ratio of the two devices' own baseline times
// for that case, before the tree sees them (the raw times and the device stay in the result). Racing stays within
// a device (each evaluator races its own fastest). A device whose evaluator throws infra_error, or that fails
// several candidates in a row and then cannot time its baselines any more, is taken out; what it had in flight goes
// back to the queue once. When every device is lost the search stops with the last device's error.
#pragma once
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "search/evaluator.h"

namespace kf {

struct multi_device {
  std::string name;  // "cuda:1"; "cpu#2" for a repeated device
  evaluator* ev = nullptr;
};

struct multi_evaluator_options {
  // Compiles candidates into the shared compile cache (blocking), so that the device evaluating one finds it
  // there; empty: each device compiles its own (the tests' fakes). `compile_first`: the whole batch before any is
  // timed (the cpu device, whose timing a compiler on the same cores would skew); else each candidate in the
  // background, the device taking it waiting for its compile.
  std::function<void(const std::vector<candidate>&)> compile;
  bool compile_first = true;
  // Failures in a row (not compile failures) after which a device is probed by timing its baselines again.
  int probe_after_failures = 3;
};

class multi_evaluator final : public evaluator {
 public:
  multi_evaluator(std::vector<multi_device> devices, multi_evaluator_options options = {});

  nlohmann::json baselines() override;
  std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                    double stop_at_s) override;
  eval_result confirm(const candidate& c) override;
  nlohmann::json environment() override;
  beside_baselines time_beside_baselines(const candidate& winner, const candidate* stored) override;

  struct device_state {
    std::string name;
    int evaluations = 0;  // candidates this device evaluated (results kept)
    double busy_s = 0;    // seconds spent evaluating them
    bool lost = false;
    std::string why_lost;
    std::map<std::string, double> scale;  // per gated case: reference time / this device's time (1 on the reference)
  };
  const std::vector<device_state>& devices() const { return m_state; }
  // The device confirm() and time_beside_baselines() run on: the first alive.
  std::string reference() const;
  // The baseline the scales come from ("eager" when both have it), or "" when none was timed.
  const std::string& scale_baseline() const { return m_scale_by; }

 private:
  void calibrate();
  void lose(size_t d, std::string why, std::exception_ptr e = nullptr);
  size_t first_alive() const;  // m_devices.size() when none
  void normalize(size_t d, eval_result& r) const;
  double geoscale(size_t d) const;
  [[noreturn]] void all_lost() const;

  std::vector<multi_device> m_devices;
  multi_evaluator_options m_options;
  std::vector<device_state> m_state;
  std::vector<nlohmann::json> m_baselines;  // per device
  bool m_calibrated = false;
  std::string m_scale_by;
  std::exception_ptr m_last_error;
  std::exception_ptr m_fatal;  // evaluate(): an error that is not a device's (rethrown)
};

}  // namespace kf
