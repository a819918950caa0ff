// pool_cuda: global average pooling (adaptive_avg_pool2d to 1x1, optional flatten and casts), emitted as one
// CUDA translation unit that reads the layout at run time:
//  - NCHW: a block stages `threads / tpp` whole planes (contiguous) into shared memory with 16-byte copies,
//    then `tpp` threads reduce each plane (small planes, like ResNet's 7x7, are never split across blocks);
//  - channels_last (NHWC strides): `cl_threads` threads cover contiguous channel vectors, the rest of the block
//    splits the H*W positions, partial sums meet in shared memory; or, for small batches, a warp owns a 16-byte
//    vector of channels and its lanes the positions, reduced by a shuffle reduce-scatter (small_cl_warp), or a
//    thread owns a few channels of one image and adds up all of their positions itself (small_cl_loop).
// When a batch is too small for the knobs' launch to give every SM a block, a second launch takes over at run time
// (the small_* knobs): its own block size, threads per plane or across channels, and NCHW read mode.
// This file emits the variant's constants, types and casts; the fixed code is pool_cuda.cuh.
#include <algorithm>

#include <fmt/format.h>

#include "search/families/cuda_emit.h"
#include "search/family.h"
#include "search/graph_match.h"

namespace kf {
namespace {

constexpr int k_flat_vectors = 4;         // small_direct=2: most 16-byte vectors a thread loads (k_flat_k)

// Threads per block of the small-batch launches.
int small_block(const knob_values& v) {
  const int s = knob_int(v, "small_threads");
  return s > 0 ? s : knob_int(v, "threads");
}

// Whether some case's planes, `planes` to a block of `threads`, make ranges that flat reads take (a multiple of
// 16 bytes, at most k_flat_vectors a thread); true when the spec gives no concrete shape to tell.
bool flat_fits_some_case(const workload_spec& spec, int planes, int threads) {
  auto g = match_pool(spec, nullptr);
  if (!g || spec.cases.empty()) return true;
  const input_spec* x = spec.find_input(g->input);
  for (auto& c : spec.cases) {
    auto shape = concrete_shape(*x, c);
    if (shape.size() < 3) return true;
    const int64_t hw = shape[shape.size() - 2] * shape.back();
    const int64_t bytes = planes * hw * static_cast<int64_t>(dtype_size(g->in_type));
    if (bytes % 16 == 0 && bytes <= int64_t{16} * k_flat_vectors * threads) return true;
  }
  return false;
}

// small_cl_threads for a channels_last batch too small for the main launch, in blocks of k_small_cl_block threads.
// Such a batch is latency-bound (batch 1 of ResNet-50: 200 KB, in L2 when hot): what counts is one block's chain
// of load, shuffles, shared memory and store. So every thread makes one 16-byte load (a row of threads per
// position: k_small_cl_block / clt >= hw), and as many threads across channels as that leaves, which shortens the
// shuffle tree and keeps 32-byte sectors whole. [1, 2048, 7, 7] fp16 hot in the harness on an H200 (three runs):
// 4 x 64 rows (64 blocks) 1.84-1.89 us; 2 x 128, 1.95-1.98; 2 x 64, 1.96-2.03; 1 x 64 (256 blocks, one per SM and
// more), 2.00-2.06; 8 x 64 (512 threads), 1.98-2.01; 8 x 32 (two loads a thread), 1.99-2.02.
constexpr int k_small_cl_block = 256;
int small_cl_threads_for(int64_t hw) {
  for (int clt : {8, 4, 2})
    if (k_small_cl_block / clt >= hw) return clt;
  return 1;
}

class pool_cuda final : public family {
 public:
  std::string name() const override { return "pool_cuda"; }
  device_kind device() const override { return device_kind::cuda; }
  int version() const override { return 1; }

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
        {"small_tpp", {"0", "1", "2", "4", "8", "16", "32"},
         "NCHW: threads per plane when the tpp launch would have fewer blocks than SMs (0: keep tpp)"},
        {"small_direct", {"0", "1", "2"},
         "NCHW, small_tpp launch: 0 stages planes in shared memory, 1 reads them from global memory, 2 reads the "
         "block's small_threads / small_tpp planes flat, at most four 16-byte vectors a thread of one contiguous "
         "range (as 1 where the range's size or address is not a multiple of 16 bytes, or it is longer)"},
        {"small_cl_threads", {"0", "1", "2", "4", "8"},
         "channels_last: threads across channel vectors when the cl_threads launch would have fewer blocks than SMs "
         "(0: keep cl_threads)"},
        {"small_threads", {"0", "32", "64", "128", "256"},
         "threads per block of the small-batch launches (0: threads; 32: one warp a block, as inductor's batch-1 "
         "reductions)"},
        {"small_cl_loop", {"0", "1", "2", "4", "8"},
         "channels_last, small-batch launch: 0 splits positions across threads (small_cl_threads); N > 0 gives each "
         "thread N channels of one image and all of their positions (loads back to back, no shuffles, no barrier)"},
        {"small_cl_warp", {"0", "1", "2", "4"},
         "channels_last, small-batch launch: N > 0 gives each warp one 16-byte vector of channels of one image, its "
         "lanes the positions, then a shuffle reduce-scatter (no shared memory, no barrier), N warps a block (ahead "
         "of small_cl_loop; falls back when C is not a multiple of 16 bytes)"},
        {"pdl", {"0", "1"},
         "1: launched with programmatic dependent launch, the blocks scheduled while the previous kernel on the "
         "stream finishes and waiting (griddepcontrol.wait) for its results before touching memory",
         "0"},
    };
  }

