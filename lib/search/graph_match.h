// Pattern-matching a spec's graph into the few shapes of computation the kernel families implement.
// A match is a plain record (softmax_graph, norm_graph, pool_graph) that every emitter of that shape
// consumes, whatever its device: the cpu and cuda families of one shape share the matcher.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "spec/ops.h"
#include "spec/spec.h"

namespace kf {

// One elementwise step on the way into a reduction (or out of it), in the graph's order.
struct elementwise_step {
  enum class kind { scale, softcap, add_mask, masked_fill, cast };
  kind what = kind::scale;
  double value = 0;       // scale: factor; softcap: cap; masked_fill: the value (may be infinite)
  std::string mask;       // add_mask, masked_fill: the input that holds the mask (masked_fill: bool)
  bool fill_where_false = false;  // masked_fill written as torch.where(mask, x, value): the value where it is false
  dtype to = dtype::float32;  // cast: the type the value is rounded to (every step's result type, for the others)
};

// softmax / log_softmax over the last dim, with a fused prologue and a cast / top-k epilogue:
//   [scale | softcap | add_mask | masked_fill | where | cast]*  (log_)softmax(dim=-1, dtype?)  [cast]*  [topk(k, dim=-1)]
// or, with the same prologue, a top-k of the values themselves or of their sigmoid (a router that scores experts
// with a sigmoid, a sampler's top-k of logits; last dim only):
//   [prologue]*  [sigmoid]  [cast]*  topk(k, dim=-1)
struct softmax_graph {
  enum class row_op { softmax, sigmoid, identity };  // what maps a row's values before the top-k (or the store)
  row_op op = row_op::softmax;
  std::string input;                       // the input holding x
  dtype in_type = dtype::float32;
  int rank = 0;                            // x's rank
  int dim = 0;                             // the reduced dim: rank - 1 (match_softmax) or an earlier one
  std::vector<elementwise_step> prologue;  // applied to every element before the reduction
  bool log = false;                        // log_softmax
  dtype softmax_type = dtype::float32;     // the softmax's (the sigmoid's, the prologue's) result type
  std::vector<dtype> epilogue_casts;       // casts after the softmax, in order
  dtype out_type = dtype::float32;         // the stored values' type
  int64_t topk = 0;                        // 0: no top-k; else outputs are values [.., k] and int64 indices
  std::vector<std::string> mask_inputs() const;  // the add_mask and masked_fill masks, in prologue order
  std::string describe() const;            // "softcap(50) -> softmax(float32) -> cast(bfloat16)"
};

// group_norm / layer_norm / rms_norm with an optional fused activation:
//   [cast]*  norm  [silu | gelu]  [cast]*
struct norm_graph {
  enum class kind { group_norm, layer_norm, rms_norm };
  enum class activation { none, silu, gelu, gelu_tanh };
  kind what = kind::group_norm;
  std::string input;
  dtype in_type = dtype::float32;       // x's stored type
  int rank = 0;
  std::vector<dtype> prologue_casts;    // casts before the norm
  int64_t num_groups = 1;               // group_norm
  int normalized_dims = 1;              // layer_norm / rms_norm: how many trailing dims are normalized
  std::string weight, bias;             // input names; empty when absent
  dtype weight_type = dtype::float32, bias_type = dtype::float32;
  double eps = 1e-5;                    // rms_norm without eps: the epsilon of the norm's input type
  dtype norm_type = dtype::float32;     // the norm's result type (its input's)
  activation act = activation::none;
  std::vector<dtype> epilogue_casts;
  dtype out_type = dtype::float32;
  std::string describe() const;
};

// An elementwise prologue, a layer_norm or rms_norm over the trailing dims, and an elementwise epilogue:
//   [elementwise op]*  (layer_norm | rms_norm)  [elementwise op]*
// Every tensor operand of the elementwise ops is either the value's full shape (contiguous) or a row of the
// normalized dims broadcast over the rows (a per-channel scale, say). Besides the result, the spec may return the
// norm's input (the sum of a residual add, say): `writes_input`.
struct row_norm_graph {
  norm_graph::kind what = norm_graph::kind::rms_norm;  // layer_norm or rms_norm
  size_t norm_op = 0;                 // the norm's index in spec.graph; ops before it are the prologue
  std::vector<int> inputs;            // elementwise operands in the order the ops read them (0: op 1's input)
  std::vector<dtype> types;           // their stored types
  size_t prologue_operands = 1;       // operands [0, prologue_operands) are read before the norm, the rest after
  std::vector<dtype> step_types;      // each op's result type, the norm's included
  int rank = 0;                       // the value's rank
  int normalized_dims = 1;            // how many trailing dims are normalized
  std::string weight, bias;           // input names; empty when absent
  dtype weight_type = dtype::float32, bias_type = dtype::float32;
  double eps = 1e-5;
  dtype norm_in = dtype::float32;     // the norm's input type
  // The type the returned input is stored (and the prologue's value rounded) in: norm_in, or where the spec returns a
  // prologue step that only widening casts separate from the norm (HF's `h = x + r; h.to(float32)`), that step's type,
  // which holds the norm's input exactly.
  dtype h_type = dtype::float32;
  dtype out = dtype::float32;         // the result's stored type
  bool writes_input = false;          // the spec returns the norm's input (or that step) too
  bool transcendental = false;        // some op of the prologue or epilogue calls exp, tanh or erf
  int input_output = 1;               // its index among the outputs (the result is the other)
  std::string describe() const;
  std::string returned_input() const;  // describe()'s note on the returned input, "" when there is none
};

// adaptive_avg_pool2d to 1x1 (global average pooling) [flatten(start_dim=1)] [cast]*, NCHW or channels_last.
struct pool_graph {
  std::string input;
  dtype in_type = dtype::float32;
  int rank = 4;                         // 3 ([C, H, W]) or 4 ([N, C, H, W])
  bool channels_last = false;           // the input's declared memory format (kernels still read strides)
  pool_window window;  // adaptive to 1 x 1 is global pooling (match_pool's); any other, or avg_pool2d, match_adaptive_pool's
  bool flatten = false;
  std::vector<dtype> epilogue_casts;
  dtype out_type = dtype::float32;
  std::string describe() const;
};

// A chain of elementwise ops (families/elementwise_emit.h) computed in float and stored as float16, bfloat16 or
// float32, one pass over the output, which is the last op's only result. The operands in the order the chain reads
// them: the first op's input, then each op's tensor operand (input indices), with their stored types.
struct pointwise_graph {
  std::vector<int> inputs;
  std::vector<dtype> types;
  dtype out = dtype::float32;
  int out_rank = 0;
  std::vector<dtype> step_types;  // each op's result type
  size_t widest = 2;            // bytes of the widest stored type (operands and result)
  bool transcendental = false;  // some op calls exp, tanh or erf (a math knob matters)
};

// Each returns the match, or nullopt with `why_not` saying which op (by index and name) did not fit.
std::optional<pointwise_graph> match_pointwise(const workload_spec& spec, std::string* why_not);
std::optional<softmax_graph> match_softmax(const workload_spec& spec, std::string* why_not);
// softmax / log_softmax over a dim before the last (a segmentation head's classes, dim 1 of [B, C, H, W]): x is read
// as [outer, n, inner] with inner > 1, so a row's values lie `inner` elements apart. Scale, softcap and casts
// before it, casts after; no masks, no top-k. A softmax_graph whose dim < rank - 1.
std::optional<softmax_graph> match_col_softmax(const workload_spec& spec, std::string* why_not);
std::optional<norm_graph> match_norm(const workload_spec& spec, std::string* why_not);
// adaptive_avg_pool2d [flatten] [cast]*: match_pool takes global pooling (output 1 x 1), match_adaptive_pool any
// other output size (windows [floor(i H / OH), ceil((i + 1) H / OH)), as torch's).
std::optional<pool_graph> match_pool(const workload_spec& spec, std::string* why_not);
std::optional<pool_graph> match_adaptive_pool(const workload_spec& spec, std::string* why_not);
std::optional<row_norm_graph> match_row_norm(const workload_spec& spec, std::string* why_not);

// An op's dtype argument (`key`: "dtype"), or nullopt where it has none or names no dtype.
std::optional<dtype> dtype_arg(const nlohmann::json& args, const char* key);

// Whether a spec's `search.families` selects a family ("row_softmax" selects row_softmax_cpu and row_softmax_cuda; the full name selects just that one;
// an empty list selects every family).
bool family_selected(const workload_spec& spec, const std::string& family_name);

std::string_view norm_kind_name(norm_graph::kind k);
std::string_view activation_name(norm_graph::activation a);

}  // namespace kf
