// The op registry: one table entry per graph op, keyed by name, with its argument schema and its shape and
// dtype inference under PyTorch eager semantics. The LibTorch implementations sit in ops_torch.cpp and the
// Python counterparts in baselines/compile/export.py, under the same names.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kf {

// fill: a number that may be infinite (masked_fill's value), held in JSON as a number or "inf" / "-inf".
enum class arg_kind { integer, number, boolean, string, dtype, tensor, int_list, fill };
std::string_view arg_kind_name(arg_kind k);  // "an integer", "a number", ... (for messages)
// A number argument's value: a JSON number, or "inf" / "-inf" (a `fill` argument's infinities).
double number_value(const nlohmann::json& v);

struct arg_def {
  std::string name;
  arg_kind kind;
  bool required = false;
  nlohmann::json default_value;      // null: no default (absent means "not given", e.g. softmax's dtype)
  std::vector<std::string> choices;  // for strings: the allowed values
  std::string help;
  bool number_ok = false;            // a tensor argument that may be a number instead (add/sub/mul/div's other: x + 1)
};

struct tensor_desc {
  std::vector<int64_t> shape;
  dtype type = dtype::float32;
  int64_t numel() const;
  std::string str() const;  // "bfloat16[1, 8, 2048, 2048]"
  bool operator==(const tensor_desc&) const = default;
};

// A shape or dtype problem found by an op's inference: which argument (empty: the op's input) and what.
struct op_error {
  std::string arg;
  std::string message;
};

// What an op's inference sees: its input, its (defaulted) arguments and the tensors its tensor arguments name.
struct op_def;
struct op_context {
  const op_def& op;
  tensor_desc input;
  const nlohmann::json& args;  // missing arguments fall back to the schema's default
  std::map<std::string, tensor_desc> tensors;
  int64_t get_int(const std::string& name) const;
  double get_number(const std::string& name) const;
  std::vector<int64_t> get_int_list(const std::string& name) const;  // a single integer is a list of one
  std::string get_string(const std::string& name) const;
  bool has(const std::string& name) const;  // given (or defaulted) and not null
  const nlohmann::json& value(const std::string& name) const;  // the argument or its default (null if neither)
  [[noreturn]] void fail(const std::string& arg, const std::string& message) const;
};

struct op_def {
  std::string name;
  std::string summary;          // the torch expression it stands for
  std::vector<arg_def> args;    // not counting the first op's "input"
  bool must_be_last = false;    // ops with several outputs end the graph
  std::vector<std::string> output_names;  // default {"out"}; topk {"values", "indices"}
  // Output descriptors; calls ctx.fail(...) (throws op_error) on a mismatch.
  std::function<std::vector<tensor_desc>(const op_context& ctx)> infer;
  const arg_def* find_arg(std::string_view name) const;
};

// The registry.
const std::vector<op_def>& op_table();
const op_def* find_op(std::string_view name);
std::vector<std::string> op_names();

// Whether a call's argument `name` is a number where a tensor may stand (`add: {other: 1.0}`: x + 1.0, a Python
// scalar operand: x's dtype is kept).
bool is_number_operand(const op_call& call, const std::string& name);
// The names of the inputs an op's tensor arguments refer to (the first op's "input" included), in schema order.
std::vector<std::string> tensor_arg_inputs(const op_call& call);
// The graph's primary input: the one the first op names.
std::string primary_input(const workload_spec& spec);

// rms_norm's eps when a spec gives none, as ATen takes it: the epsilon of the op's compute type (float32's for
// float16, bfloat16 and float32 inputs, float64's for float64), not of the input's own type.
double rms_norm_default_eps(dtype input);
// Makes the defaults that depend on a dtype explicit in the graph's arguments, once the graph's dtypes are known
// (rms_norm's eps), so eager, the float64 reference and the kernel families all use one value. A graph that does
// not infer is left as it is (its errors are reported elsewhere).
void fill_dtype_defaults(workload_spec& spec);