  knob_values default_variant(const workload_spec& spec) const override {
    knob_values v{{"threads", "256"},        {"vec", "8"},         {"tpp", "4"},
                  {"cl_threads", "32"},      {"small_tpp", "8"},   {"small_direct", "0"},
                  {"small_cl_threads", "2"}, {"small_threads", "128"}, {"small_cl_loop", "0"},
                  {"small_cl_warp", "0"},    {"pdl", "1"}};
    // pdl=1: on an H200 (harness, [N, 2048, 7, 7] fp16, hot in a CUDA graph, the stored winners' knobs with and
    // without it) N = 1 1.56 -> 1.33 us NCHW and 1.79 -> 1.52 channels_last, N = 32 3.05 -> 2.77 and 2.67 -> 2.36.
    auto g = match_pool(spec, nullptr);
    if (!g) return v;
    v["vec"] = std::to_string(std::max<int>(1, std::min<int>(8, static_cast<int>(16 / dtype_size(g->in_type)))));
    const input_spec* x = spec.find_input(g->input);
    int64_t max_planes = 0, max_hw = 0, max_n = 0;
    int64_t small_hw = 0, small_n = 0;  // the timed case with the fewest images
    for (auto& shape : tuning_shapes(spec, *x)) {
      if (shape.size() < 3) continue;
      const int64_t n = shape.size() == 4 ? shape[0] : 1, ch = shape[shape.size() - 3];
      const int64_t hw = shape[shape.size() - 2] * shape.back();
      max_planes = std::max(max_planes, n * ch);
      max_n = std::max(max_n, n);
      max_hw = std::max(max_hw, hw);
      if (small_n == 0 || n < small_n) small_n = n, small_hw = hw;
    }
    // Two dozen elements per thread (7x7 planes: 2 threads each); when a batch has too few planes to give
    // every SM a block, the launch switches to small_tpp threads per plane at run time, in blocks of 128 that stage
    // 16 planes with 16-byte copies ([1, 2048, 7, 7] fp16 hot in the harness on an H200, three runs, round robin:
    // 1.70-1.77 us; reading from global memory with 16 threads a plane, 1.83-1.86; flat reads, 1.80-1.85; 256-thread
    // blocks staging 32 planes, 1.72-1.75).
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
      if (small_n > 0) {
        v["small_cl_threads"] = std::to_string(small_cl_threads_for(small_hw));
        v["small_threads"] = std::to_string(k_small_cl_block);
      }
    } else if (max_planes / (256 / tpp) >= cuda_emit::k_reference_sms) {
      v["threads"] = "256";
    }
    return v;
  }

  bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const override {
    if (!knobs_in_range(*this, v, why_not)) return false;
    for (const char* k : {"tpp", "cl_threads"})
      if (knob_int(v, k) > knob_int(v, "threads")) {
        if (why_not) *why_not = fmt::format("{} must not exceed threads", k);
        return false;
      }
    const int small_bt = small_block(v);
    for (const char* k : {"small_tpp", "small_cl_threads"})
      if (knob_int(v, k) > small_bt) {
        if (why_not) *why_not = fmt::format("{} must not exceed the small launch's block ({} threads)", k, small_bt);
        return false;
      }
    if (knob_int(v, "small_cl_warp") > 0 && knob_int(v, "small_cl_loop") > 0) {
      if (why_not) *why_not = "small_cl_warp and small_cl_loop are two kernels for the same launch: set one";
      return false;
    }
    // Flat reads take ranges of whole planes that are a multiple of 16 bytes and at most k_flat_vectors a thread;
    // where no case has them the variant is small_direct=1 under another name.
    const int small_tpp = knob_int(v, "small_tpp");
    if (v.at("small_direct") == "2" && small_tpp > 0 && !flat_fits_some_case(spec, small_bt / small_tpp, small_bt)) {
      if (why_not)
        *why_not = fmt::format(
            "small_direct=2 needs (small block / small_tpp) planes of H*W elements to make a multiple of 16 bytes, "
            "at most {} a thread, in some case", 16 * k_flat_vectors);
      return false;
    }
    return true;
  }

  // The other layout's knobs are fixed (that path still runs, untuned, on an input of the other layout).
  knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const override {
    knob_values k = v;
    auto g = match_pool(spec, nullptr);
    if (g && spec.find_input(g->input)->memory_format == "channels_last")
      k["tpp"] = "2", k["small_tpp"] = "8", k["small_direct"] = "0";
    else
      k["cl_threads"] = "32", k["small_cl_threads"] = "2", k["small_cl_loop"] = "0", k["small_cl_warp"] = "0";
    return k;
  }

  std::string emit(const workload_spec& spec, const knob_values& v) const override {
    std::string why;
    auto g = match_pool(spec, &why);
    KF_ASSERT(g.has_value(), "emit called for a spec the family does not cover: {}", why);
    const knob_values used = canonical_knobs(spec, v);
    std::string s = fmt::format("using in_t = {};\nusing out_t = {};\n", cuda_emit::c_type(g->in_type),
                                cuda_emit::c_type(g->out_type));
    s += fmt::format(
        "constexpr int k_threads = {};\nconstexpr int k_vec = {};\nconstexpr int k_tpp = {};\nconstexpr int k_clt = {};\n"
        "constexpr int k_small_threads = {};\nconstexpr int k_small_tpp = {};\nconstexpr int k_small_direct = {};\n"
        "constexpr int k_small_clt = {};\nconstexpr int k_small_cl_loop = {};\nconstexpr int k_small_cl_warp = {};\n"
        "constexpr int k_flat_k = {};\nconstexpr bool k_pdl = {};\n"
        "constexpr int k_n_inputs = {};\nconstexpr int k_x_input = {};\n",
        used.at("threads"), used.at("vec"), used.at("tpp"), used.at("cl_threads"), small_block(used), used.at("small_tpp"),
        used.at("small_direct"), used.at("small_cl_threads"), used.at("small_cl_loop"), used.at("small_cl_warp"),
        k_flat_vectors, used.at("pdl") == "1", spec.inputs.size(), input_index(spec, g->input));
    const std::string post = cuda_emit::rounding_code(g->epilogue_casts);
    s += fmt::format("\n__device__ __forceinline__ float finalize(float x) {{\n{}  return x;\n}}\n", post);
    return cuda_emit::prelude(*this, spec, used, g->describe()) + cuda_emit::variant(s) +
           cuda_emit::fixed_file("search/families/pool_cuda.cuh") + cuda_emit::epilogue();
  }
};

}  // namespace

std::unique_ptr<family> make_pool_cuda() { return std::make_unique<pool_cuda>(); }

}  // namespace kf
