// The workload spec (docs/workload-spec.md, version 1) as plain data. Parsing and validation live in
// spec_parse.*, shape/dtype inference in ops.*. The worker gets a spec as JSON (to_json / spec_from_json).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kf {

// Codes are the candidate ABI's (kf_abi.h): bool is KF_BOOL, not uint8.
enum class dtype : int32_t { float32 = 0, float16 = 1, bfloat16 = 2, float64 = 3, int32 = 4, int64 = 5, uint8 = 6, boolean = 7 };

std::string_view dtype_name(dtype t);                   // "float32", "bfloat16", ...
std::optional<dtype> parse_dtype(std::string_view s);   // accepts torch names and aliases (float, half, bf16...)
int64_t dtype_size(dtype t);
bool is_floating(dtype t);
const std::vector<std::string>& dtype_names();         // for "did you mean" and messages

// The baselines a spec times when it names none: the registered ones marked by_default (baseline_registry.h).
std::vector<std::string> default_baseline_names();

// One entry of an input's shape: a literal or a symbol bound by each case.
struct dim {
  std::string symbol;  // empty for a literal
  int64_t value = 0;
  bool is_symbol() const { return !symbol.empty(); }
};

struct init_spec {
  std::string kind = "normal";  // normal | uniform | causal_mask | randint
  nlohmann::json params = nlohmann::json::object();
};

struct input_spec {
  std::string name;
  std::vector<dim> shape;
  dtype type = dtype::float32;
  init_spec init;
  std::string memory_format = "contiguous";  // contiguous | channels_last
  source_loc loc;
};

// One op of the graph. `args` keeps the YAML mapping as JSON; the op registry knows its schema.
// The first op's args hold "input" (an input's name); tensor arguments name inputs.
// `as` names the op's result, so that `outputs` can return it (a residual sum beside the norm of it).
struct op_call {
  std::string op;
  nlohmann::json args = nlohmann::json::object();
  source_loc loc;
  std::string as;  // empty: unnamed (the last op's results are named by the op: out, or values and indices)
};

struct case_spec {
  std::string name;                          // "B=1,H=8,S=2048": the bindings in the spec's order
  std::vector<std::pair<std::string, int64_t>> bindings;
  bool gate = false;                         // timed (every case is verified)
  std::vector<std::string> devices;          // device kinds this case runs on ("cpu", "cuda"); empty = all
  // kforge capture's record of the model it came from: the share of the model's traced time its calls took, and
  // how many calls one forward made (kforge e2e's Amdahl prediction reads them); unset in hand-written specs.
  std::optional<double> share;
  std::optional<int64_t> calls;
  source_loc loc;
  bool runs_on(std::string_view device_kind) const;
  std::optional<int64_t> binding(std::string_view symbol) const;
};

struct tolerance_spec {
  std::optional<double> rtol, atol;
};

struct gate_spec {
  double max_regression = 0.05;              // fraction: 5% -> 0.05
  std::vector<std::string> must_beat;        // baseline names
  bool require_kernel = false;               // a missing kernel for this GPU fails the gate
};

struct search_spec {
  std::vector<std::string> families;
  int evaluations = 50;
  double seconds = 0;                        // 0: no wall-time budget
};

struct workload_spec {
  int version = 1;
  std::string name;
  std::string model;
  std::vector<input_spec> inputs;
  std::vector<op_call> graph;
  std::vector<case_spec> cases;
  // The results the kernel writes, in the ABI's order: names given by `as` or the last op's own output names.
  // Empty: the last op's results (output_refs in ops.h resolves either).
  std::vector<std::string> outputs;
  tolerance_spec tolerance;
  std::vector<std::string> baselines = default_baseline_names();
  gate_spec gate;
  search_spec search;
  std::vector<std::string> allow_libraries;  // libraries a candidate may call (cublas, cudnn...)
  double input_reads = 1.0;                  // how many times the floor counts each input read
  std::string path;                          // the YAML file it came from
  std::string hash;                          // sha256 of the file's text (cache keys)

  const input_spec* find_input(std::string_view name) const;
  const case_spec* find_case(std::string_view name) const;
};

// The concrete shape of an input in a case (symbols replaced by the case's bindings).
std::vector<int64_t> concrete_shape(const input_spec& in, const case_spec& c);

// The shapes of `in` a kernel is tuned for: its gated cases' when any case is gated (the others only need to be
// right), otherwise every case's; in case order.
std::vector<std::vector<int64_t>> tuning_shapes(const workload_spec& spec, const input_spec& in);

nlohmann::json to_json(const workload_spec& s);
workload_spec spec_from_json(const nlohmann::json& j);

}  // namespace kf
