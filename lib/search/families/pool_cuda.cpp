// pool_cuda: global average pooling (adaptive_avg_pool2d to 1x1, optional flatten and casts), emitted as one
// CUDA translation unit that reads the layout at run time:
//  - NCHW: a block stages `threads / tpp` whole planes (contiguous) into shared memory with 16-byte copies,
//    then `tpp` threads reduce each plane (small planes, like ResNet's 7x7, are never split across blocks);
//  - channels_last (NHWC strides): `cl_threads` threads cover contiguous channel vectors, the rest of the block
//    splits the H*W positions, partial sums meet in shared memory.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/families/pool_cuda_body.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

int input_index(const workload_spec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].name == name) return static_cast<int>(i);
  KF_ASSERT(false, "no input {}", name);
}

class pool_cuda final : public family {
 public:
  std::string name() const override { return "pool_cuda"; }
  device_kind device() const override { return device_kind::cuda; }

  bool covers(const workload_spec& spec, std::string* why_not) const override {
    auto g = match_pool(spec, why_not);
    if (!g) return false;
    if (!cuda_emit::storable(g->in_type) || !cuda_emit::storable(g->out_type)) {
      if (why_not) *why_not = "pool_cuda handles float32/float16/bfloat16/float64 tensors only";
      return false;
    }
    return true;
  }

  std::vector<knob> knobs() const override {
    return {
        {"threads", {"64", "128", "256", "512", "1024"}, "threads per block"},
        {"vec", {"1", "2", "4", "8"}, "elements per access (16-byte accesses at 8 x 16-bit)"},
        {"tpp", {"1", "2", "4", "8", "16", "32"}, "NCHW: threads per plane (planes per block = threads / tpp)"},
        {"cl_threads", {"8", "16", "32", "64"}, "channels_last: threads across channel vectors"},
        {"small_tpp", {"0", "8", "16", "32"},
         "NCHW: threads per plane when the tpp launch would have fewer blocks than SMs (0: keep tpp)"},
        {"small_direct", {"0", "1"}, "NCHW, small_tpp launch: read planes from global memory instead of staging them"},
        {"small_cl_threads", {"0", "1", "2", "4", "8"},
         "channels_last: threads across channel vectors when the cl_threads launch would have fewer blocks than SMs "
         "(0: keep cl_threads)"},
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"threads", "256"}, {"vec", "8"},        {"tpp", "4"},
                  {"cl_threads", "32"}, {"small_tpp", "16"}, {"small_direct", "1"}, {"small_cl_threads", "2"}};
    auto g = match_pool(spec, nullptr);
    if (!g) return v;
    v["vec"] = std::to_string(std::max<int>(1, std::min<int>(8, static_cast<int>(16 / dtype_size(g->in_type)))));
    const input_spec* x = spec.find_input(g->input);
    int64_t max_planes = 0, max_hw = 0, max_n = 0;
    const bool any_gated = std::any_of(spec.cases.begin(), spec.cases.end(), [](auto& c) { return c.gate; });
    for (auto& c : spec.cases) {
      if (any_gated && !c.gate) continue;  // tune for the timed cases; the others only need to be right
      auto shape = concrete_shape(*x, c);
      if (shape.size() < 3) continue;
      const int64_t n = shape.size() == 4 ? shape[0] : 1, ch = shape[shape.size() - 3];
      const int64_t hw = shape[shape.size() - 2] * shape.back();
      max_planes = std::max(max_planes, n * ch);
      max_n = std::max(max_n, n);
      max_hw = std::max(max_hw, hw);
    }
    // Two dozen elements per thread (7x7 planes: 2 threads each); when a batch has too few planes to give
    // every SM a block, the launch switches to small_tpp threads per plane at run time.
    int tpp = 1;
    while (tpp < 32 && tpp * 32 < max_hw) tpp *= 2;
    v["tpp"] = std::to_string(tpp);
    v["threads"] = "128";
    if (x->memory_format == "channels_last") {
      // channels_last: 32 threads across channels x 16 rows of positions for batches (ResNet-50 [32, 2048, 7, 7]:
      // 7.8-8.5 us); when every timed batch is small, 8 x 32 so that more blocks share the work ([1, ...]: 5.3 us).
      v["threads"] = "512";
      if (max_n < 8) {
        v["cl_threads"] = "8";
        v["threads"] = "256";
      }
    } else if (max_planes / (256 / tpp) >= 132) {
      v["threads"] = "256";
    }
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    (void)spec;
    for (const char* k : {"tpp", "cl_threads", "small_tpp", "small_cl_threads"})
      if (knob_int(v, k) > knob_int(v, "threads")) {
        if (why_not) *why_not = fmt::format("{} must not exceed threads", k);
        return false;
      }
    return true;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_pool(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    std::string s = cuda_emit::prelude(name(), v, g->describe());
    s += "\n// ---- this variant ----\n";
    s += fmt::format("using in_t = {};\nusing out_t = {};\n", cuda_emit::c_type(g->in_type),
                     cuda_emit::c_type(g->out_type));
    s += fmt::format(
        "constexpr int NT = {};\nconstexpr int k_vec = {};\nconstexpr int k_tpp = {};\nconstexpr int k_clt = {};\n"
        "constexpr int k_small_tpp = {};\nconstexpr bool k_small_direct = {};\nconstexpr int k_small_clt = {};\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\n",
        v.at("threads"), v.at("vec"), v.at("tpp"), v.at("cl_threads"), v.at("small_tpp"), v.at("small_direct") == "1",
        v.at("small_cl_threads"),
        spec.inputs.size(), input_index(spec, g->input));
    const std::string post = cuda_emit::rounding_code(g->epilogue_casts);
    s += fmt::format("\n__device__ __forceinline__ float finalize(float x) {{\n{}  return x;\n}}\n", post);
    s += pool_cuda_body();
    s += cuda_emit::epilogue();
    return s;
  }
};

}  // namespace

std::unique_ptr<family> make_pool_cuda() { return std::make_unique<pool_cuda>(); }

}  // namespace kf
