#include "doctor_probe.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <git2.h>
#include <sqlite3.h>

#include "spec/spec_parse.h"
#include "util/subprocess.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

process_result run_quiet(const std::vector<std::string>& argv, int seconds = 30) {
  process_options o;
  o.timeout = std::chrono::seconds(seconds);
  return run_process(argv, o);
}

std::string program_or(const char* built_in, const std::string& name, const std::vector<std::string>& extra = {}) {
  if (built_in && *built_in && fs::exists(built_in)) return built_in;
  if (auto p = find_program(name)) return *p;
  for (auto& e : extra)
    if (fs::exists(e)) return e;
  return {};
}

void compilers(doctor_report* r) {
  std::string cxx = program_or(KFORGE_CXX_COMPILER, "g++");
  if (cxx.empty()) {
    r->checks.push_back({"missing", "c++ compiler", "no g++ on PATH", "install g++ (candidates for the cpu device are compiled with it)", true});
  } else {
    auto p = run_quiet({cxx, "--version"});
    r->checks.push_back({p.ok() ? "ok" : "missing", "c++ compiler", fmt::format("{} ({})", first_line(p.out), cxx),
                         p.ok() ? "" : "the compiler does not run: " + p.describe(), true});
  }
  std::string nvcc = program_or(KFORGE_NVCC, "nvcc", {"/usr/local/cuda/bin/nvcc"});
  if (nvcc.empty()) {
    r->checks.push_back({"warn", "nvcc", "not found", "install the CUDA toolkit (needed for the cuda device only)"});
    return;
  }
  auto p = run_quiet({nvcc, "--version"});
  std::smatch m;
  std::string v = std::regex_search(p.out, m, std::regex(R"(release ([0-9.]+), (V[0-9.]+))")) ? m[1].str() + " (" + m[2].str() + ")" : trim(p.out);
  r->checks.push_back({p.ok() ? "ok" : "warn", "nvcc", fmt::format("{} ({})", v, nvcc), p.ok() ? "" : "nvcc does not run: " + p.describe()});
}

void worker(doctor_report* r) {
  fs::path beside;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) beside = self.parent_path() / "kforge-worker";
  std::string env = std::getenv("KFORGE_WORKER") ? std::getenv("KFORGE_WORKER") : "";
  for (const fs::path& p : {fs::path(env), beside, fs::path(KFORGE_BINARY_DIR) / "kforge-worker"}) {
    if (!p.empty() && fs::exists(p)) {
      r->checks.push_back({"ok", "kforge-worker", p.string(), "", true});
      return;
    }
  }
  r->checks.push_back({"missing", "kforge-worker", "not beside kforge, not in $KFORGE_WORKER",
                       "build it (ci/build) or set KFORGE_WORKER to its path", true});
}

void python_torch(doctor_report* r, const doctor_options& o) {
  std::string py = program_or(nullptr, o.python);
  if (py.empty()) {
    r->checks.push_back({"warn", "python", o.python + " not found", "install python3 with torch (the compile baseline is skipped without it)"});
    return;
  }
  if (!o.probe_torch) {
    r->checks.push_back({"ok", "python", py, ""});
    return;
  }
  auto p = run_quiet({py, "-c", "import sys, torch; print(sys.version.split()[0]); print(torch.__version__); print(torch.version.cuda or 'none')"}, 120);
  std::istringstream lines(p.out);
  std::string pyv, tv, cv;
  std::getline(lines, pyv), std::getline(lines, tv), std::getline(lines, cv);
  if (!p.ok() || tv.empty()) {
    r->checks.push_back({"warn", "python + torch", fmt::format("{}: torch does not import ({})", py, p.describe()),
                         "pip install torch (the compile baseline, AOTInductor export, is skipped without it)"});
    return;
  }
  r->checks.push_back({"ok", "python + torch", fmt::format("python {}, torch {} (CUDA {}) at {}", pyv, tv, cv, py), ""});
}

void gpus(doctor_report* r) {
  std::string smi = program_or(nullptr, "nvidia-smi");
  if (smi.empty()) {
    r->checks.push_back({"warn", "gpu", "no nvidia-smi: no NVIDIA GPU or driver", "runs use the cpu device (--device cpu)"});
    return;
  }
  auto p = run_quiet({smi, "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader"});
  if (!p.ok() || trim(p.out).empty()) {
    r->checks.push_back({"warn", "gpu", fmt::format("nvidia-smi failed ({}): {}", p.describe(), trim(first_line(p.err))),
                         "check the driver (nvidia-smi must list the GPU)"});
    return;
  }
  std::istringstream lines(p.out);
  std::string line;
  for (int i = 0; std::getline(lines, line); ++i)
    if (!trim(line).empty()) r->checks.push_back({"ok", fmt::format("gpu {}", i), trim(line), ""});
}

void cudnn(doctor_report* r) {
  std::vector<fs::path> headers = {"/usr/local/cuda/include/cudnn_version.h"};
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/usr/include/x86_64-linux-gnu", ec))
    if (e.path().filename().string().starts_with("cudnn_version")) headers.push_back(e.path());
  for (auto& h : headers) {
    std::ifstream f(h);
    if (!f) continue;
    std::string text((std::istreambuf_iterator<char>(f)), {});
    auto get = [&](const char* name) {
      std::smatch m;
      return std::regex_search(text, m, std::regex(fmt::format(R"(#define {}\s+(\d+))", name))) ? m[1].str() : "?";
    };
    r->checks.push_back({"ok", "cudnn", fmt::format("{}.{}.{} ({})", get("CUDNN_MAJOR"), get("CUDNN_MINOR"), get("CUDNN_PATCHLEVEL"), h.string()), ""});
    return;
  }
  r->checks.push_back({"warn", "cudnn", "no cudnn_version.h", "install cuDNN (the vendor baseline is skipped without it)"});
}