// Broadcasting and type promotion as torch does them (used by several ops).
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
dtype promote_types(dtype a, dtype b);
// Normalizes a dim against a rank (negative dims count from the end); -1 when out of range.
int64_t wrap_dim(int64_t d, int64_t rank);

// Inference of a whole graph for one case.
struct graph_error {
  size_t op_index = 0;  // which graph entry
  std::string arg;      // which of its arguments ("" = its input)
  std::string message;
};
struct graph_shapes {
  std::vector<tensor_desc> inputs;                 // in the spec's input order
  std::vector<std::vector<tensor_desc>> steps;     // each op's outputs
  std::vector<tensor_desc> results;                // the spec's outputs (output_refs), in their order
  const std::vector<tensor_desc>& outputs() const { return results; }
};
// Returns false and fills *err on the first mismatch (the parser turns it into a diagnostic).
bool try_infer_graph(const workload_spec& spec, const case_spec& c, graph_shapes* out, graph_error* err);
// The graph's outputs for a case; throws user_error naming the op's location on a mismatch.
std::vector<tensor_desc> infer_outputs(const workload_spec& spec, const case_spec& c);
// adaptive_avg_pool2d's output_size as torch reads it: a size s or [s] means [s, s]; [h, w] stays; anything else
// (a wrong length, not integers) comes back as the integers it has, for the caller to reject.
std::vector<int64_t> pool_output_size(const nlohmann::json& output_size);
// The windows of a pooling over the last two dims: adaptive_avg_pool2d (torch's adaptive windows
// [floor(i len / out), ceil((i + 1) len / out)) of a fixed output size), avg_pool2d (kernel, stride and padding, the
// output's size following the input's; a window's divisor is its size counting the padding, or not, or
// divisor_override) or max_pool2d (avg_pool2d's windows, their largest value).
struct pool_window {
  bool adaptive = true;
  bool max = false;                   // max_pool2d: the window's largest value (NaN if it holds one), no divisor
  int64_t out_h = 1, out_w = 1;       // adaptive: the output size
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;  // avg_pool2d
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor = 0;                // divisor_override (0: none)
  bool global() const { return adaptive && out_h == 1 && out_w == 1; }
  // The output's length along a dim of the input's `len` (dim 0: rows, 1: columns); 0 where none fits.
  int64_t out_len(int dim, int64_t len) const;
  std::string describe() const;  // "adaptive_avg_pool2d(7, 7)", "avg_pool2d(3, stride 2, padding 1, ceil_mode)"
};
// Whether an op pools over windows of the last two dims: adaptive_avg_pool2d, avg_pool2d or max_pool2d (the ops
// pool_window_of reads).
bool is_window_pooling(std::string_view op);
// The windows an adaptive_avg_pool2d, avg_pool2d or max_pool2d call pools over (its arguments checked by the op's
// inference).
pool_window pool_window_of(const op_call& call);
// Input descriptors for a case (shapes with the case's bindings).
std::vector<tensor_desc> input_descs(const workload_spec& spec, const case_spec& c);
// One result the kernel writes: which op made it (graph index), which of that op's results, and its name.
struct output_ref {
  size_t step = 0;
  size_t index = 0;
  std::string name;
};
// Every result `outputs` may name: the last op's (named by its `as`, else by the op: "out", or "values", "indices"),
// then each earlier op's with an `as`, in graph order.
std::vector<output_ref> named_results(const workload_spec& spec);
// The spec's outputs in the ABI's order: `outputs` resolved against the ops' `as` names and the last op's own
// output names ("out", or "values", "indices" for topk); without `outputs`, the last op's results. A name that
// resolves to nothing is skipped (the parser reports it).
std::vector<output_ref> output_refs(const workload_spec& spec);
// The output names, in the ABI's order.
std::vector<std::string> output_names(const workload_spec& spec);
// Whether the spec returns anything besides the last op's results, in the last op's order (families that emit only
// the final result check it).
bool has_extra_outputs(const workload_spec& spec);

}  // namespace kf
