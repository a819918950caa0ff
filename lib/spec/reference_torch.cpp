// Seeded inputs, adversarial variants, and the graph run on LibTorch (eager and float64 reference).
#include "spec/reference_torch.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/adversarial.h"
#include "spec/input_cache_torch.h"
#include "spec/ops.h"
#include "spec/ops_torch.h"

namespace kf {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Each input draws from its own stream so that adding an input to a spec leaves the others' values alone.
at::Generator input_generator(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a of the name
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ULL;
  return at::make_generator<at::CPUGeneratorImpl>(splitmix64(seed ^ splitmix64(h)));
}

// Elements drawn from one generator: chunk k of a large input has its own stream (derived from the input's
// and k), so the chunks are drawn in parallel and the values do not depend on the thread count. An input of at
// most one chunk draws from the input's stream alone.
constexpr int64_t k_draw_chunk = int64_t{1} << 20;

// `fill(part, gen)` over `t` (contiguous) chunk by chunk, on LibTorch's intra-op threads.
template <typename F>
void draw_chunked(at::Tensor& t, uint64_t seed, const std::string& name, F fill) {
  at::Tensor flat = t.view({-1});
  const int64_t n = flat.numel(), chunks = (n + k_draw_chunk - 1) / k_draw_chunk;
  if (chunks <= 1) {
    at::Generator gen = input_generator(seed, name);
    fill(flat, gen);
    return;
  }
  at::parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      at::Generator gen = k == 0 ? input_generator(seed, name) : input_generator(seed, fmt::format("{}#{}", name, k));
      at::Tensor part = flat.narrow(0, k * k_draw_chunk, std::min(k_draw_chunk, n - k * k_draw_chunk));
      fill(part, gen);
    }
  });
}

at::Tensor draw_input(const input_spec& in, const std::vector<int64_t>& shape, uint64_t seed) {
  const auto& p = in.init.params;
  // Draw in float32 (float64 for float64 inputs), then round to the input's dtype: the same values everywhere.
  auto draw = at::TensorOptions().dtype(in.type == dtype::float64 ? at::kDouble : at::kFloat);
  at::Tensor t;
  if (in.init.kind == "normal") {
    t = at::empty(shape, draw);
    const double mean = p.value("mean", 0.0), std = p.value("std", 1.0);
    draw_chunked(t, seed, in.name, [&](at::Tensor& part, at::Generator& g) { part.normal_(mean, std, g); });
  } else if (in.init.kind == "uniform") {
    t = at::empty(shape, draw);
    const double low = p.value("low", 0.0), high = p.value("high", 1.0);
    draw_chunked(t, seed, in.name, [&](at::Tensor& part, at::Generator& g) { part.uniform_(low, high, g); });
  } else if (in.init.kind == "randint") {
    at::Generator gen = input_generator(seed, in.name);
    t = at::randint(p.value("low", int64_t(0)), p.at("high").get<int64_t>(), shape, gen, at::TensorOptions().dtype(at::kLong));
  } else if (in.init.kind == "causal_mask") {
    KF_ASSERT(shape.size() >= 2, "causal mask on a {}-d input", shape.size());
    int64_t rows = shape[shape.size() - 2], cols = shape.back();
    t = at::full({rows, cols}, -std::numeric_limits<double>::infinity(), draw).triu(1).expand(shape).contiguous();
  } else {
    KF_ASSERT(false, "unknown init {}", in.init.kind);
  }
  t = t.to(to_scalar_type(in.type));
  if (in.memory_format == "channels_last") t = t.contiguous(at::MemoryFormat::ChannelsLast);
  return t;
}

// Everything that decides an input's values, for the input cache.
std::string input_key(const input_spec& in, const std::vector<int64_t>& shape, uint64_t seed) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}", in.name, dtype_name(in.type), fmt::join(shape, "x"), in.memory_format,
                     in.init.kind, in.init.params.dump(), seed);
}

// A host tensor shared with the input cache (not to be modified), and the key it is cached under.
struct host_input {
  std::string key;
  at::Tensor t;
};

host_input make_input(const input_spec& in, const case_spec& c, uint64_t seed) {
  auto shape = concrete_shape(in, c);
  std::string key = input_key(in, shape, seed);
  at::Tensor t = cached_input(key, [&] { return draw_input(in, shape, seed); });
  return {std::move(key), std::move(t)};
}

// The caller's own copy of the cached input `key` (on the CPU `to` would hand out the cached tensor itself; on a
// GPU the copy comes from the device's input cache).
at::Tensor own_copy_on(const std::string& key, const at::Tensor& t, const c10::Device& device) {
  return device.is_cpu() ? t.clone() : device_input_copy(key, t, device);
}

size_t primary_index(const workload_spec& spec) {
  std::string name = primary_input(spec);
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].name == name) return i;
  KF_ASSERT(false, "spec {}: the first op's input {} is not an input", spec.name, name);
}

