// The AOTInductor export cache: see export_cache.h.
#include "compile/export_cache.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "exec/device.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/subprocess.h"

namespace kf {
namespace {

// The last non-empty line of a process's output: usually the exception that ended it.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

const std::vector<std::string>& export_modes() {
  static const std::vector<std::string> modes{"default", "max-autotune"};
  return modes;
}

export_cache::export_cache(export_options options) : m_options(std::move(options)) {
  if (m_options.script.empty()) m_options.script = std::filesystem::path(KFORGE_SOURCE_DIR) / "baselines/compile/export.py";
}

const std::string& export_cache::unavailable() {
  if (m_unavailable) return *m_unavailable;
  auto set = [&](std::string why) -> const std::string& { return *(m_unavailable = "skipped: " + why); };
  const std::string& py = m_options.python;
  std::optional<std::string> exe = py.find('/') == std::string::npos ? find_program(py) : std::optional<std::string>(py);
  if (!exe || access(exe->c_str(), X_OK) != 0) return set(fmt::format("no python interpreter `{}`", py));
  if (!std::filesystem::exists(m_options.script))
    return set(fmt::format("the exporter {} is missing", m_options.script.string()));
  process_options po;
  po.timeout = std::chrono::seconds(120);
  process_result r = run_process({*exe, "-c", "import torch; print(torch.__version__)"}, po);
  if (!r.ok()) {
    std::string why = last_line(r.err.empty() ? r.out : r.err);
    return set(fmt::format("{} cannot import torch ({}{}{})", py, r.describe(), why.empty() ? "" : ": ", why));
  }
  m_torch_version = last_line(r.out);
  m_script_text = read_file(m_options.script);
  return *(m_unavailable = "");
}

const std::string& export_cache::torch_version() {
  unavailable();
  return m_torch_version;
}

std::string export_cache::key(const workload_spec& spec, const std::string& case_name, const std::string& gpu_key,
                              const std::string& mode) {
  unavailable();
  return sha256_hex(fmt::format("aoti-v1\n{}\n{}\n{}\n{}\n{}\n{}", spec.hash, case_name, m_torch_version, gpu_key,
                                mode, sha256_hex(m_script_text)));
}

export_outcome export_cache::get(const workload_spec& spec, const std::string& case_name, const std::string& device,
                                 const std::string& gpu_key, const std::string& mode) {
  export_outcome out;
  out.mode = mode;
  if (const std::string& why = unavailable(); !why.empty()) {
    out.skipped = why;
    return out;
  }
  if (!spec.find_case(case_name)) {
    out.skipped = fmt::format("skipped: the spec has no case `{}`", case_name);
    return out;
  }
  std::filesystem::path pt2 = std::filesystem::absolute(folder() / (key(spec, case_name, gpu_key, mode) + ".pt2"));
  out.pt2 = pt2.string();
  if (std::filesystem::exists(pt2)) {
    out.cached = true;
    return out;
  }
  // The exporter writes beside the final name; the rename makes a half-written package impossible to see.
  std::filesystem::create_directories(pt2.parent_path());
  temp_dir tmp("kforge-export");
  std::filesystem::path spec_json = tmp.path() / "spec.json";
  write_file_atomic(spec_json, to_json(spec).dump());
  // Private to this process and thread: the export pool's threads and `kforge run --devices`' device threads (each
  // with its own export_cache) may export one key at once; the last rename wins with an equivalent package.
  std::filesystem::path partial = pt2.string() + fmt::format(".tmp-{}-{}", getpid(),
                                                             std::hash<std::thread::id>{}(std::this_thread::get_id()));
  process_options po;
  po.timeout = m_options.timeout;
  po.merge_stderr = true;
  std::vector<std::string> argv = {m_options.python, m_options.script.string(), "--spec", spec_json.string(), "--case",
                                   case_name, "--device", device, "--mode", mode, "--out", partial.string()};
  if (device.rfind("cuda", 0) == 0) argv.insert(argv.end(), {"--bench-lock", bench_lock(device).string()});
  process_result r = run_process(argv, po);
  out.seconds = r.seconds;
  std::error_code ec;
  if (!r.ok() || !std::filesystem::exists(partial)) {
    std::filesystem::remove(partial, ec);
    out.log = r.out;
    std::string why = last_line(r.out);
    out.skipped = fmt::format("skipped: export ({}) {}{}{}", mode, r.ok() ? "wrote no package" : r.describe(),
                              why.empty() ? "" : ": ", why);
    out.pt2.clear();
    return out;
  }
  std::filesystem::rename(partial, pt2, ec);
  if (ec) {
    out.skipped = fmt::format("skipped: cannot move the package into the cache: {}", ec.message());
    out.pt2.clear();
    return out;
  }
  // What the package was made from, beside it: reproducing it or timing the same module from Python
  // (tests/gpu/compile_parity.py) needs the spec, the case and the mode.
  nlohmann::json manifest = {{"pt2", pt2.filename().string()}, {"spec", to_json(spec)}, {"case", case_name},
                             {"mode", mode}, {"device", device}, {"gpu_key", gpu_key}, {"torch", m_torch_version},
                             {"export_seconds", r.seconds}};
  write_file_atomic(pt2.string().substr(0, pt2.string().size() - 4) + ".json", manifest.dump());
  return out;
}

std::vector<export_outcome> export_cache::get_all(const std::vector<export_job>& jobs, const std::string& device,
                                                 const std::string& gpu_key) {
  // Exports are independent processes that each take seconds to minutes (max-autotune benchmarks configs):
  // run a few at once. Resolve the interpreter first so the workers only read shared state.
  unavailable();
  std::vector<export_outcome> outcomes(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();)
      outcomes[i] = get(*jobs[i].spec, jobs[i].case_name, device, gpu_key, jobs[i].mode);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(export_jobs(), static_cast<int>(jobs.size())); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return outcomes;
}

nlohmann::json export_cache::impl_for(const workload_spec& spec, const std::vector<std::string>& cases,
                                      const std::string& device, const std::string& gpu_key,
                                      const std::vector<std::string>& modes) {
  std::vector<export_job> jobs;
  for (const auto& c : cases)
    for (const auto& mode : modes) jobs.push_back({&spec, c, mode});
  auto outcomes = get_all(jobs, device, gpu_key);
  nlohmann::json impl{{"kind", "compile"}, {"pt2", nlohmann::json::object()}};
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& j = jobs[i];
    if (outcomes[i].ok()) impl["pt2"][j.case_name][j.mode] = outcomes[i].pt2;
    else impl["skipped"][j.case_name][j.mode] = outcomes[i].skipped;
  }
  return impl;
}

int export_cache::prefetch(const std::vector<wanted>& work, const std::string& device, const std::string& gpu_key,
                           const std::vector<std::string>& modes) {
  if (!unavailable().empty()) return 0;
  std::vector<export_job> jobs;
  for (const auto& w : work)
    for (const auto& c : w.cases)
      for (const auto& mode : modes) jobs.push_back({w.spec, c, mode});
  int exported = 0;
  for (const auto& o : get_all(jobs, device, gpu_key)) exported += o.ok() && !o.cached;
  return exported;
}

std::filesystem::path export_cache::bench_lock(const std::string& device) const {
  return gpu_timing_lock(parse_device(device));  // the lock kforge's own timings on that GPU hold
}

int export_jobs() {
  if (const char* env = std::getenv("KFORGE_EXPORT_JOBS"); env && std::atoi(env) > 0) return std::atoi(env);
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 4, 1, 4);
}

}  // namespace kf
