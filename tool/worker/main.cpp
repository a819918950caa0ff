// kforge-worker: the process that touches a device. Started by kforge (one per device), it answers requests on
// stdin/stdout (docs/worker-protocol.md); a candidate that crashes or hangs takes only this process down.
// Its command table is here, above every layer whose commands it runs (add a command: one line below).
#include "exec/worker_device.h"
#include "register.h"  // baselines/
#include "measure/measure_command.h"
#include "verify/verify_worker.h"

namespace kf {
namespace {

const std::vector<worker_command>& worker_commands() {
  static const std::vector<worker_command> table = [] {
    std::vector<worker_command> t = core_worker_commands();  // hello, shutdown, debug
    t.push_back({"env", "the device, driver and library versions", env_command});
    t.push_back({"verify", "the dynamic verify rules on one implementation (docs/design.md \"Verify\")", verify_command});
    t.push_back({"measure", "cold/hot timing of implementations against floors", measure_command});
    return t;
  }();
  return table;
}

}  // namespace
}  // namespace kf

int main(int argc, char** argv) {
  kf::register_baseline_kinds();  // the worker's "eager", "compile" and "vendor" implementation kinds
  return kf::run_worker(argc, argv, kf::worker_commands(), kf::worker_setup);
}
