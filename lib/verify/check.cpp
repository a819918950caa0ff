#include "verify/check.h"

#include <algorithm>

#include <fmt/format.h>

#include "spec/ops.h"
#include "util/error.h"
#include "util/text.h"
#include "verify/static_scan.h"

namespace kf {

nlohmann::json check_report::to_json() const {
  nlohmann::json c = compile.to_json();
  if (c["log"].get<std::string>().size() > 20000) c["log"] = c["log"].get<std::string>().substr(0, 20000) + "\n...";
  return {{"passed", result.passed()}, {"verdict", result.to_json()}, {"compile", c}, {"env", env},
          {"seconds", seconds}};
}

std::string compile_arch(const nlohmann::json& env) {
  std::string arch = env.value("arch", "sm_90");
  int number = 0;
  if (arch.size() > 3) number = std::atoi(arch.c_str() + 3);
  return number >= 90 ? arch + "a" : arch;
}

namespace {

// The calls the worker's sandbox denied while it served the request: each a failure of its `sandbox.*` rule.
void add_sandbox_denials(verdict& v, const std::string& case_name, const nlohmann::json& response) {
  for (auto& d : response.value("sandbox_denied", nlohmann::json::array())) {
    std::string rule = d.value("rule", "sandbox.system");
    if (!find_rule(rule)) rule = "sandbox.system";
    v.fail(rule, case_name, -1, d.value("detail", "a call the sandbox denied"));
  }
}

// What a failed exchange with the worker means for the candidate.
void record_outcome(verdict& v, const std::string& case_name, const worker_outcome& o,
                    std::chrono::milliseconds timeout) {
  std::string log = o.stderr_tail.empty() ? "" : "; worker log: " + tail_text(o.stderr_tail, 600);
  switch (o.status) {
    case worker_status::timeout:
      v.fail("hang", case_name, -1, fmt::format("no answer within {:.1f} s; the worker was killed", timeout.count() / 1000.0),
             {{"timeout_s", timeout.count() / 1000.0}});
      break;
    case worker_status::crashed:
      v.fail("crash", case_name, -1, fmt::format("the worker died of {}{}", o.signal, log), {{"signal", o.signal}});
      break;
    case worker_status::exited:
      v.fail("exit", case_name, -1, fmt::format("the worker exited with code {} during the candidate's run{}",
                                                o.exit_code, log), {{"exit_code", o.exit_code}});
      break;
    case worker_status::protocol_error:
      v.fail("crash", case_name, -1, fmt::format("the worker's answer was garbled ({}){}", o.message, log));
      break;
    case worker_status::cuda_poisoned:
      if (o.response.contains("verdict")) v.merge(verdict::from_json(o.response["verdict"]));
      add_sandbox_denials(v, case_name, o.response.value("partial", nlohmann::json::object()));
      if (v.status_of("cuda_error", case_name) != check_status::failed)
        v.fail("cuda_error", case_name, -1, fmt::format("the CUDA context is poisoned: {}", o.message));
      break;
    case worker_status::tainted:  // the verdict says why (stream, worker_state, sandbox); the next case gets a fresh worker
      if (o.response.contains("verdict")) v.merge(verdict::from_json(o.response["verdict"]));
      add_sandbox_denials(v, case_name, o.response);
      if (v.passed()) v.fail("worker_state", case_name, -1, o.message);
      break;
    case worker_status::start_failed:
      throw infra_error(fmt::format("{}{}", o.describe(), log));
    case worker_status::ok:
      break;
  }
}

}  // namespace

std::chrono::milliseconds verify_timeout(const workload_spec& spec, const std::string& case_name,
                                         const check_options& options) {
  // A verification moves every input and output several times per seed (reference, runs, comparisons): a large
  // case needs longer than a hang detector for small ones would allow.
  const case_spec* c = spec.find_case(case_name);
  if (!c) return options.timeout;
  double elements = 0;
  try {
    for (const auto& d : input_descs(spec, *c)) elements += static_cast<double>(d.numel());
    for (const auto& d : infer_outputs(spec, *c)) elements += static_cast<double>(d.numel());
  } catch (const std::exception&) {
    return options.timeout;  // the worker will say what is wrong with the case
  }
  double extra_s = options.seconds_per_million_elements * elements / 1e6 * std::max(1, options.seeds);
  return options.timeout + std::chrono::milliseconds(static_cast<int64_t>(extra_s * 1000));
}

verdict verify_in_worker(const workload_spec& spec, const nlohmann::json& impl, worker_client& worker,
                         const check_options& options, std::map<std::string, double>* step_seconds,
                         int64_t* inputs_drawn) {
  verdict v;
  std::vector<std::string> cases = options.cases;
  if (cases.empty())
    for (auto& c : spec.cases)
      if (c.runs_on(device_kind_name(worker.device().kind))) cases.push_back(c.name);
  if (cases.empty())
    throw user_error(source_loc{spec.path}, fmt::format("workload {} has no case that runs on {}", spec.name,
                                                        device_kind_name(worker.device().kind)));
  nlohmann::json spec_json = to_json(spec);
  for (auto& name : cases) {
    const std::chrono::milliseconds timeout = verify_timeout(spec, name, options);
    nlohmann::json req = {{"cmd", "verify"}, {"spec", spec_json}, {"impl", impl}, {"cases", {name}},
                          {"seeds", options.seeds},
                          {"options", {{"base_seed", options.base_seed}, {"adversarial", options.adversarial}}}};
    worker_outcome o = worker.request(req, timeout);
    if (!o.ok()) {
      record_outcome(v, name, o, timeout);
      continue;
    }
    if (!o.response.value("ok", false)) {
      std::string kind = o.response.value("kind", "");
      throw infra_error(fmt::format("worker refused verify on case {} ({}): {}", name, kind,
                                    o.response.value("error", "")));
    }
    if (step_seconds && o.response.contains("step_seconds") && o.response["step_seconds"].is_object())
      for (auto& [step, s] : o.response["step_seconds"].items())
        if (s.is_number()) (*step_seconds)[step] += s.get<double>();
    if (inputs_drawn) *inputs_drawn += o.response.value("inputs_drawn", int64_t{0});
    verdict got = verdict::from_json(o.response.at("verdict"));
    // `load` comes back once per case; keep the first.
    for (auto& c : got.checks())
      if (c.rule != "load" || !v.has("load")) v.add(c);
  }
  return v;
}

check_report check_candidate(const workload_spec& spec, const std::string& source, const std::string& name,
                             compiler& cc, worker_client& worker, const check_options& options) {
  auto t0 = std::chrono::steady_clock::now();
  check_report report;
  device_kind kind = worker.device().kind;
  if (options.static_scan) {
    scan_options so;
    so.device = kind;
    so.allow_libraries = spec.allow_libraries;
    add_scan_checks(report.result, static_scan(source, so));
  }
  compile_request req;
  req.source = source;
  req.device = kind;
  req.name = name;
  if (kind == device_kind::cuda) {
    worker_outcome env = worker.request({{"cmd", "env"}}, std::chrono::seconds(60));
    if (!env.ok() || !env.response.value("ok", false))
      throw infra_error(fmt::format("cannot read the worker's env: {}", env.ok() ? env.response.dump() : env.describe()));
    report.env = env.response["env"];
    req.arch = compile_arch(report.env);
  }
  if (!report.result.failures().empty()) {
    // The static scan is the first line: a candidate that fails it is neither compiled (the compile would read
    // an included host file into the log) nor loaded and run.
    const check* first = report.result.failures().front();
    report.result.add({"compiles", "", -1, check_status::skipped,
                       fmt::format("not compiled or run: it fails {} ({})", first->rule, first->detail)});
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
  }
  report.compile = cc.compile(req);
  // The compiler saw kernel.cpp / kernel.cu: its messages name the candidate as the user knows it.
  if (!name.empty()) {
    const std::string seen = kind == device_kind::cuda ? "kernel.cu" : "kernel.cpp";
    std::string& log = report.compile.log;
    for (size_t at = 0; (at = log.find(seen, at)) != std::string::npos;) {
      const bool whole = (at == 0 || log[at - 1] == '\n' || log[at - 1] == ' ' || log[at - 1] == '"') &&
                         at + seen.size() < log.size() && (log[at + seen.size()] == ':' || log[at + seen.size()] == '(');
      if (whole) log.replace(at, seen.size(), name), at += name.size();
      else at += seen.size();
    }
  }
  if (!report.compile.ok) {
    report.result.fail("compiles", "", -1, fmt::format("{}:\n{}", report.compile.error, tail_text(report.compile.log, 4000)),
                       {{"seconds", report.compile.seconds}});
  } else {
    report.result.pass("compiles", "", -1, report.compile.cached ? "cached" : fmt::format("{:.1f} s", report.compile.seconds),
                       {{"resource", report.compile.resource.to_json()}});
    nlohmann::json impl = {{"kind", "kernel"}, {"name", name}, {"so", report.compile.so_path}};
    report.result.merge(verify_in_worker(spec, impl, worker, options));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace kf
