// kforge doctor: the environment as kforge sees it, and what is missing. Exit 0 when the essentials for the
// cpu device are there (a C++ compiler, kforge-worker), 2 otherwise.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "doctor_probe.h"
#include "exec/device.h"
#include "exec/worker_client.h"
#include "util/error.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"json", false, "print the findings as JSON on stdout"},
    {"workloads", true, "the workloads folder to check (default: workloads)", "DIR"},
    {"python", true, "the python that exports the compile baseline (default: python3)", "PATH"},
    {"no-torch", false, "do not import torch (it takes a few seconds)"},
    {"no-worker", false, "do not start a kforge-worker per device to ask for its view"},
};

// The worker's own view of each device: the cpu, and every GPU nvidia-smi listed. A worker that cannot start
// or answer is a warning with its last words, not a failure of doctor.
void ask_workers(doctor_report* r) {
  std::vector<std::string> devices = {"cpu"};
  int gpus = 0;
  for (const auto& c : r->checks)
    if (c.status == "ok" && c.what.rfind("gpu ", 0) == 0) devices.push_back(fmt::format("cuda:{}", gpus++));
  for (const auto& d : devices) {
    try {
      worker_options wo;
      wo.device = parse_device(d);
      worker_client w(wo);
      worker_outcome o = w.request({{"cmd", "env"}}, std::chrono::seconds(60));
      if (o.ok() && o.response.value("ok", false)) {
        add_worker_env(r, o.response.value("env", nlohmann::json::object()));
        continue;
      }
      std::string why = o.ok() ? o.response.value("error", "no environment") : o.describe();
      r->checks.push_back({"warn", "worker " + d, why + (o.stderr_tail.empty() ? "" : ": " + o.stderr_tail),
                           "run kforge-worker --device " + d + " by hand to see why"});
    } catch (const std::exception& e) {
      r->checks.push_back({"warn", "worker " + d, e.what(), "set KFORGE_WORKER or rebuild kforge-worker"});
    }
  }
}

}  // namespace

std::string doctor_help() {
  return "usage: kforge doctor [options]\n\n"
         "Shows compilers, python + torch, GPUs (nvidia-smi), cuDNN, libgit2/SQLite, the LLM endpoint, the\n"
         "workloads folder and each device as its kforge-worker sees it (SM count, clocks, CUDA runtime), one line\n"
         "each: ok|missing|warn  what  detail  (what to do).\n\noptions:\n" +
         flags_help(k_flags) + "\nexit codes: 0 the cpu device's essentials are there, 2 something essential is missing\n";
}

int doctor_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  doctor_options o;
  o.workloads_dir = a.get_or("workloads", o.workloads_dir);
  o.python = a.get_or("python", o.python);
  o.probe_torch = !a.has("no-torch");
  doctor_report r = probe_environment(o);
  if (!a.has("no-worker") && r.cpu_ready()) ask_workers(&r);
  if (a.has("json")) std::printf("%s\n", r.to_json().dump(2).c_str());
  else std::printf("%s%s\n", r.to_text().c_str(), r.cpu_ready() ? "ready for --device cpu" : "not ready: fix the `missing` lines above");
  return r.cpu_ready() ? exit_ok : exit_usage;
}

}  // namespace kf