at::Tensor same_layout(const at::Tensor& t, const input_spec& in) {
  return in.memory_format == "channels_last" ? t.contiguous(at::MemoryFormat::ChannelsLast) : t.contiguous();
}

std::vector<at::Tensor> run(const workload_spec& spec, const std::vector<at::Tensor>& inputs, bool f64) {
  KF_ASSERT(inputs.size() == spec.inputs.size(), "spec {} has {} inputs, got {} tensors", spec.name,
            spec.inputs.size(), inputs.size());
  std::map<std::string, at::Tensor> by_name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor t = inputs[i];
    if (f64 && at::isFloatingType(t.scalar_type())) t = t.to(at::kDouble);  // keeps the memory format
    by_name[spec.inputs[i].name] = t;
  }
  std::vector<at::Tensor> current;
  std::vector<std::vector<at::Tensor>> steps;
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    const op_def* def = find_op(call.op);
    const torch_op* impl = find_torch_op(call.op);
    KF_ASSERT(def && impl, "op {} has no registry entry or no torch implementation", call.op);
    torch_op_args a{*def, call.args, {}, f64};
    for (auto& arg : def->args)
      if (arg.kind == arg_kind::tensor && call.args.contains(arg.name) && call.args[arg.name].is_string())
        a.tensors[arg.name] = by_name.at(call.args[arg.name].get<std::string>());
    at::Tensor x = i == 0 ? by_name.at(call.args.at("input").get<std::string>()) : current.at(0);
    current = impl->run(x, a);
    steps.push_back(current);
  }
  std::vector<at::Tensor> out;
  for (auto& r : output_refs(spec)) out.push_back(steps.at(r.step).at(r.index));
  return out;
}

// The primary input `x` changed as adversarial `kind` says.
at::Tensor adversarial_input(const workload_spec& spec, const case_spec& c, const std::string& kind, uint64_t seed,
                             const input_spec& in, at::Tensor x) {
  if (kind == "large_magnitude") {
    x = x * 100;
  } else if (kind == "all_equal_rows") {
    const op_call& first = spec.graph.front();
    if (first.op == "group_norm" && x.dim() >= 2) {  // a whole group of one value: zero variance
      auto shape = x.sizes().vec();
      at::Tensor v = x.contiguous().view({shape[0], first.args.value("num_groups", int64_t(1)), -1});
      x = v.narrow(2, 0, 1).expand(v.sizes()).reshape(shape);
    } else {
      int64_t d = reduced_dim(spec, c);
      x = x.narrow(d, 0, 1).expand(x.sizes());
    }
  } else if (kind == "neg_inf_mask") {
    int64_t d = reduced_dim(spec, c);
    at::Generator gen = input_generator(seed ^ 0x5eedULL, in.name + "#neg_inf");
    at::Tensor mask = at::empty(x.sizes(), at::TensorOptions().dtype(at::kFloat)).uniform_(0, 1, gen) < 0.25;
    mask.narrow(d, 0, 1).fill_(false);  // index 0 of every row stays finite: never a whole row of -inf
    x = x.masked_fill(mask, -std::numeric_limits<double>::infinity());
  } else {
    throw user_error(fmt::format("unknown adversarial input kind `{}` (expected one of {})", kind,
                                 fmt::join(adversarial_kind_names(), ", ")));
  }
  return same_layout(x, in);
}

}  // namespace

std::vector<at::Tensor> make_inputs(const workload_spec& spec, const case_spec& c, uint64_t seed, const c10::Device& device) {
  std::vector<at::Tensor> out;
  for (auto& in : spec.inputs) {
    host_input h = make_input(in, c, seed);
    out.push_back(own_copy_on(h.key, h.t, device));
  }
  return out;
}

std::vector<at::Tensor> make_adversarial_inputs(const workload_spec& spec, const case_spec& c, const std::string& kind,
                                                uint64_t seed, const c10::Device& device) {
  std::vector<host_input> hosts;
  for (auto& in : spec.inputs) hosts.push_back(make_input(in, c, seed));
  size_t p = primary_index(spec);
  const input_spec& in = spec.inputs[p];
  host_input& x = hosts[p];
  x.key += "|" + kind;  // the kind reads the graph too
  for (auto& call : spec.graph) x.key += "|" + call.op + call.args.dump();
  x.t = cached_input(x.key, [&] { return adversarial_input(spec, c, kind, seed, in, x.t); });
  std::vector<at::Tensor> ins;
  for (auto& h : hosts) ins.push_back(own_copy_on(h.key, h.t, device));
  return ins;
}

std::vector<at::Tensor> run_graph(const workload_spec& spec, const std::vector<at::Tensor>& inputs) {
  return run(spec, inputs, false);
}

std::vector<at::Tensor> run_graph_f64(const workload_spec& spec, const std::vector<at::Tensor>& inputs) {
  return run(spec, inputs, true);
}

}  // namespace kf