void libraries(doctor_report* r) {
  int major = 0, minor = 0, rev = 0;
  git_libgit2_version(&major, &minor, &rev);
  r->checks.push_back({"ok", "libgit2", fmt::format("{}.{}.{}", major, minor, rev), ""});
  r->checks.push_back({"ok", "sqlite", sqlite3_libversion(), ""});
}

void llm(doctor_report* r) {
  std::vector<std::string> set;
  for (const char* v : {"KFORGE_LLM_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"})
    if (const char* s = std::getenv(v); s && *s) set.push_back(v);  // never the values
  if (set.empty())
    r->checks.push_back({"warn", "llm endpoint", "none configured",
                         "set KFORGE_LLM_URL (+ OPENAI_API_KEY) or ANTHROPIC_API_KEY for the llm proposer; search uses templates"});
  else
    r->checks.push_back({"ok", "llm endpoint", fmt::format("{} set", fmt::join(set, ", ")), ""});
}

void workloads(doctor_report* r, const doctor_options& o) {
  if (!fs::is_directory(o.workloads_dir)) {
    r->checks.push_back({"warn", "workloads", o.workloads_dir + " is not a folder",
                         "run from the repository root or pass --workloads DIR"});
    return;
  }
  auto files = find_specs(o.workloads_dir);
  size_t bad = 0;
  for (auto& f : files) {
    workload_spec s;
    bad += !parse_spec(f, &s).empty();
  }
  if (files.empty())
    r->checks.push_back({"warn", "workloads", o.workloads_dir + " holds no *.yaml specs", "add a spec (see docs/workload-spec.md)"});
  else if (bad)
    r->checks.push_back({"warn", "workloads", fmt::format("{}: {} specs, {} invalid", o.workloads_dir, files.size(), bad),
                         "kforge validate " + o.workloads_dir});
  else
    r->checks.push_back({"ok", "workloads", fmt::format("{}: {} specs, all valid", o.workloads_dir, files.size()), ""});
}

}  // namespace

bool doctor_report::cpu_ready() const {
  for (auto& c : checks)
    if (c.essential && c.status != "ok") return false;
  return true;
}

nlohmann::json doctor_report::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (auto& c : checks)
    list.push_back({{"status", c.status}, {"what", c.what}, {"detail", c.detail}, {"fix", c.fix}, {"essential", c.essential}});
  return {{"version", KFORGE_VERSION}, {"cpu_ready", cpu_ready()}, {"checks", list}};
}

std::string doctor_report::to_text() const {
  std::string s;
  for (auto& c : checks)
    s += fmt::format("{:<8} {:<16} {}{}\n", c.status, c.what, c.detail, c.fix.empty() ? "" : fmt::format("  ({})", c.fix));
  return s;
}

doctor_report probe_environment(const doctor_options& options) {
  doctor_report r;
  r.checks.push_back({"ok", "kforge", fmt::format("{} ({})", KFORGE_VERSION, KFORGE_WITH_CUDA ? "built with CUDA" : "cpu only"), ""});
  compilers(&r);
  worker(&r);
  python_torch(&r, options);
  gpus(&r);
  cudnn(&r);
  libraries(&r);
  llm(&r);
  workloads(&r, options);
  return r;
}

void add_worker_env(doctor_report* report, const nlohmann::json& env) {
  if (!env.is_object() || env.empty()) {
    report->checks.push_back({"warn", "worker env", "the worker gave no environment", "run kforge-worker by hand to see why"});
    return;
  }
  auto str = [&](const char* k) { return env.contains(k) ? (env[k].is_string() ? env[k].get<std::string>() : env[k].dump()) : std::string("?"); };
  std::string device = str("device");
  if (device.rfind("cuda", 0) == 0)
    report->checks.push_back({"ok", "worker " + device,
                              fmt::format("{} ({} SMs, SM clock {} MHz, memory clock {} MHz), CUDA runtime {}, cuDNN {}, torch {}",
                                          str("gpu_name"), str("sm_count"), str("sm_clock_mhz"), str("mem_clock_mhz"),
                                          str("cuda_runtime"), str("cudnn"), str("torch")), ""});
  else
    report->checks.push_back({"ok", "worker " + device, fmt::format("{} ({} threads), torch {}", str("cpu_model"), str("threads"), str("torch")), ""});
  // The protections the worker runs candidates under (docs/sandbox.md); `--sandbox strict` needs every one.
  const nlohmann::json sandbox = env.value("sandbox", nlohmann::json::object());
  const std::string mode = sandbox.value("mode", "?");
  if (sandbox.value("protections", nlohmann::json::array()).empty())
    report->checks.push_back({"warn", "sandbox " + device, "mode " + mode + ": no protection is active",
                              mode == "off" ? "unset KFORGE_SANDBOX=off" : "rebuild kforge-worker"});
  for (const auto& p : sandbox.value("protections", nlohmann::json::array()))
    report->checks.push_back({p.value("active", false) ? "ok" : "warn",
                              fmt::format("sandbox {} {}", device, p.value("name", "?")), p.value("detail", ""),
                              p.value("active", false) ? "" : "kforge run --sandbox strict refuses to run candidates here"});
}

}  // namespace kf
