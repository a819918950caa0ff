// A model's operator trace as kforge capture reads it: the JSON that lib/capture/trace.py writes (every aten
// operator the model dispatched, in order, with its module path, arguments, tensor metadata and time), with the
// dataflow between operators (which operator made each value, which ones read it) indexed.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kf::capture {

// The trace format's version (trace.py's TRACE_VERSION).
constexpr int k_trace_version = 1;

// One value a tensor held: the tracer numbers every operator's outputs (an in-place operator's output is a new
// value of the same tensor), and the parameters, buffers, inputs and other tensors it first sees as arguments.
struct tensor_meta {
  int64_t value = -1;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  std::string dtype;  // torch's name: "bfloat16", "bool", "complex64"
  // The spec's dtype, or nullopt for one a spec cannot hold (complex, float8, int8, int16).
  std::optional<kf::dtype> spec_dtype() const;
  int64_t numel() const;
  bool contiguous() const;
  bool channels_last() const;  // 4-d, channels_last strides (and not also plain contiguous)
};

struct traced_op {
  size_t index = 0;        // position in the trace
  std::string name;        // "aten.native_layer_norm.default"
  std::string module;      // the innermost module running it ("layers.0.mlp"; "" for the model's own forward)
  nlohmann::json args;     // positional arguments: a tensor is {"value", "shape", "dtype", "stride"}
  nlohmann::json kwargs;   // keyword arguments, encoded the same way
  std::vector<int64_t> inputs;   // the values of every tensor argument, in order (lists flattened)
  std::vector<int64_t> outputs;  // the values of its tensor results, in order
  double time_us = 0;

  // Positional argument `i`, else the keyword `name`; null when neither was given.
  const nlohmann::json& arg(size_t i, const std::string& name) const;
};

// Is `j` an encoded tensor? (an object with a "value")
bool is_tensor(const nlohmann::json& j);
// A number argument (finite); nullopt for anything else, booleans included.
std::optional<double> number_arg(const nlohmann::json& j);
std::optional<int64_t> int_arg(const nlohmann::json& j);
std::optional<std::vector<int64_t>> int_list_arg(const nlohmann::json& j);  // a list of ints, or one int

struct trace {
  std::string model;          // FILE.py:FUNCTION as given
  std::string device;         // "cpu" | "cuda"
  std::string torch_version;
  std::vector<traced_op> ops;
  std::map<int64_t, tensor_meta> values;
  std::map<int64_t, nlohmann::json> origins;  // values from outside the operators: {"param": name}, {"input": i}...
  std::set<int64_t> model_outputs;            // values the forward returned

  const tensor_meta& meta(int64_t value) const;  // asserts it is known
  // The operator that made `value`, or nullopt for a parameter, input or other outside tensor.
  std::optional<size_t> producer(int64_t value) const;
  // The operators that read `value`, in trace order.
  const std::vector<size_t>& consumers(int64_t value) const;
  double total_us() const;  // the sum of every operator's time

  // Fills the dataflow index (parse_trace calls it; tests that build a trace by hand call it too).
  void index();

 private:
  std::map<int64_t, size_t> m_producer;
  std::map<int64_t, std::vector<size_t>> m_consumers;
};

// Reads trace.py's JSON; throws user_error naming `source` and what is wrong.
trace parse_trace(const nlohmann::json& j, const std::string& source);
trace read_trace(const std::filesystem::path& path);

}  // namespace kf::capture
