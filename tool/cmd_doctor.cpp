// kforge doctor: the environment as kforge sees it, and what is missing. Exit 0 when the essentials for the
// cpu device are there (a C++ compiler, kforge-worker), 2 otherwise.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "doctor_probe.h"
#include "util/error.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"json", false, "print the findings as JSON on stdout"},
    {"workloads", true, "the workloads folder to check (default: workloads)", "DIR"},
    {"python", true, "the python that exports the compile baseline (default: python3)", "PATH"},
    {"no-torch", false, "do not import torch (it takes a few seconds)"},
};

}  // namespace

std::string doctor_help() {
  return "usage: kforge doctor [options]\n\n"
         "Shows compilers, python + torch, GPUs (nvidia-smi), cuDNN, libgit2/SQLite, the LLM endpoint and the\n"
         "workloads folder, one line each: ok|missing|warn  what  detail  (what to do).\n\noptions:\n" +
         flags_help(k_flags) + "\nexit codes: 0 the cpu device's essentials are there, 2 something essential is missing\n";
}

int doctor_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  doctor_options o;
  o.workloads_dir = a.get_or("workloads", o.workloads_dir);
  o.python = a.get_or("python", o.python);
  o.probe_torch = !a.has("no-torch");
  doctor_report r = probe_environment(o);
  // Hook for the worker's own view (SM count, clocks, CUDA runtime, torch as the worker sees them): start a
  // worker per device, ask `env`, and add_worker_env(&r, answer).
  if (a.has("json")) std::printf("%s\n", r.to_json().dump(2).c_str());
  else std::printf("%s%s\n", r.to_text().c_str(), r.cpu_ready() ? "ready for --device cpu" : "not ready: fix the `missing` lines above");
  return r.cpu_ready() ? exit_ok : exit_usage;
}

}  // namespace kf
