// The worker's `measure` command: see measure_command.h. Per worker, once: the sampler, the copy bandwidth
// and the launch floor. Per case: inputs, the implementations (impl_kind_torch.h), interleaved timing, the
// floor. Implementations that are not available, or fail while timed, are results in the list.
#include "measure/measure_command.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#if KFORGE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "measure/cuda_sampler.h"
#endif

#include <ATen/Parallel.h>

#include "exec/worker_device.h"
#include "measure/impl_kind_torch.h"
#include "measure/cpu_sampler.h"
#include "measure/floor.h"
#include "measure/timing.h"
#include "spec/ops.h"
#include "spec/reference_torch.h"

namespace kf {
namespace {

// What a worker measures once: its sampler (and stream), the copy bandwidth and the launch floor.
struct measure_state {
  std::unique_ptr<measure::sampler> sampler;
  void* stream = nullptr;
#if KFORGE_WITH_CUDA
  std::optional<c10::cuda::CUDAStream> cuda_stream;
#endif
  std::optional<double> copy_gbs;
  std::optional<measure::impl_timing> launch_floor;
  double cache_bytes = 0;  // the GPU's L2 (the sampler's environment), which can hold outputs at a kernel's end
};

measure_state& state_for(const worker_context& ctx) {
  static measure_state s;
  if (s.sampler) return s;
  if (ctx.device.kind == device_kind::cpu) {
    s.sampler = std::make_unique<measure::cpu_sampler>();
    return s;
  }
#if KFORGE_WITH_CUDA
  s.cuda_stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(ctx.device.index));
  s.stream = s.cuda_stream->stream();
  s.sampler = measure::make_cuda_sampler(ctx.device.index, s.stream);
  return s;
#else
  throw infra_error("this kforge-worker was built without CUDA");
#endif
}

// The gated cases named in the request (all gated cases when none are named).
std::vector<const case_spec*> cases_to_time(const workload_spec& spec, const nlohmann::json& names) {
  std::vector<const case_spec*> out;
  if (names.is_array() && !names.empty()) {
    for (const auto& n : names) {
      const case_spec* c = n.is_string() ? spec.find_case(n.get<std::string>()) : nullptr;
      if (!c) throw user_error(fmt::format("measure: spec {} has no case {}", spec.name, n.dump()));
      out.push_back(c);
    }
    return out;
  }
  for (const auto& c : spec.cases)
    if (c.gate) out.push_back(&c);
  return out;
}

// Runs `body` with the measuring stream as LibTorch's current stream (preparation runs trial launches).
template <class F>
auto on_measuring_stream(measure_state& st, const worker_context& ctx, F&& body) {
#if KFORGE_WITH_CUDA
  std::optional<c10::cuda::CUDAStreamGuard> guard;
  if (ctx.device.kind == device_kind::cuda) guard.emplace(*st.cuda_stream);
#else
  (void)st;
  (void)ctx;
#endif
  return body();
}

nlohmann::json measure_case(const workload_spec& spec, const case_spec& c, const nlohmann::json& impls,
                            const measure::timing_options& options, uint64_t seed, measure_state& st,
                            const worker_context& ctx, nlohmann::json& floors) {
  c10::Device device = ctx.device.kind == device_kind::cpu ? c10::Device(c10::kCPU)
                                                           : c10::Device(c10::kCUDA, ctx.device.index);
  std::vector<at::Tensor> inputs = make_inputs(spec, c, seed, device);
  impl_context ictx{spec, c, inputs, device};

  nlohmann::json results = nlohmann::json::array();
  std::vector<prepared_impl> prepared;
  std::vector<std::size_t> source;       // per prepared entry: the index of its impl object in the request
  std::vector<bool> modal(impls.size());  // per impl object: its kind is timed in modes (impl_kind::modes)
  std::vector<measure::timed_impl> timed;
  std::vector<std::size_t> timed_index;  // into prepared
  std::map<std::string, int> seen;
  for (std::size_t n = 0; n < impls.size(); ++n) {
    const nlohmann::json& impl = impls[n];
    std::string kind = impl.value("kind", "");
    const impl_kind* k = find_impl_kind(kind);
    if (!k) throw user_error(fmt::format("measure: unknown impl kind {} (expected {})",
                                         impl.value("kind", nlohmann::json()).dump(), impl_kind_names()));
    modal[n] = k->modes;
    std::vector<prepared_impl> got;
    try {
      got = on_measuring_stream(st, ctx, [&] { return k->prepare(impl, ictx); });
    } catch (const measure::launch_failure& e) {  // a candidate that does not load is a result
      results.push_back({{"impl", impl.value("name", kind)}, {"case", c.name}, {"available", true}, {"error", e.what()}});
      continue;
    }
    for (auto& p : got) {
      if (impl.contains("name") && impl["name"].is_string()) p.name = impl["name"].get<std::string>();  // as asked
      prepared.push_back(std::move(p));
      source.push_back(n);
      const prepared_impl& q = prepared.back();
      if (!q.available()) continue;
      // Names are unique among those timed together: compile modes and repeated names get a suffix.
      std::string name = q.details.contains("mode") ? fmt::format("{}[{}]", q.name, q.details["mode"].get<std::string>()) : q.name;
      if (int n = ++seen[name]; n > 1) name += fmt::format("#{}", n);
      timed.push_back({name, q.launch});
      timed_index.push_back(prepared.size() - 1);
    }
  }
  std::vector<measure::impl_timing> timings = measure::time_interleaved(*st.sampler, timed, options);

  // A kind timed in modes (compile) is one result: the fastest mode on the series the report will compare, with
  // what each mode measured on it (a mode faster inside a graph can be the slower one cold).
  const bool hot = measure::compares_hot(timings);
  auto median_of = [&](const measure::impl_timing& t) { return measure::compared_median(t, hot); };
  std::map<std::size_t, std::size_t> best;   // impl object -> its fastest timing
  std::map<std::size_t, nlohmann::json> modes;  // impl object -> {"<mode>": median or error}
  for (std::size_t i = 0; i < timings.size(); ++i) {
    const prepared_impl& p = prepared[timed_index[i]];
    const std::size_t n = source[timed_index[i]];
    if (!modal[n]) continue;
    modes.try_emplace(n, nlohmann::json::object());
    modes[n][p.details.value("mode", "default")] = timings[i].error.empty() ? nlohmann::json(median_of(timings[i])) : nlohmann::json(timings[i].error);
    if (!timings[i].error.empty() || median_of(timings[i]) <= 0) continue;
    if (!best.count(n) || median_of(timings[i]) < median_of(timings[best[n]])) best[n] = i;
  }
  std::set<std::size_t> reported;  // impl objects in modes that have their result
  for (std::size_t i = 0; i < timings.size(); ++i) {
    const prepared_impl& p = prepared[timed_index[i]];
    const std::size_t n = source[timed_index[i]];
    if (modal[n]) {
      if (best.count(n) ? i != best[n] : reported.count(n) > 0) continue;
      reported.insert(n);
    }
    nlohmann::json r = measure::to_json(timings[i]);
    r["impl"] = modal[n] ? p.name : timings[i].impl;
    r["case"] = c.name;
    r["available"] = true;
    r["description"] = p.description;
    r["details"] = p.details;
    if (modal[n]) r["details"]["modes_median_us"] = modes[n];
    results.push_back(std::move(r));
  }
  for (std::size_t j = 0; j < prepared.size(); ++j) {
    const prepared_impl& p = prepared[j];
    const std::size_t n = source[j];
    if (p.available()) continue;
    if (modal[n] && reported.count(n)) continue;  // another mode was timed; its skip is in details
    nlohmann::json r{{"impl", p.name}, {"case", c.name}, {"available", false}, {"not_available", p.not_available},
                     {"details", p.details}};
    results.push_back(std::move(r));
    if (modal[n]) reported.insert(n);
  }

  double in_bytes = 0, out_bytes = 0;
  for (const auto& t : inputs) in_bytes += static_cast<double>(t.nbytes());
  for (const auto& d : infer_outputs(spec, c)) out_bytes += static_cast<double>(d.numel() * dtype_size(d.type));
  const measure::impl_timing& lf = *st.launch_floor;
  double launch_hot = lf.hot && !lf.hot->samples_us.empty() ? lf.hot->summary().median : 0;
  measure::floor_info f = measure::make_floor(measure::unavoidable_bytes(in_bytes, out_bytes, spec.input_reads),
                                              *st.copy_gbs, lf.cold.summary().median, launch_hot);
  f.physical_floor_us = measure::physical_floor_us(in_bytes, out_bytes, st.cache_bytes, *st.copy_gbs);
  floors[c.name] = measure::to_json(f);
  return results;
}

}  // namespace

