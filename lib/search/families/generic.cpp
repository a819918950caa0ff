// generic_cpu / generic_cuda: the generic code generator. Any valid graph becomes a correct kernel: each maximal run
// of elementwise ops is one fused pass (elementwise_emit.h), every other op (softmax, norms, top-k, pooling,
// flatten, linear, matmul) its own loop over work items from generic_ops.h, with intermediate results in kf_acc
// buffers. It is the search's root when no family covers a spec (a fallback family) and what the LLM proposer
// rewrites; it is correct on every op and dtype of the spec language, not fast.
#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/elementwise_emit.h"
#include "search/families/embedded.h"
#include "search/family.h"
#include "spec/ops.h"
#include "util/error.h"

namespace kf {
namespace {

// The graph cut into stages: a run of elementwise ops [first, last], or one other op (first == last).
struct stage {
  size_t first = 0, last = 0;
  bool elementwise = false;
};

std::vector<stage> stages_of(const workload_spec& spec) {
  std::vector<stage> out;
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const bool ew = ew::is_elementwise(spec.graph[i].op);
    if (ew && !out.empty() && out.back().elementwise) {
      out.back().last = i;
      continue;
    }
    out.push_back({i, i, ew});
  }
  return out;
}

// What the emitter knows of one spec: dtypes and ranks of every step (they do not depend on the case), where each
// output comes from.
struct plan {
  const workload_spec& spec;
  graph_shapes g;
  std::string acc;                                  // float | double
  std::vector<output_ref> refs;
  std::string result(size_t step) const { return fmt::format("s{}", step); }
  // The output index of (step, index), or -1.
  int output_of(size_t step, size_t index = 0) const {
    for (size_t k = 0; k < refs.size(); ++k)
      if (refs[k].step == step && refs[k].index == index) return static_cast<int>(k);
    return -1;
  }
  std::string input_of(size_t step) const {  // the view a step reads
    if (step > 0) return result(step - 1);
    return fmt::format("I[{}]", input_index(spec, spec.graph[0].args.at("input").get<std::string>()));
  }
  int rank_in(size_t step) const {
    if (step > 0) return static_cast<int>(g.steps[step - 1].front().shape.size());
    return static_cast<int>(g.inputs[input_index(spec, spec.graph[0].args.at("input").get<std::string>())].shape.size());
  }
  int64_t dim_arg(size_t step, const char* key, int64_t def) const {
    const int rank = rank_in(step);
    const int64_t d = wrap_dim(spec.graph[step].args.value(key, def), rank);
    return d < 0 ? 0 : d;
  }
};

std::string tensor_operand(const plan& p, const op_call& call, const std::string& arg) {
  if (!call.args.contains(arg) || !call.args[arg].is_string()) return "kf_none";
  return fmt::format("I[{}]", input_index(p.spec, call.args[arg].get<std::string>()));
}

// The result of a stage: the output view when the step is the graph's last, else a fresh kf_acc buffer of `shape`
// (a kf_view expression). Checks an output's shape against the one computed.
std::string destination(const plan& p, size_t step, const std::string& shape_view) {
  const std::string r = p.result(step);
  if (step + 1 == p.spec.graph.size()) {
    const int o = p.output_of(step);
    return fmt::format("    {0} = O[{1}];\n    if (!kf_same_shape({0}, {2})) {{ rc = 1; break; }}\n", r, o, shape_view);
  }
  return fmt::format(
      "    {0} = kf_contiguous(KF_ACC_CODE, {1}.ndim, {1}.shape);\n"
      "    {0}.data = kf_bufs[{2}] = kf_alloc(kf_numel({0}) * (int64_t)sizeof(kf_acc), stream);\n"
      "    if (!{0}.data) {{ rc = 4; break; }}\n",
      r, shape_view, step);
}

// A named result that is not the last op's: copied to its output once computed.
std::string copy_out(const plan& p, size_t step) {
  const int o = p.output_of(step);
  if (o < 0 || step + 1 == p.spec.graph.size()) return "";
  return fmt::format(
      "    if (!kf_same_shape(O[{0}], {1})) {{ rc = 1; break; }}\n"
      "    if ((rc = kf_items(kf_numel({1}), kf_reshape_item{{{1}, O[{0}]}}, stream, kf_par))) break;\n",
      o, p.result(step));
}

// One fused pass over a run of elementwise ops: the functor (before kf_launch) and its launch (inside it).
void emit_elementwise(const plan& p, const stage& st, std::string* functors, std::string* body) {
  std::vector<std::string> operands;          // views of the tensor operands, in op order
  std::vector<std::string> dests;             // views written, in op order
  std::string code;
  for (size_t i = st.first; i <= st.last; ++i) {
    const op_call& call = p.spec.graph[i];
    std::string operand;
    if (const std::string arg = ew::operand_arg(call); !arg.empty()) {
      operand = fmt::format("o{}", operands.size());
      code += fmt::format("    const kf_acc {0} = kf_load(o[{1}], kf_offset(o[{1}], idx, rank));\n", operand, operands.size());
      operands.push_back(tensor_operand(p, call, arg));
    }
    // In kf_acc throughout (as torch.compile computes), rounded only where the graph casts.
    code += "    " + ew::statement(call, "v", operand, p.g.steps[i].front().type, p.acc, false) + "\n";
    const bool last_of_graph = i + 1 == p.spec.graph.size();
    std::string dest;
    if (i == st.last) dest = last_of_graph ? fmt::format("O[{}]", p.output_of(i)) : p.result(i);
    else if (p.output_of(i) >= 0) dest = fmt::format("O[{}]", p.output_of(i));
    if (!dest.empty()) {
      code += fmt::format("    kf_store(d[{0}], kf_offset(d[{0}], idx, rank), v);\n", dests.size());
      dests.push_back(dest);
    }
  }
  const std::string name = fmt::format("kf_pass{}", st.first);
  *functors += fmt::format(
      "// ops {}-{}: {}\n"
      "struct {} {{\n"
      "  kf_view src, o[{}], d[{}];\n"
      "  int rank;\n"
      "  int64_t shape[KF_MAX_DIMS];\n"
      "  KF_HD void operator()(int64_t i) const {{\n"
      "    int64_t idx[KF_MAX_DIMS];\n"
      "    kf_unravel(i, shape, rank, idx);\n"
      "    kf_acc v = kf_load(src, kf_offset(src, idx, rank));\n"
      "{}"
      "  }}\n"
      "}};\n\n",
      st.first + 1, st.last + 1, [&] {
        std::vector<std::string> ops;
        for (size_t i = st.first; i <= st.last; ++i) ops.push_back(p.spec.graph[i].op);
        return fmt::format("{}", fmt::join(ops, ", "));
      }(),
      name, std::max<size_t>(operands.size(), 1), std::max<size_t>(dests.size(), 1), code);
  // The shape after each op (broadcasting grows it); the named results inside the run are checked against theirs.
  std::string b = fmt::format("    {{  // ops {0}-{1}\n    kf_view sh = kf_contiguous(KF_ACC_CODE, {2}.ndim, {2}.shape);\n",
                              st.first + 1, st.last + 1, p.input_of(st.first));
  for (size_t i = st.first; i <= st.last; ++i) {
    const op_call& call = p.spec.graph[i];
    if (const std::string arg = ew::operand_arg(call); !arg.empty())
      b += fmt::format("    if (!kf_broadcast_into(&sh, {})) {{ rc = 1; break; }}\n", tensor_operand(p, call, arg));
    if (i != st.last && p.output_of(i) >= 0)
      b += fmt::format("    if (!kf_same_shape(O[{}], sh)) {{ rc = 1; break; }}\n", p.output_of(i));
  }
  b += destination(p, st.last, "sh");
  b += fmt::format("    {} st;\n    st.src = {};\n", name, p.input_of(st.first));
  for (size_t j = 0; j < operands.size(); ++j) b += fmt::format("    st.o[{}] = {};\n", j, operands[j]);
  for (size_t j = 0; j < dests.size(); ++j) b += fmt::format("    st.d[{}] = {};\n", j, dests[j]);
  b += "    st.rank = sh.ndim;\n    for (int d = 0; d < KF_MAX_DIMS; ++d) st.shape[d] = sh.shape[d];\n";
  b += "    if ((rc = kf_items(kf_numel(sh), st, stream, kf_par))) break;\n";
  if (st.last + 1 != p.spec.graph.size() && p.output_of(st.last) >= 0) {
    // The run's result is also an output: it went to the buffer; copy it.
    b += copy_out(p, st.last);
  }
  *body += b + "    }\n";
}

// One op that is not elementwise.
void emit_other(const plan& p, size_t i, std::string* body) {
  const op_call& call = p.spec.graph[i];
  const std::string x = p.input_of(i), r = p.result(i);
  const auto& a = call.args;
  std::string b = fmt::format("    {{  // op {}: {}\n", i + 1, call.op);
  auto shape_same = [&] { b += fmt::format("    kf_view sh = kf_contiguous(KF_ACC_CODE, {0}.ndim, {0}.shape);\n", x); };
  if (call.op == "softmax" || call.op == "log_softmax") {
    shape_same();
    b += destination(p, i, "sh");
    b += fmt::format("    if ((rc = kf_items(kf_numel({0}) / ({0}.ndim ? {0}.shape[{2}] : 1), kf_softmax_item{{{0}, {1}, {2}, {3}}}, stream, kf_par))) break;\n",
                     x, r, p.dim_arg(i, "dim", -1), call.op == "log_softmax" ? "true" : "false");
  } else if (call.op == "layer_norm" || call.op == "rms_norm") {
    shape_same();
    b += destination(p, i, "sh");
    const int nd = static_cast<int>(a.at("normalized_shape").is_array() ? a.at("normalized_shape").size() : 1);
    b += fmt::format("    int64_t rows = 1;\n    for (int d = 0; d < {0}.ndim - {1}; ++d) rows *= {0}.shape[d];\n", x, nd);
    b += fmt::format("    if ((rc = kf_items(rows, kf_row_norm_item{{{0}, {1}, {2}, {3}, {4}, {5}, {6}}}, stream, kf_par))) break;\n",
                     x, r, tensor_operand(p, call, "weight"), call.op == "layer_norm" ? tensor_operand(p, call, "bias") : "kf_none",
                     nd, call.op == "rms_norm" ? "true" : "false", ew::literal(a.value("eps", 1e-5), p.acc));
  } else if (call.op == "group_norm") {
    shape_same();
    b += destination(p, i, "sh");
    const int64_t groups = a.at("num_groups").get<int64_t>();
    b += fmt::format("    if ((rc = kf_items({0}.shape[0] * {1}, kf_group_norm_item{{{0}, {2}, {3}, {4}, {1}, {5}}}, stream, kf_par))) break;\n",
                     x, groups, r, tensor_operand(p, call, "weight"), tensor_operand(p, call, "bias"),
                     ew::literal(a.value("eps", 1e-5), p.acc));
  } else if (call.op == "topk") {
    const int64_t dim = p.dim_arg(i, "dim", -1), k = a.at("k").get<int64_t>();
    shape_same();
    b += fmt::format("    if ({0}.ndim) sh.shape[{1}] = {2};\n    sh = kf_contiguous(KF_ACC_CODE, sh.ndim, sh.shape);\n", x, dim, k);
    const int ov = p.output_of(i, 0), oi = p.output_of(i, 1);
    b += fmt::format("    if (!kf_same_shape(O[{0}], sh) || !kf_same_shape(O[{1}], sh)) {{ rc = 1; break; }}\n", ov, oi);
    b += fmt::format("    if ((rc = kf_items(kf_numel({0}) / ({0}.ndim ? {0}.shape[{1}] : 1), kf_topk_item{{{0}, O[{2}], O[{3}], {1}, {4}, {5}}}, stream, kf_par))) break;\n",
                     x, dim, ov, oi, k, a.value("largest", true) ? "true" : "false");
  } else if (is_window_pooling(call.op)) {
    const pool_window w = pool_window_of(call);
    shape_same();
    b += fmt::format("    if (sh.ndim < 2) {{ rc = 1; break; }}\n");
    for (int d = 0; d < 2; ++d)  // avg_pool2d's pooled sizes follow x's
      b += fmt::format("    sh.shape[sh.ndim - {0}] = kf_pool_out_len({1}, {2}, {3}.shape[{3}.ndim - {0}], {4}, {5}, {6}, {7});\n",
                       2 - d, w.adaptive ? "false" : "true", d ? w.out_w : w.out_h, x, d ? w.kw : w.kh, d ? w.sw : w.sh,
                       d ? w.pw : w.ph, w.ceil_mode ? "true" : "false");
    b += "    if (sh.shape[sh.ndim - 2] < 1 || sh.shape[sh.ndim - 1] < 1) { rc = 1; break; }\n";
    b += "    sh = kf_contiguous(KF_ACC_CODE, sh.ndim, sh.shape);\n";
    b += destination(p, i, "sh");
    b += fmt::format("    if ((rc = kf_items(kf_numel({1}), kf_pool_item{{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}}}, stream, kf_par))) break;\n",
                     x, r, w.adaptive ? "false" : "true", w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.count_include_pad ? "true" : "false", w.divisor,
                     w.max ? "true" : "false");
  } else if (call.op == "flatten") {
    const int rank = p.rank_in(i);
    const int64_t s = rank ? p.dim_arg(i, "start_dim", 0) : 0, e = rank ? p.dim_arg(i, "end_dim", -1) : 0;
    b += fmt::format("    int64_t shape[KF_MAX_DIMS];\n    int n = 0;\n");
    if (rank == 0) b += "    shape[n++] = 1;\n";
    else
      b += fmt::format("    int64_t prod = 1;\n    for (int d = 0; d < {0}.ndim; ++d) {{\n"
                       "      if (d < {1} || d > {2}) shape[n++] = {0}.shape[d]; else prod *= {0}.shape[d];\n"
                       "      if (d == {2}) shape[n++] = prod;\n    }}\n", x, s, e);
    b += "    kf_view sh = kf_contiguous(KF_ACC_CODE, n, shape);\n";
    b += destination(p, i, "sh");
    b += fmt::format("    if ((rc = kf_items(kf_numel({1}), kf_reshape_item{{{0}, {1}}}, stream, kf_par))) break;\n", x, r);
  } else if (call.op == "linear" || call.op == "matmul") {
    const bool lin = call.op == "linear";
    const int ra = p.rank_in(i);
    const std::string w = tensor_operand(p, call, lin ? "weight" : "other");
    const int rb = lin ? 2 : static_cast<int>(p.g.inputs[input_index(p.spec, a.at("other").get<std::string>())].shape.size());
    b += fmt::format("    kf_view A = {};\n", ra == 1 ? fmt::format("kf_insert_dim({}, 0)", x) : x);
    if (lin)
      b += fmt::format("    kf_view B = {0};\n    B.shape[0] = {0}.shape[1];\n    B.shape[1] = {0}.shape[0];\n"
                       "    B.stride[0] = {0}.stride[1];\n    B.stride[1] = {0}.stride[0];\n", w);
    else
      b += fmt::format("    kf_view B = {};\n", rb == 1 ? fmt::format("kf_insert_dim({}, 1)", w) : w);
    b += "    kf_view Y;\n    if (!kf_matmul_shape(A, B, KF_ACC_CODE, &Y)) { rc = 1; break; }\n";
    // The result drops the dims a vector operand added.
    b += "    kf_view sh = Y;\n";
    if (rb == 1) b += "    sh.ndim -= 1;  // no n dim\n";
    if (ra == 1)
      b += fmt::format("    for (int d = sh.ndim - {}; d + 1 < sh.ndim; ++d) sh.shape[d] = sh.shape[d + 1];  // no m dim\n"
                       "    sh.ndim -= 1;\n", rb == 1 ? 1 : 2);
    b += "    sh = kf_contiguous(KF_ACC_CODE, sh.ndim, sh.shape);\n";
    b += destination(p, i, "sh");
    b += fmt::format("    Y = {};\n", r);
    if (ra == 1) b += fmt::format("    Y = kf_insert_dim(Y, Y.ndim{});\n", rb == 1 ? "" : " - 1");
    if (rb == 1) b += "    Y = kf_insert_dim(Y, Y.ndim);\n";
    b += fmt::format("    if ((rc = kf_items(kf_numel(Y), kf_matmul_item{{A, B, {}, Y}}, stream, kf_par))) break;\n",
                     lin ? tensor_operand(p, call, "bias") : "kf_none");
  } else {
    KF_ASSERT(false, "the generic code generator has no code for op {}", call.op);
  }
  b += copy_out(p, i);
  *body += b + "    }\n";
}

class generic_family final : public family {
 public:
  explicit generic_family(device_kind d) : m_device(d) {}
  std::string name() const override { return m_device == device_kind::cuda ? "generic_cuda" : "generic_cpu"; }
  device_kind device() const override { return m_device; }
  // 2: avg_pool2d, and pool_window.h emitted ahead of generic_ops.h where the graph pools.
  int version() const override { return 2; }
  bool fallback() const override { return true; }
  bool covers(const workload_spec& spec, std::string* why_not) const override {
    graph_shapes g;
    graph_error e;
    bool infers = false;
    try {
      infers = !spec.cases.empty() && try_infer_graph(spec, spec.cases.front(), &g, &e);
    } catch (const std::exception&) {  // a spec built in code with arguments of the wrong kind
    }
    if (!infers) {
      if (why_not) *why_not = "the graph does not infer (not a valid spec)";
      return false;
    }
    for (auto& call : spec.graph)
      if (!ew::is_elementwise(call.op) && !k_other_ops.count(call.op)) {
        if (why_not) *why_not = fmt::format("no generic code for op {}", call.op);
        return false;
      }
    return true;
  }
  std::vector<knob> knobs() const override {
    if (m_device == device_kind::cuda)
      return {{"block", {"128", "256", "512"}, "threads per block (one work item per thread, grid-stride)"}};
    return {{"threads", {"all", "1"}, "OpenMP threads over the work items (all: OpenMP's default)"}};
  }
  knob_values default_variant(const workload_spec&) const override {
    if (m_device == device_kind::cuda) return {{"block", "256"}};
    return {{"threads", "all"}};
  }
  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    return knobs_in_range(*this, v, why_not) && covers(spec, why_not);
  }
  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    plan p{spec, {}, "float", output_refs(spec)};
    graph_error e;
    KF_ASSERT(try_infer_graph(spec, spec.cases.front(), &p.g, &e), "emit on a spec that does not infer");
    auto uses_f64 = [](const tensor_desc& t) { return t.type == dtype::float64; };
    for (auto& t : p.g.inputs) p.acc = uses_f64(t) ? "double" : p.acc;
    for (auto& s : p.g.steps)
      for (auto& t : s) p.acc = uses_f64(t) ? "double" : p.acc;
    std::vector<std::string> ops;
    for (auto& call : spec.graph) ops.push_back(call.op);
    std::string src = family_kernel_header(*this, spec, v, fmt::format("{} (generic: one pass per elementwise run, one loop per other op)", fmt::join(ops, " -> ")));
    src += "\n";
    src += fmt::format("#undef KF_GENERIC_CUDA\n#undef KF_ACC_TYPE\n#undef KF_ACC_CODE\n#define KF_GENERIC_CUDA {}\n#define KF_ACC_CODE {}\n#define KF_ACC_TYPE {}\n",
                       m_device == device_kind::cuda ? 1 : 0, p.acc == "double" ? "KF_FLOAT64" : "KF_FLOAT32", p.acc);
    // pool_window.h for kf_pool_item, where the graph pools (KF_POOLS leaves the item out elsewhere).
    const bool pools =
        std::any_of(spec.graph.begin(), spec.graph.end(), [](const op_call& c) { return is_window_pooling(c.op); });
    if (pools) {
      src += fmt::format("#define KF_POOLS 1\n#define KF_POOL_FN static {}inline\n", m_device == device_kind::cuda ? "__host__ __device__ " : "");
      src += embedded_file("search/families/pool_window.h");
    }
    src += embedded_file("search/families/generic_ops.h");
    std::string functors, body;
    for (const stage& st : stages_of(spec)) {
      if (st.elementwise) emit_elementwise(p, st, &functors, &body);
      else emit_other(p, st.first, &body);
    }
    src += "\n// ---- this spec's passes ----\nnamespace kfk {\n\n" + functors + "}  // namespace kfk\n\n";
    const size_t ni = spec.inputs.size(), no = p.refs.size();
    std::vector<std::string> in_dt, in_nd, out_dt, out_nd;
    for (auto& t : p.g.inputs) in_dt.push_back(ew::abi_code(t.type)), in_nd.push_back(std::to_string(t.shape.size()));
    for (auto& t : p.g.outputs()) out_dt.push_back(ew::abi_code(t.type)), out_nd.push_back(std::to_string(t.shape.size()));
    const std::string par = m_device == device_kind::cuda ? v.at("block") : (v.at("threads") == "all" ? "0" : v.at("threads"));
    src += fmt::format(
        "extern \"C\" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {{\n"
        "  using namespace kfk;\n"
        "  if (n_in != {0} || n_out != {1}) return 1;\n"
        "  static const int in_dt[] = {{{2}}}, in_nd[] = {{{3}}}, out_dt[] = {{{4}}}, out_nd[] = {{{5}}};\n"
        "  kf_view I[{0}], O[{1}];\n"
        "  for (int i = 0; i < n_in; ++i) {{\n"
        "    I[i] = kf_view_of(in[i]);\n"
        "    if (I[i].dtype != in_dt[i] || I[i].ndim != in_nd[i]) return 1;\n"
        "  }}\n"
        "  for (int i = 0; i < n_out; ++i) {{\n"
        "    O[i] = kf_view_of(out[i]);\n"
        "    if (O[i].dtype != out_dt[i] || O[i].ndim != out_nd[i]) return 1;\n"
        "  }}\n"
        "  const kf_view kf_none = kf_contiguous(KF_ACC_CODE, 0, 0);\n"
        "  const int kf_par = {6};\n"
        "  void* kf_bufs[{7}] = {{0}};\n"
        "  kf_view {8};\n"
        "  int rc = 0;\n"
        "  do {{\n{9}  }} while (0);\n"
        "  for (void* b : kf_bufs)\n    if (b) kf_free(b, stream);\n"
        "  (void)kf_none;\n"
        "  return rc;\n"
        "}}\n",
        ni, no, fmt::join(in_dt, ", "), fmt::join(in_nd, ", "), fmt::join(out_dt, ", "), fmt::join(out_nd, ", "), par,
        spec.graph.size(), [&] {
          std::vector<std::string> s;
          for (size_t i = 0; i < spec.graph.size(); ++i) s.push_back(p.result(i));
          return fmt::format("{}", fmt::join(s, ", "));
        }(),
        body);
    return src;
  }

 private:
  device_kind m_device;
  inline static const std::set<std::string> k_other_ops = {"softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm",
                                                           "topk", "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "flatten", "linear",
                                                           "matmul"};
};

}  // namespace

std::unique_ptr<family> make_generic_cpu() { return std::make_unique<generic_family>(device_kind::cpu); }
std::unique_ptr<family> make_generic_cuda() { return std::make_unique<generic_family>(device_kind::cuda); }

}  // namespace kf
