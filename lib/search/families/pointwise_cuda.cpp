// pointwise_cuda: any chain of elementwise ops (unary, binary with broadcast operands, scale, softcap, masks, casts)
// as one pass over the output: one read of each operand element, one write of each result, in float. The knobs
// shape the memory access: elements per vector access (up to 16 bytes each; 32-byte vectors are two), vectors in
// flight per thread, block size, one-shot versus persistent grids, streaming stores, and the math (libm or the
// multi-function unit). The fixed code is pointwise_cuda.cuh; the statements come from elementwise_emit.h.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/cuda_emit.h"
#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "spec/ops.h"

namespace kf {
namespace {

using chain = pointwise_graph;

std::optional<chain> match_chain(const workload_spec& spec, std::string* why_not) { return match_pointwise(spec, why_not); }

// __launch_bounds__'s minimum blocks an SM for the occupancy knob: the registers then cap at 65536 / (2048 x share).
int min_blocks(const knob_values& v) {
  const std::string& o = v.at("occupancy");
  const int threads = o == "full" ? 2048 : o == "half" ? 1024 : 0;
  return std::max(1, threads / knob_int(v, "block"));
}

class pointwise_cuda final : public family {
 public:
  std::string name() const override { return "pointwise_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  // 2: the pdl knob; 3: LOADS steps load unguarded; 4: spread, occupancy; 5: every operand's loads issued before
  // any conversion (pointwise_cuda.cuh)
  int version() const override { return 5; }
  bool covers(const workload_spec& spec, std::string* why_not) const override { return match_chain(spec, why_not).has_value(); }
  std::vector<knob> knobs() const override {
    return {
        {"vec", {"1", "2", "4", "8", "16"}, "elements per vector access (16 bytes at most per load; 32 bytes as two)"},
        {"loads", {"1", "2", "4"}, "independent vectors in flight per thread (all loaded before any math)"},
        {"block", {"128", "256", "512", "1024"}, "threads per block"},
        {"waves", {"0", "1", "2", "4", "8"}, "0: one-shot grid (one step per thread); k: persistent, k waves of resident blocks"},
        {"store", {"default", "streaming"}, "streaming: evict-first stores (__stcs)"},
        {"math", {"precise", "fast"}, "precise: libm exp/tanh; fast: ex2/rcp.approx (verify decides if that is enough)"},
        {"pdl", {"0", "1"}, "programmatic dependent launch: the launch overlaps the previous kernel's tail", "0"},
        {"spread", {"0", "1"}, "1: a one-shot grid of fewer blocks than SMs launches narrower blocks (down to a warp) to cover them", "0"},
        {"occupancy", {"any", "half", "full"}, "registers capped (__launch_bounds__ minimum blocks) so that half or all of an SM's 2048 threads fit", "any"},
    };
  }
  knob_values default_variant(const workload_spec& spec) const override {
    auto c = match_chain(spec, nullptr);
    const size_t widest = c ? c->widest : 4;
    // Two 16-byte accesses per operand and thread, small blocks, one-shot grids: what won the first searches on an
    // H200 (SwiGLU, GeGLU, GELU); the multi-function unit's math where the result is 16-bit (verify checks it).
    const bool half_out = c && (c->out == dtype::float16 || c->out == dtype::bfloat16);
    // spread: on an H200 a 14336-wide SwiGLU (decode) ran on 7 blocks of 128 threads, 1.63 us against Inductor's
    // 112 blocks, 1.37 us (ncu: 2700 cycles an SM against 1350).
    return {{"vec", std::to_string(32 / widest)}, {"loads", "1"}, {"block", "128"}, {"waves", "0"},
            {"store", "default"}, {"math", half_out ? "fast" : "precise"}, {"pdl", "1"}, {"spread", "1"},
            {"occupancy", "any"}};
  }
  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    auto c = match_chain(spec, why_not);
    if (!c) return false;
    if (knob_int(v, "vec") * c->widest > 32) {
      if (why_not) *why_not = fmt::format("vec={} of {}-byte values is more than 32 bytes", v.at("vec"), c->widest);
      return false;
    }
    return true;
  }
  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    const chain c = *match_chain(spec, nullptr);
    std::vector<std::string> ops;
    for (auto& call : spec.graph) ops.push_back(call.op);
    std::string src = cuda_emit::prelude(*this, spec, v, fmt::format("{} (one pass)", fmt::join(ops, " -> ")));
    const int vec = knob_int(v, "vec");
    std::string vars = fmt::format("using out_t = {};\n", cuda_emit::c_type(c.out));
    std::vector<std::string> idx, codes, aligns;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      vars += fmt::format("using t{} = {};\n", k, cuda_emit::c_type(c.types[k]));
      idx.push_back(std::to_string(c.inputs[k]));
      codes.push_back(ew::abi_code(c.types[k]));
      aligns.push_back(std::to_string(std::min<size_t>(16, vec * dtype_size(c.types[k]))));
    }
    vars += fmt::format(
        "constexpr int V = {};\nconstexpr int LOADS = {};\nconstexpr int BLOCK = {};\nconstexpr int WAVES = {};\n"
        "constexpr bool STREAM = {};\nconstexpr bool PDL = {};\nconstexpr bool SPREAD = {};\n#define KF_PW_MINB {}\n"
        "constexpr int NOPND = {};\nconstexpr int KF_N_INPUTS = {};\nconstexpr int KF_OUT_RANK = {};\n"
        "constexpr int kf_operand_input[NOPND] = {{{}}};\nconstexpr int kf_operand_dtype[NOPND] = {{{}}};\n"
        "constexpr int kf_operand_align[NOPND] = {{{}}};\n\n",
        vec, v.at("loads"), v.at("block"), v.at("waves"), v.at("store") == "streaming" ? "true" : "false",
        v.at("pdl") == "1" ? "true" : "false", v.at("spread") == "1" ? "true" : "false", min_blocks(v), c.inputs.size(),
        spec.inputs.size(), c.out_rank, fmt::join(idx, ", "), fmt::join(codes, ", "), fmt::join(aligns, ", "));
    vars += cuda_emit::math_functions(v.at("math") == "fast");
    std::string raw;
    for (size_t k = 0; k < c.inputs.size(); ++k) raw += fmt::format("  packed<t{0}, V> r{0};\n", k);
    vars += fmt::format(
        "\nstruct pw_args;\nstruct pw_raw {{\n{}}};\n"
        "__device__ __forceinline__ void kf_vec_load(const pw_args& a, int64_t i, pw_raw& r);\n"
        "__device__ __forceinline__ void kf_vec_math(const pw_raw& r, float* y);\n"
        "__device__ __forceinline__ float kf_one(const pw_args& a, int64_t i);\n",
        raw);
    src += cuda_emit::variant(vars);
    src += cuda_emit::fixed_file("search/families/pointwise_cuda.cuh");
    // The chain's statements twice: on element e of the loaded vectors, and on element i read on its own.
    const std::string body =
        ew::chain_statements(spec, c.step_types, [](size_t k) { return fmt::format("x{}[e]", k); }, "    ");
    const std::string scalar = ew::chain_statements(
        spec, c.step_types, [](size_t k) { return fmt::format("pw_load_one<t{0}>(a.o[{0}], a, i)", k); }, "    ");
    // Every operand's address, then every load, then (in kf_vec_math) the conversions: nothing between two loads
    // waits for the first one's data.
    std::string ptrs, loads, converts;
    for (size_t j = 0; j < c.inputs.size(); ++j) {
      ptrs += fmt::format("  const t{0}* p{0} = pw_vec_ptr<t{0}>(a.o[{0}], i);\n", j);
      loads += fmt::format("  r.r{0}.load(p{0});\n", j);
      converts += fmt::format("  float x{0}[V];\n  r.r{0}.to_float(x{0});\n", j);
    }
    src += cuda_emit::variant(fmt::format(
        "__device__ __forceinline__ void kf_vec_load(const pw_args& a, int64_t i, pw_raw& r) {{\n{}{}}}\n"
        "__device__ __forceinline__ void kf_vec_math(const pw_raw& r, float* y) {{\n{}"
        "#pragma unroll\n  for (int e = 0; e < V; ++e) {{\n    float v = x0[e];\n{}    y[e] = v;\n  }}\n}}\n"
        "__device__ __forceinline__ float kf_one(const pw_args& a, int64_t i) {{\n  float v = pw_load_one<t0>(a.o[0], a, i);\n{}"
        "  return v;\n}}\n",
        ptrs, loads, converts, body, scalar));
    src += cuda_emit::epilogue();
    return src;
  }
};

}  // namespace

std::unique_ptr<family> make_pointwise_cuda() { return std::make_unique<pointwise_cuda>(); }

}  // namespace kf
