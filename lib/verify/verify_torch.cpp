// The dynamic verify rules (docs/design.md "Verify"), run in the worker. Per case and seed, on fresh guarded buffers:
//   T1 first run: the candidate runs before anything else touched this input (no leftovers to read), outputs
//      poisoned; read after syncing only the run stream, then again after everything settled (stream); inputs
//      compared with a copy (inputs_unchanged); guards intact (writes_outside_outputs); then the float64
//      reference and eager (all_written, nan_inf, match).
//   T2 rerun, same inputs and addresses: bitwise identical (deterministic).
//   T3 the input guards changed: the same result (reads_outside_inputs).
//   T4 new input values at the same addresses: the new answer (new_inputs).
// Then each adversarial input kind that applies (one seed). See verify_worker.h for the request.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include "exec/impl_torch.h"
#include "exec/sandbox.h"
#include "measure/impl_kind_torch.h"
#include "spec/adversarial.h"
#include "spec/input_cache_torch.h"
#include "spec/ops.h"
#include "spec/ops_torch.h"
#include "spec/reference_torch.h"
#include "util/error.h"
#include "verify/compare_torch.h"
#include "verify/harness_torch.h"
#include "verify/verdict.h"
#include "verify/verify_worker.h"

namespace kf {
namespace {

struct verify_options {
  uint64_t base_seed = 1;
  int seeds = 3;
  bool adversarial = true;
  int cpu_settle_ms = 20;
};

// What one input set's reference looks like.
struct reference {
  std::vector<at::Tensor> f64, eager;
  at::Tensor topk_source;  // float64 input of a final topk
};

struct comparison_set {
  std::vector<output_comparison> outputs;
};

// Seconds spent in each step of verification (inputs, launch, reference, compare), summed over cases: where a
// slow verify goes. A step's device work is counted in it: the clock stops after the device is idle.
using step_seconds = std::map<std::string, double>;

class case_runner {
 public:
  case_runner(const workload_spec& spec, const case_spec& c, impl& im, run_stream& stream, const device_id& dev,
              verdict& v, const verify_options& opt, step_seconds& steps)
      : m_spec(spec), m_case(c), m_impl(im), m_stream(stream), m_tdev(torch_device(dev)), m_v(v), m_opt(opt),
        m_steps(steps) {
    m_out_descs = infer_outputs(spec, c);
    m_out_names = output_names(spec);
    // A final topk's indices are checked against its values (the spec lists both: the parser requires every
    // result of the last op).
    const op_call& last = spec.graph.back();
    const auto refs = output_refs(spec);
    for (size_t i = 0; i < refs.size(); ++i) {
      if (last.op != "topk" || refs[i].step + 1 != spec.graph.size()) continue;
      (refs[i].index == 0 ? m_topk_values : m_topk_indices) = static_cast<int64_t>(i);
    }
    if (m_topk_values >= 0 && m_topk_indices >= 0) {
      int64_t rank = static_cast<int64_t>(m_out_descs[m_topk_values].shape.size());
      m_topk_dim = wrap_dim(last.args.value("dim", int64_t(-1)), rank);
    }
  }

  // All seeds, then the adversarial kinds. Returns false when the case had to stop (declined, CUDA error).
  bool run() {
    m_impl.prepare(m_case);
    for (int k = 0; k < m_opt.seeds; ++k)
      if (!run_seed(k)) return false;
    if (!m_opt.adversarial) return true;
    for (auto& kind : adversarial_kind_names()) {
      if (!adversarial_applies(m_spec, kind)) continue;
      if (!run_adversarial(kind)) return false;
    }
    return true;
  }