nlohmann::json measure_command(const nlohmann::json& request, worker_context& ctx) {
  if (!request.contains("spec") || !request["spec"].is_object()) throw user_error("measure: request has no spec object");
  workload_spec spec = spec_from_json(request["spec"]);
  measure::timing_options options;
  try {
    options = measure::timing_options_from_json(request.value("stopping", nlohmann::json()));
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("measure: ") + e.what());
  }
  nlohmann::json impls = request.value("impls", nlohmann::json::array());
  if (!impls.is_array()) throw user_error("measure: impls must be an array");
  uint64_t seed = request.value("seed", uint64_t{0});
  if (request.contains("threads") && ctx.device.kind == device_kind::cpu) at::set_num_threads(request["threads"].get<int>());

  measure_state& st = state_for(ctx);
  if (!st.copy_gbs) {
    st.copy_gbs = st.sampler->copy_bandwidth_gbs();
    st.cache_bytes = st.sampler->environment().value("l2_bytes", 0.0);
  }
  if (!st.launch_floor) {
    // The same protocol, a smaller budget: 0.5 s of 3.5 us launches would be 140 000 cold samples.
    measure::timing_options lo = options;
    lo.hot = measure::hot_mode::always;
    lo.stopping.min_seconds = std::min(options.stopping.min_seconds, 0.01);
    lo.stopping.timeout_s = std::min(options.stopping.timeout_s, 3.0);
    st.launch_floor = measure::time_interleaved(*st.sampler, {{"launch_floor", st.sampler->empty_launch()}}, lo).at(0);
    if (!st.launch_floor->error.empty()) throw infra_error("the empty kernel failed: " + st.launch_floor->error);
  }

  nlohmann::json results = nlohmann::json::array(), floors = nlohmann::json::object();
  const nlohmann::json stopping = request.value("stopping", nlohmann::json());
  for (const case_spec* c : cases_to_time(spec, request.value("cases", nlohmann::json::array()))) {
    measure::timing_options co;
    try {
      co = measure::race_for(options, stopping, c->name);
    } catch (const std::invalid_argument& e) {
      throw user_error(std::string("measure: ") + e.what());
    }
    for (auto& r : measure_case(spec, *c, impls, co, seed, st, ctx, floors)) results.push_back(std::move(r));
  }

  nlohmann::json env = worker_env(ctx);
  env.update(st.sampler->environment());
  return {{"ok", true},
          {"results", results},
          {"floor", floors},
          {"copy_bandwidth_gbs", *st.copy_gbs},
          {"launch_floor", measure::to_json(*st.launch_floor)},
          {"clock_check", st.sampler->clock_check()},
          {"env", env}};
}

}  // namespace kf
