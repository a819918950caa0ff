#include "pipeline/worker_backend.h"

#include <fmt/format.h>

#include "util/error.h"

namespace kf {

worker_backend::worker_backend(device_id device, compile_options compile, check_options check)
    : m_device(device),
      m_compiler(compile),
      m_baselines(baseline_target{std::string(kf::device_kind_name(device.kind)), compile.cache_root}),
      m_check(std::move(check)),
      m_worker([&] {
        worker_options o;
        o.device = device;
        return o;
      }()) {}

std::string worker_backend::device_kind_name() const { return std::string(kf::device_kind_name(m_device.kind)); }

nlohmann::json worker_backend::env() {
  if (!m_env.is_null()) return m_env;
  worker_outcome o = m_worker.request({{"cmd", "env"}}, std::chrono::seconds(120));
  if (!o.ok() || !o.response.value("ok", false))
    throw infra_error(fmt::format("kforge-worker on {} cannot report its environment: {}{}", m_device.str(),
                                  o.ok() ? o.response.value("error", "?") : o.describe(),
                                  o.stderr_tail.empty() ? "" : "\n" + o.stderr_tail));
  m_env = o.response["env"];
  return m_env;
}

std::string worker_backend::probe() {
  worker_outcome o = m_worker.request({{"cmd", "env"}}, std::chrono::seconds(120));
  if (o.ok() && o.response.value("ok", false)) return "";
  return fmt::format("kforge-worker on {} {}", m_device.str(),
                     o.ok() ? "cannot report its environment: " + o.response.value("error", "?") : o.describe());
}

candidate_check worker_backend::check(const workload_spec& spec, const std::string& source, const std::string& name) {
  check_report rep = check_candidate(spec, source, name, m_compiler, m_worker, m_check);
  candidate_check out;
  out.verify.verdict = rep.result.passed() ? "passed" : "failed";
  for (const auto& c : rep.result.checks()) {
    verify_check k;
    k.rule = c.rule;
    k.case_name = c.case_name;
    k.seed = c.seed < 0 ? 0 : c.seed;
    k.passed = c.passed();
    k.detail = c.status == check_status::skipped ? "skipped: " + c.detail : c.detail;
    k.numbers = c.numbers;
    out.verify.checks.push_back(std::move(k));
  }
  if (rep.result.checks().empty()) out.verify.why = "no checks ran";
  if (rep.compile.ok) out.so_path = rep.compile.so_path;
  else out.compile_log = rep.compile.log;
  return out;
}

compile_result worker_backend::compile(const std::string& source, const std::string& name) {
  compile_request req;
  req.source = source;
  req.device = m_device.kind;
  req.name = name;
  if (m_device.kind == device_kind::cuda) req.arch = compile_arch(env());
  return m_compiler.compile(req);
}

worker_outcome worker_backend::measure(const nlohmann::json& request, std::chrono::milliseconds timeout) {
  return m_worker.request(request, timeout);
}

nlohmann::json worker_backend::baseline_impl(const std::string& name, const workload_spec& spec,
                                             const std::vector<std::string>& cases, const std::string& gpu_key) {
  return m_baselines.impl(name, spec, cases, gpu_key);
}

void worker_backend::prepare_baseline(const std::string& name, const std::vector<baseline_work>& work,
                                      const std::string& gpu_key) {
  m_baselines.prepare(name, work, gpu_key);
}

std::string worker_backend::compiler_identity() {
  std::string id = m_compiler.compiler_identity(m_device.kind);
  auto nl = id.find('\n');
  // nvcc's first line is its name; the version is on the last line.
  if (m_device.kind == device_kind::cuda) {
    auto last = id.find_last_of('\n', id.size() > 1 ? id.size() - 2 : 0);
    return last == std::string::npos ? id : id.substr(last + 1);
  }
  return nl == std::string::npos ? id : id.substr(0, nl);
}

}  // namespace kf