 private:
  // Runs f and adds its time (device work included) to `step`.
  template <typename F>
  auto timed(const char* step, F&& f) {
    struct stop_clock {
      case_runner& r;
      const char* step;
      std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
      ~stop_clock() {
        // A destructor must not throw (a poisoned context throws from settle, often while that same error is
        // already unwinding from f: terminate, read as a crash); the error is reported by whoever saw it first.
        try {
          r.m_stream.settle(0);
        } catch (const std::exception&) {
        }
        r.m_steps[step] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    } clock{*this, step};
    return f();
  }

  bool run_seed(int k) {
    uint64_t seed = m_opt.base_seed + static_cast<uint64_t>(k);
    auto src = timed("inputs", [&] {
      auto s = make_inputs(m_spec, m_case, seed, m_tdev);
      allocate(s);  // the previous seed's buffers are still alive: these addresses are fresh
      return s;
    });

    // T1: first run
    std::vector<at::Tensor> first;
    if (!launch(k, "first run", &first)) return false;
    std::string err = m_stream.settle(m_opt.cpu_settle_ms);
    if (!err.empty()) return fail_cuda(k, "after the first run", err);
    int64_t moved = 0;
    for (size_t i = 0; i < first.size(); ++i) moved += bitwise_differences(first[i], m_out_tensors[i]);
    if (moved) m_v.fail("stream", m_case.name, k, fmt::format("{} output elements changed after the run stream was "
                        "synchronized (work left on another stream or thread)", moved), {{"changed", moved}});
    else m_v.pass("stream", m_case.name, k);
    if (moved && m_tdev.is_cpu()) return false;  // a thread still runs its code: stop launching it (verify_command)
    int64_t changed_inputs = timed("compare", [&] { return check_inputs(src); });
    int64_t damaged = timed("compare", [&] { return damaged_guards(k_input_guard); });
    reference ref = timed("reference", [&] { return compute_reference(src); });
    timed("compare", [&] {
      record(compare_all(first, ref), k, "first run at fresh addresses", {"all_written", "nan_inf", "match"});
    });

    // T2: rerun, same everything
    std::vector<at::Tensor> again;
    if (!launch(k, "rerun", &again)) return false;
    int64_t differ = 0;
    timed("compare", [&] {
      for (size_t i = 0; i < again.size(); ++i) differ += bitwise_differences(first[i], again[i]);
    });
    if (differ) m_v.fail("deterministic", m_case.name, k, fmt::format("a rerun on the same inputs changed {} output "
                         "elements (a race?)", differ), {{"changed", differ}});
    else m_v.pass("deterministic", m_case.name, k);

    // T3: other guard contents around the inputs; only meaningful when the rerun was stable
    if (!differ) {
      for (auto& g : m_ins) fill_guards(g, k_input_guard_alt);
      std::vector<at::Tensor> guarded;
      if (!launch(k, "run with changed guard bytes", &guarded)) return false;
      int64_t dep = 0;
      for (size_t i = 0; i < guarded.size(); ++i) dep += bitwise_differences(first[i], guarded[i]);
      for (auto& g : m_ins) fill_guards(g, k_input_guard);
      if (dep) m_v.fail("reads_outside_inputs", m_case.name, k, fmt::format("changing only the bytes around the "
                        "inputs changed {} output elements", dep), {{"changed", dep}});
      else m_v.pass("reads_outside_inputs", m_case.name, k);
    }

    // T4: new values at the same addresses
    auto src2 = timed("inputs", [&] {
      auto s = make_inputs(m_spec, m_case, seed + 0x5bd1e995u, m_tdev);
      for (size_t i = 0; i < s.size(); ++i) m_in_tensors[i].copy_(s[i]);
      return s;
    });
    std::vector<at::Tensor> second;
    if (!launch(k, "second call with new inputs", &second)) return false;
    reference ref2 = timed("reference", [&] { return compute_reference(src2); });
    comparison_set c2 = timed("compare", [&] { return compare_all(second, ref2); });
    std::string why;
    for (size_t i = 0; i < c2.outputs.size() && why.empty(); ++i) {
      auto& o = c2.outputs[i];
      std::string name = label(i);
      if (!o.written()) why = fmt::format("{}{} of {} elements not written", name, o.unwritten, o.numel);
      else if (!o.nan_inf_ok()) why = fmt::format("{}NaN/Inf mismatch at {}", name, o.first_nan_inf);
      else if (!o.match()) why = name + o.match_text();
    }
    if (!why.empty())
      m_v.fail("new_inputs", m_case.name, k, "called again at the same addresses with new input values: " + why,
               c2.outputs[0].numbers());
    else m_v.pass("new_inputs", m_case.name, k);
    changed_inputs += check_inputs(src2);
    damaged += damaged_guards(k_input_guard);
    if (changed_inputs) m_v.fail("inputs_unchanged", m_case.name, k, fmt::format("{} input elements were modified",
                                 changed_inputs), {{"changed", changed_inputs}});
    else m_v.pass("inputs_unchanged", m_case.name, k);
    if (damaged) m_v.fail("writes_outside_outputs", m_case.name, k, fmt::format("{} guard bytes around the inputs "
                          "and outputs were overwritten", damaged), {{"bytes", damaged}});
    else m_v.pass("writes_outside_outputs", m_case.name, k);
    return true;
  }

  bool run_adversarial(const std::string& kind) {
    auto src = timed("inputs", [&] {
      auto s = make_adversarial_inputs(m_spec, m_case, kind, m_opt.base_seed, m_tdev);
      allocate(s);
      return s;
    });
    std::vector<at::Tensor> out;
    if (!launch(-1, "adversarial " + kind, &out)) return false;
    reference ref = timed("reference", [&] { return compute_reference(src); });
    timed("compare", [&] {
      record(compare_all(out, ref), -1, fmt::format("adversarial input '{}'", kind), {"all_written", "nan_inf", "match"});
    });
    return true;
  }

  void allocate(const std::vector<at::Tensor>& src) {
    std::vector<guarded_tensor> ins, outs;
    for (auto& s : src) {
      ins.push_back(allocate_guarded(s.sizes(), s.strides(), s.scalar_type(), m_tdev, k_input_guard));
      ins.back().tensor.copy_(s);
    }
    for (auto& d : m_out_descs) {
      std::vector<int64_t> strides(d.shape.size());
      int64_t s = 1;
      for (size_t i = d.shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= std::max<int64_t>(d.shape[i], 1);
      }
      outs.push_back(allocate_guarded(d.shape, strides, to_scalar_type(d.type), m_tdev, k_output_guard));
    }
    m_ins = std::move(ins);  // the old buffers are freed only now
    m_outs = std::move(outs);
    m_in_tensors.clear();
    m_out_tensors.clear();
    for (auto& g : m_ins) m_in_tensors.push_back(g.tensor);
    for (auto& g : m_outs) m_out_tensors.push_back(g.tensor);
  }

  // Poisons the outputs, launches, checks the return code and CUDA errors, and snapshots the outputs.
  bool launch(int seed, const std::string& what, std::vector<at::Tensor>* snap) {
    return timed("launch", [&] { return launch_untimed(seed, what, snap); });
  }
  bool launch_untimed(int seed, const std::string& what, std::vector<at::Tensor>* snap) {
    for (auto& g : m_outs) poison(g);
    int rc = 0;
    std::vector<std::string> code_before;
    if (m_impl.untrusted()) code_before = code_mappings();
    try {
      rc = m_impl.launch(m_in_tensors, m_out_tensors, m_stream.handle());
    } catch (const std::exception& e) {  // a C++ exception thrown through the C ABI
      m_v.fail("crash", m_case.name, seed, fmt::format("{}: kf_launch threw: {}", what, e.what()));
      return false;
    }
    if (m_impl.untrusted())
      for (const auto& path : new_code_mappings(code_before, code_mappings()))
        m_v.fail("sandbox.library", m_case.name, seed, fmt::format("{}: mapped {} as code", what, path));
    std::string err = m_stream.launch_error();
    if (rc != 0) {
      m_v.fail("handles_input", m_case.name, seed, fmt::format("{}: kf_launch returned {} (declined this input)", what, rc),
               {{"return_code", rc}});
      return false;
    }
    if (!err.empty()) return fail_cuda(seed, what, err);
    *snap = snapshot(m_out_tensors, m_stream, &err);
    if (!err.empty()) return fail_cuda(seed, what, err);
    if (what == "first run") m_v.pass("handles_input", m_case.name, seed);
    return true;
  }

  bool fail_cuda(int seed, const std::string& what, const std::string& err) {
    m_v.fail("cuda_error", m_case.name, seed, fmt::format("{}: {}", what, err));
    return false;
  }

  int64_t check_inputs(const std::vector<at::Tensor>& src) {
    int64_t changed = 0;
    for (size_t i = 0; i < src.size(); ++i) {
      int64_t n = bitwise_differences(m_in_tensors[i], src[i]);
      if (n) m_in_tensors[i].copy_(src[i]);  // later trials need the right inputs
      changed += n;
    }
    return changed;
  }

  int64_t damaged_guards(uint8_t input_guard) {
    int64_t n = 0;
    for (auto& g : m_ins) n += damaged_guard_bytes(g, input_guard);
    for (auto& g : m_outs) n += damaged_guard_bytes(g, k_output_guard);
    return n;
  }

  reference compute_reference(const std::vector<at::Tensor>& src) {
    reference r;
    r.f64 = run_graph_f64(m_spec, src);
    r.eager = run_graph(m_spec, src);
    if (m_topk_dim >= 0) {
      if (m_spec.graph.size() == 1) {
        std::string primary = primary_input(m_spec);
        for (size_t i = 0; i < m_spec.inputs.size(); ++i)
          if (m_spec.inputs[i].name == primary) r.topk_source = src[i].to(at::kDouble);
      } else {
        workload_spec before = m_spec;
        before.graph.pop_back();
        before.graph.back().as.clear();  // its result is the one the ABI returns
        before.outputs.clear();
        r.topk_source = run_graph_f64(before, src).at(0);
      }
    }
    return r;
  }

  comparison_set compare_all(const std::vector<at::Tensor>& outs, const reference& ref) {
    comparison_set s;
    for (size_t i = 0; i < outs.size(); ++i) {
      const bool index_output = m_topk_dim >= 0 && static_cast<int64_t>(i) == m_topk_indices;
      const auto v = static_cast<size_t>(std::max<int64_t>(m_topk_values, 0));
      s.outputs.push_back(index_output
                              ? compare_indices(outs[i], ref.topk_source, m_topk_dim, ref.f64[v], ref.eager[v],
                                                m_out_descs[v].type, m_spec.tolerance)
                              : compare_output(outs[i], ref.f64[i], ref.eager[i], m_out_descs[i].type, m_spec.tolerance));
    }
    return s;
  }

  std::string label(size_t output) const {
    return m_out_descs.size() > 1 ? fmt::format("output '{}': ", m_out_names.at(output)) : "";
  }

  void record(const comparison_set& s, int seed, const std::string& trial, std::vector<std::string> rules) {
    for (auto& rule : rules) {
      std::string why;
      nlohmann::json numbers = s.outputs.empty() ? nlohmann::json::object() : s.outputs[0].numbers();
      std::string pass_detail;
      for (size_t i = 0; i < s.outputs.size(); ++i) {
        auto& o = s.outputs[i];
        std::string name = label(i);
        if (rule == "all_written" && !o.written())
          why = fmt::format("{}{} of {} elements not written (first at {})", name, o.unwritten, o.numel, o.first_unwritten);
        else if (rule == "nan_inf" && !o.nan_inf_ok())
          why = fmt::format("{}{} NaN/Inf mismatches, first {}", name, o.nan_inf_mismatches, o.first_nan_inf);
        else if (rule == "match" && !o.match())
          why = name + o.match_text();
        if (!why.empty()) {
          numbers = o.numbers();
          break;
        }
        if (rule == "match") pass_detail += (pass_detail.empty() ? "" : "; ") + name + o.match_text();
      }
      if (!why.empty()) m_v.fail(rule, m_case.name, seed, trial + ": " + why, numbers);
      else m_v.pass(rule, m_case.name, seed, rule == "match" ? pass_detail : "", numbers);
    }
  }

  const workload_spec& m_spec;
  const case_spec& m_case;
  impl& m_impl;
  run_stream& m_stream;
  c10::Device m_tdev;
  verdict& m_v;
  const verify_options& m_opt;
  step_seconds& m_steps;
  std::vector<tensor_desc> m_out_descs;
  std::vector<std::string> m_out_names;
  int64_t m_topk_dim = -1;
  int64_t m_topk_values = -1, m_topk_indices = -1;  // their positions among the outputs
  std::vector<guarded_tensor> m_ins, m_outs;
  std::vector<at::Tensor> m_in_tensors, m_out_tensors;
};

// A case whose tensors cannot fit in this machine's memory is the spec's problem, said up front: its inputs and
// outputs as the spec declares them, private copies of each for the candidate, and the float64 reference's copies.
void check_case_fits(const workload_spec& spec, const case_spec& c) {
  double declared = 0, reference = 0;
  auto add = [&](const std::vector<tensor_desc>& ts) {
    for (auto& t : ts) {
      declared += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.type));
      if (is_floating(t.type)) reference += static_cast<double>(t.numel()) * 8.0;
    }
  };
  add(input_descs(spec, c));
  add(infer_outputs(spec, c));
  const double need = 2 * declared + reference;
  const double host = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (host > 0 && need > host)
    throw user_error(fmt::format("{}: case {} needs about {:.1f} GiB to verify (its inputs and outputs, a private copy of "
                                 "each, and the float64 reference), more than this machine's {:.1f} GiB of memory",
                                 spec.path.empty() ? spec.name : spec.path, c.name, need / (1 << 30), host / (1 << 30)));
}

verify_options parse_options(const nlohmann::json& req) {
  verify_options o;
  o.seeds = req.value("seeds", 3);
  if (o.seeds < 1) throw user_error(fmt::format("verify: seeds must be at least 1, got {}", o.seeds));
  auto opt = req.value("options", nlohmann::json::object());
  o.base_seed = opt.value("base_seed", uint64_t(1));
  o.adversarial = opt.value("adversarial", true);
  o.cpu_settle_ms = opt.value("cpu_settle_ms", 20);
  return o;
}

}  // namespace

