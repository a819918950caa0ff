#include "spec/adversarial.h"

#include "spec/ops.h"

namespace kf {
namespace {

bool has_row_reduction(const workload_spec& spec) {
  for (auto& call : spec.graph)
    if (call.op == "softmax" || call.op == "log_softmax" || call.op == "topk") return true;
  return false;
}

}  // namespace

const std::vector<adversarial_kind>& adversarial_kinds() {
  static const std::vector<adversarial_kind> kinds = {
      {"large_magnitude", "the primary input times 100"},
      {"all_equal_rows", "every row of the primary input (along the reduced dim) holds a single value"},
      {"neg_inf_mask", "some -inf entries in the primary input, never a whole row"},
  };
  return kinds;
}

std::vector<std::string> adversarial_kind_names() {
  std::vector<std::string> v;
  for (auto& k : adversarial_kinds()) v.push_back(k.name);
  return v;
}

bool adversarial_applies(const workload_spec& spec, std::string_view kind) {
  if (spec.graph.empty()) return false;
  const input_spec* in = spec.find_input(primary_input(spec));
  if (!in || !is_floating(in->type)) return false;
  if (kind == "large_magnitude") return true;
  // A 0-d input has no rows: one value is trivially all equal, and there is no dim to mask along.
  if (in->shape.empty()) return false;
  if (kind == "all_equal_rows") return true;
  if (kind == "neg_inf_mask") return has_row_reduction(spec);
  return false;
}

int64_t reduced_dim(const workload_spec& spec, const case_spec& c) {
  const input_spec* in = spec.find_input(primary_input(spec));
  KF_ASSERT(in, "spec {} has no primary input", spec.name);
  int64_t rank = static_cast<int64_t>(in->shape.size());
  graph_shapes g;
  graph_error e;
  if (rank == 0 || !try_infer_graph(spec, c, &g, &e)) return rank ? rank - 1 : 0;
  std::vector<int64_t> shape = concrete_shape(*in, c);
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    if (call.op == "softmax" || call.op == "log_softmax" || call.op == "topk") {
      int64_t d = wrap_dim(call.args.value("dim", int64_t(-1)), rank);
      return d < 0 ? rank - 1 : d;
    }
    if (g.steps[i].front().shape != shape) break;  // a reshaping op: dims no longer line up with the input's
  }
  return rank - 1;
}

}  // namespace kf
