// adaptive_pool_cuda through the whole verifier on the GPU (skipped without one): pooling to more than 1 x 1 over
// torch's windows (overlapping where the sizes do not divide), NCHW planes and channels_last with vectors of
// channels and without (odd channel counts fall back to one a thread), in float16, bfloat16 and float32, with a cast
// after. A contiguous x staged through shared memory: several whole planes a block (13 x 10 float16 planes: runs
// that start off a 16-byte boundary, ragged ends), bands of a plane's rows where a plane outgrows `stage_kb` (a
// 67 x 45 float32 plane in 4 KB: one output row a band), and the thread-an-output kernel where not even one output
// row's input rows fit (67 rows into 1) or stage_kb is 0. avg_pool2d's windows (test::avg_pool_windows: padding
// counted or not, ceil_mode, divisor_override, a stride past the window) in both layouts, staged, banded and not,
// over two sizes of x. channels_last tiled (ptile: tiles of 16, 32 and 64 positions, ragged at the plane's end and in
// the channels) and not. Without a GPU, every variant is valid and emits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

test::family_variants all_variants() {
  test::family_variants v;
  for (auto s : {test::adaptive_pool_spec(), test::adaptive_pool_spec("channels_last", dtype::bfloat16, 7, 7),
                 test::adaptive_pool_spec("channels_last", dtype::float32, 2, 9),
                 test::adaptive_pool_spec("contiguous", dtype::float32, 13, 3)}) {
    v.push_back({s, {}});
    v.push_back({s, {{"threads", "128"}, {"waves", "1"}, {"pdl", "0"}}});
    v.push_back({s, {{"cvec", "2"}, {"threads", "512"}}});
    v.push_back({s, {{"stage_kb", "0"}}});
    v.push_back({s, {{"stage_kb", "32"}, {"threads", "128"}}});
    v.push_back({s, {{"ptile", "0"}}});                         // channels_last: a thread an output
    v.push_back({s, {{"ptile", "64"}, {"threads", "128"}}});    // two channel vectors a position
    v.push_back({s, {{"ptile", "16"}, {"threads", "512"}, {"cvec", "2"}}});
  }
  // avg_pool2d's windows (padding, ceil_mode, divisors, gaps), their output following x's size from case to case.
  for (const nlohmann::json& win : test::avg_pool_windows()) {
    for (auto [format, t] : {std::pair{"contiguous", dtype::float16}, std::pair{"channels_last", dtype::bfloat16}}) {
      const workload_spec s = test::avg_pool_spec(win, format, t);
      v.push_back({s, {}});
      v.push_back({s, {{"stage_kb", "0"}, {"threads", "128"}}});
      v.push_back({s, {{"ptile", "0"}}});
    }
    workload_spec big = test::avg_pool_spec(win, "contiguous", dtype::float32);
    big.cases = {test::make_case({{"N", 2}, {"C", 3}, {"H", 67}, {"W", 45}}, true), test::make_case({{"N", 1}, {"C", 1}, {"H", 5}, {"W", 4}}, false)};
    v.push_back({big, {{"stage_kb", "4"}}});  // bands of a plane's rows
  }
  // max_pool2d's windows: contiguous (staged) and channels_last (tiled and not).
  for (const nlohmann::json& win : test::max_pool_windows()) {
    v.push_back({test::max_pool_spec(win, "contiguous", dtype::float16), {}});
    v.push_back({test::max_pool_spec(win, "channels_last", dtype::bfloat16), {}});
    v.push_back({test::max_pool_spec(win, "channels_last", dtype::float32), {{"ptile", "0"}}});
  }
  for (const char* out : {"[6, 5]", "[1, 3]"}) {
    const workload_spec big = test::parse(fmt::format(R"(version: 1
name: big-plane-avgpool
inputs:
  x: {{shape: [N, C, 67, 45], dtype: float32}}
graph:
  - adaptive_avg_pool2d: {{input: x, output_size: {}}}
cases: [{{N: 2, C: 7, gate: true}}, {{N: 1, C: 1}}]
)",
                                                  out));
    v.push_back({big, {{"stage_kb", "4"}}});
    v.push_back({big, {{"stage_kb", "16"}, {"threads", "512"}}});
  }
  return v;
}