nlohmann::json verify_command(const nlohmann::json& req, worker_context& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  if (!req.contains("spec") || !req.contains("impl")) throw user_error("verify needs \"spec\" and \"impl\"");
  workload_spec spec = spec_from_json(req["spec"]);
  verify_options opt = parse_options(req);
  std::vector<const case_spec*> cases;
  for (auto& name : req.value("cases", std::vector<std::string>{})) {
    const case_spec* c = spec.find_case(name);
    if (!c) throw user_error(fmt::format("verify: workload {} has no case '{}'", spec.name, name));
    cases.push_back(c);
  }
  if (cases.empty())
    for (auto& c : spec.cases)
      if (c.runs_on(device_kind_name(ctx.device.kind))) cases.push_back(&c);

  verdict v;
  step_seconds steps;
  const int64_t misses_before = input_cache_statistics().misses;
  auto respond = [&] {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return nlohmann::json{{"ok", true}, {"verdict", v.to_json()}, {"seconds", s}, {"step_seconds", steps},
                          {"inputs_drawn", input_cache_statistics().misses - misses_before}};
  };
  c10::InferenceMode no_autograd;
  std::unique_ptr<impl> im;
  try {
    im = make_impl(req["impl"], spec, ctx.device);
  } catch (const impl_load_error& e) {
    v.fail("load", "", -1, e.what());
    return respond();
  }
  // A candidate kernel runs in this process: after it left work on a cpu thread, or when the worker fails under
  // it, the worker's memory is not to be trusted any more (verify_worker.h).
  const bool untrusted = req["impl"].value("kind", "") == "kernel";
  if (untrusted) v.pass("load", "", -1);
  run_stream stream(ctx.device);
  auto tainted = [&](const std::string& why) {
    return nlohmann::json{{"ok", false}, {"kind", "tainted"}, {"error", why}, {"verdict", v.to_json()}};
  };
  for (auto* c : cases) check_case_fits(spec, *c);
  for (auto* c : cases) {
    try {
      case_runner(spec, *c, *im, stream, ctx.device, v, opt, steps).run();
    } catch (const cuda_poisoned_error& e) {
      v.fail("cuda_error", c->name, -1, fmt::format("the CUDA context is poisoned: {}", e.what()));
      return {{"ok", false}, {"kind", "cuda_poisoned"}, {"error", e.what()}, {"verdict", v.to_json()}};
    } catch (const user_error&) {
      throw;
    } catch (const infra_error&) {
      throw;
    } catch (const c10::OutOfMemoryError&) {
      throw;  // the case is too big for this machine: not the candidate's doing
    } catch (const std::exception& e) {
      if (!untrusted) throw;
      if (!candidate_code_ran())  // the verifier's own step failed before any candidate code ran: not its doing
        throw infra_error(fmt::format("verifying case {} failed before the candidate ran: {}", c->name, e.what()));
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));
      auto why = fmt::format("the worker failed while verifying the candidate ({}); a kernel running in the "
                             "worker's process may have corrupted it", what);
      v.fail("worker_state", c->name, -1, why);
      return tainted(why);
    }
    if (untrusted && ctx.device.kind == device_kind::cpu && v.status_of("stream", c->name) == check_status::failed)
      return tainted("the candidate left work running on another thread, which may still write the worker's memory");
  }
  return respond();
}

}  // namespace kf
