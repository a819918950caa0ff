// kforge check: compile one kernel and verify it against a workload on every case (docs/design.md "Verify"): the
// static scan, the compile, then the dynamic rules in a worker, case by case. Prints the verdict per rule and
// case. Exit 0 passed, 1 failed (a compile error, a crash, a hang and an exit included), 2 bad inputs.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "exec/compile.h"
#include "exec/device.h"
#include "exec/worker_client.h"
#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"
#include "verify/check.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"workload", true, "the workload: a name under --workloads, or a spec file", "NAME|PATH"},
    {"kernel", true, "the candidate: a .cu (cuda) or .cpp (cpu) file against kf_abi.h", "FILE"},
    {"device", true, "cpu, cuda, cuda:N or auto (default: cpu for a .cpp kernel, else auto)", "D"},
    sandbox_flag(),
    {"timeout", true, "per case, for the worker's answer (default 30s)", "T"},
    {"seeds", true, "fresh input seeds per case, at least 3 (default 3)", "N"},
    {"case", true, "verify only this case (by its name, e.g. R=5,C=33)", "NAME"},
    {"no-adversarial", false, "skip the adversarial inputs"},
    {"no-static-scan", false, "skip the static scan (to see what the sandbox and the dynamic rules alone catch)"},
    {"workloads", true, "the folder of workload specs (default workloads)", "DIR"},
    {"cache", true, "the compile cache's folder (default .kforge/cache)", "DIR"},
    {"json", false, "print the report as JSON on stdout"},
};

device_choice pick_device(const args& a, const std::string& kernel) {
  bool is_cpp = kernel.ends_with(".cpp") || kernel.ends_with(".cc") || kernel.ends_with(".cxx");
  bool is_cu = kernel.ends_with(".cu");
  if (!is_cpp && !is_cu)
    throw user_error(source_loc{kernel}, "--kernel: expected a .cu file (cuda) or a .cpp file (cpu)");
  std::string asked = a.get_or("device", is_cpp ? "cpu" : "auto");
  device_choice d = choose_device(asked);
  if (is_cu && d.id.kind == device_kind::cpu)
    throw user_error(source_loc{kernel}, fmt::format("a .cu kernel needs a CUDA device, but {}", d.why));
  if (is_cpp && d.id.kind == device_kind::cuda)
    throw user_error(source_loc{kernel}, fmt::format("a .cpp kernel runs on the cpu device, not {}", d.id.str()));
  return d;
}

}  // namespace

std::string check_help() {
  return "usage: kforge check --workload NAME|PATH --kernel FILE [options]\n\n"
         "Compiles the kernel and verifies it on every case of the workload: static scan, compile, float64\n"
         "reference within tolerance, NaN/Inf positions, every output written, inputs unchanged, first run at\n"
         "fresh addresses, new inputs at the same addresses, bitwise reruns, the stream discipline, guard bytes.\n"
         "A crash, hang or exit costs one worker and fails the case it happened on.\n\noptions:\n" +
         flags_help(k_flags) + "\nexit codes: 0 passed, 1 failed, 2 bad inputs or infrastructure error\n";
}

int check_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  apply_sandbox_flag(a);
  if (!a.positional().empty()) throw user_error(fmt::format("unexpected argument '{}'", a.positional()[0]));
  auto workload = a.get("workload");
  auto kernel = a.get("kernel");
  if (!workload) throw user_error("--workload is required (a name under workloads/ or a spec file)");
  if (!kernel) throw user_error("--kernel is required (the .cu or .cpp file to check)");
  if (!std::filesystem::is_regular_file(*kernel)) throw user_error(source_loc{*kernel}, "kernel file not found");

  check_options opt;
  opt.seeds = a.get_int("seeds", 3);
  if (opt.seeds < 3) throw user_error(fmt::format("--seeds: at least 3 (docs/design.md \"Verify\"), got {}", opt.seeds));
  const double timeout = a.get_double_in("timeout", 30, 0.001, 86400, "seconds");
  opt.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
  opt.adversarial = !a.has("no-adversarial");
  opt.static_scan = !a.has("no-static-scan");

  workload_spec spec = load_spec(*workload, a.get_or("workloads", "workloads"));
  if (auto c = a.get("case")) {
    if (!spec.find_case(*c)) {
      std::string names;
      for (auto& k : spec.cases) names += (names.empty() ? "" : ", ") + k.name;
      throw user_error(fmt::format("--case: workload {} has no case '{}' (cases: {})", spec.name, *c, names));
    }
    opt.cases = {*c};
  }
  device_choice dev = pick_device(a, *kernel);
  bool json = a.has("json");
  if (!json) term::say("{}", dev.why);

  compile_options co;
  co.cache_root = a.get_or("cache", ".kforge/cache");
  compiler cc(co);
  worker_options wo;
  wo.device = dev.id;
  worker_client worker(wo);
  std::string source = read_file(*kernel);
  std::string name = std::filesystem::path(*kernel).filename().string();
  if (!json) term::progress(fmt::format("checking {} against {} on {}...", name, spec.name, dev.id.str()));
  check_report report = check_candidate(spec, source, name, cc, worker, opt);
  if (!json) term::end_progress();

  bool passed = report.result.passed();
  if (json) {
    nlohmann::json j = report.to_json();
    j["workload"] = spec.name;
    j["kernel"] = *kernel;
    j["device"] = dev.id.str();
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::string head = fmt::format("{} on {} ({}), {} seeds per case, {:.1f} s", name, spec.name, dev.id.str(),
                                   opt.seeds, report.seconds);
    if (report.compile.ok && report.compile.resource.known())
      head += fmt::format("; {} registers, {} B smem, {} B spilled", report.compile.resource.registers,
                          report.compile.resource.smem_bytes, report.compile.resource.spill_stores);
    std::printf("%s\n%s", head.c_str(), report.result.text().c_str());
    if (!passed) std::printf("first failure: %s\n", report.result.first_failure().c_str());
  }
  return passed ? exit_ok : exit_gate_failed;
}

}  // namespace kf