TEST(adaptive_pool_cuda_verify, every_layout_and_window) {
  KF_REQUIRE_GPU();
  test::expect_all_pass("adaptive_pool_cuda", device_kind::cuda, all_variants(), 3);
}

TEST(adaptive_pool_cuda_verify, every_variant_is_valid) {
  test::expect_all_valid("adaptive_pool_cuda", device_kind::cuda, all_variants());
}

// The staged launch's plan, on the host (no GPU: apool_stage_plan is host code): for planes of 1 x 1 to 300 x 300
// pooled to 6 x 5 and to 1 x 3, at every stage size, a plan either stages whole planes (at least one a block, as
// many as fit with a 16-byte vector's slack) or bands of output rows that cover every
// row once, each band's input rows (torch's windows) fitting the stage; or it declines, and then not even one
// output row's input rows fit. A plan whose copy overran its shared memory would corrupt the block's neighbours.
// And the prelude's fast_div, which the launch divides indices with, gives n / d for every n below 2^31.
TEST(adaptive_pool_cuda_verify, a_staged_plan_fits_its_shared_memory_and_covers_every_output) {
  if (std::string(KFORGE_NVCC).empty()) GTEST_SKIP() << "built without CUDA: no nvcc to compile the check";
  const family* f = find_family("adaptive_pool_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  temp_dir dir("kf-apool-plan");
  std::vector<std::string> outs;
  for (const char* op : {"adaptive_avg_pool2d: {input: x, output_size: [6, 5]}", "adaptive_avg_pool2d: {input: x, output_size: [1, 3]}",
                         "avg_pool2d: {input: x, kernel_size: 3, stride: 2, padding: 1, ceil_mode: true}",
                         "avg_pool2d: {input: x, kernel_size: [5, 2], stride: [1, 3]}"})
    for (const char* kb : {"4", "8", "32"}) {
      const workload_spec spec = test::parse(fmt::format(R"(version: 1
name: plan-avgpool
inputs:
  x: {{shape: [N, 3, 9, 9], dtype: float16}}
graph:
  - {}
cases: [{{N: 2, gate: true}}]
)",
                                                         op));
      knob_values v = f->default_variant(spec);
      v["stage_kb"] = kb;
      const std::string name = fmt::format("plan_{}_{}", outs.size() / 3, kb);
      write_file_atomic(dir.path() / (name + ".cu"), f->emit(spec, v) + R"(
#include <algorithm>
#include <cstdio>
// The windows as torch defines them (not the kernel's helpers): adaptive, or avg_pool2d's clipped to x.
static int64_t lo(int64_t i, int64_t len, int64_t n) {
  if (!kfk::k_fixed) return i * len / n;
  const int64_t start = i * kfk::k_sh - kfk::k_ph;
  return start > 0 ? start : 0;
}
static int64_t hi(int64_t i, int64_t len, int64_t n) {
  if (!kfk::k_fixed) return ((i + 1) * len + n - 1) / n;
  return std::min<int64_t>(i * kfk::k_sh - kfk::k_ph + kfk::k_kh, len);
}
int main() {
  using namespace kfk;
  const int64_t elems = (int64_t)k_stage_kb * 1024 / sizeof(in_t), E = 16 / sizeof(in_t);
  int bad = 0, staged = 0, banded = 0, declined = 0;
  for (int64_t h = 1; h <= 300; h += (h < 20 ? 1 : 37))
    for (int64_t w = 1; w <= 300; w += (w < 20 ? 1 : 41))
      for (int64_t planes : {1, 7, 1000, 100000}) {
        apool_args a = {};
        a.h = h, a.w = w, a.planes = planes;
        a.oh = apool_out_len<0>(h), a.ow = apool_out_len<1>(w);
        if (a.oh < 1 || a.ow < 1) continue;  // the launch declines (torch refuses it)
        const int64_t oh = a.oh;
        if (!apool_stage_plan(a, 132)) {
          ++declined;
          // Declined: neither a whole plane nor the most rows one output row's window can span fit (adaptive:
          // ceil(h / oh) + 1; avg_pool2d: the kernel's height).
          const int64_t one_row = k_fixed ? std::min<int64_t>(k_kh, h) : (h + oh - 1) / oh + 1;
          if (h * w + E <= elems || (oh > 1 && one_row * w + E <= elems))
            ++bad, printf("declined h=%ld w=%ld\n", (long)h, (long)w);
          continue;
        }
        if (a.ob == oh) {
          ++staged;
          if (a.pp < 1 || a.pp * h * w + E - 1 > elems)
            ++bad, printf("planes h=%ld w=%ld pp=%d\n", (long)h, (long)w, a.pp);
          continue;
        }
        ++banded;
        if (a.ob < 1 || a.bands * a.ob < oh || (a.bands - 1) * a.ob >= oh) ++bad, printf("bands h=%ld ob=%d\n", (long)h, a.ob);
        for (int64_t r0 = 0; r0 < oh; r0 += a.ob) {
          const int64_t r1 = std::min<int64_t>(r0 + a.ob, oh);
          if ((hi(r1 - 1, h, oh) - lo(r0, h, oh)) * w + E - 1 > elems) ++bad, printf("band h=%ld w=%ld r0=%ld\n", (long)h, (long)w, (long)r0);
        }
      }
  // The prelude's fast_div, as the launch makes them: n / d for every n below 2^31 (edges, multiples and a spread of
  // others).
  unsigned long long lcg = 12345;
  for (long long d = 1; d <= 2147483647LL; d = d < 4096 ? d + 1 : d * 3 + 1) {
    const fast_div f = make_fast_div((uint32_t)d);
    long long ns[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 7 * d + 3, (1LL << 30) - 1, 1LL << 30, 2147483646, 2147483647};
    for (long long n : ns)
      if (n >= 0 && n <= 2147483647 && apool_div(f, (int)n) != n / d) ++bad, printf("div %lld / %lld\n", n, d);
    for (int k = 0; k < 64; ++k) {
      lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
      const long long n = (long long)(lcg >> 33);  // below 2^31
      if (apool_div(f, (int)n) != n / d) ++bad, printf("div %lld / %lld\n", n, d);
    }
  }
  printf("staged %d banded %d declined %d bad %d\n", staged, banded, declined, bad);
  return bad != 0;
}
)");
      outs.push_back(name);
    }
  int banded = 0, declined = 0;
  for (const std::string& name : outs) {
    const std::string exe = (dir.path() / name).string();
    auto build = run_process({KFORGE_NVCC, "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
                              "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", exe, exe + ".cu"});
    ASSERT_TRUE(build.ok()) << build.err.substr(0, 4000);
    auto r = run_process({exe});
    EXPECT_TRUE(r.ok()) << name << ": " << r.out.substr(0, 4000) << r.err;
    int s = 0, b = 0, d = 0, bad = 0;
    ASSERT_EQ(std::sscanf(r.out.substr(r.out.rfind("staged")).c_str(), "staged %d banded %d declined %d bad %d", &s,
                          &b, &d, &bad),
              4)
        << r.out;
    EXPECT_GT(s, 0) << name;
    banded += b, declined += d;
  }
  EXPECT_GT(banded, 0);  // big planes at 4 KB were cut into bands
  EXPECT_GT(declined, 0);  // and a 1 x 3 pooling of 300 rows declined
}

}  // namespace
}  // namespace kf
