// The cpu families' emitted kernels, compiled and run: results against a double-precision reference written
// here (independent of the emitters' own dtype helpers: _Float16 and bit shifts), for NCHW and channels_last, and for
// row_softmax_cpu's rows split across a team of threads (set through the kernel's own OpenMP runtime).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/kf_abi.h"
#include "search/family.h"
#include "search_test_specs.h"
#include "spec/spec_parse.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

// A host tensor of any float storage type, read and written as double.
struct host_tensor {
  dtype type;
  std::vector<int64_t> shape, stride;
  std::vector<uint8_t> bytes;
  host_tensor(dtype t, std::vector<int64_t> s, bool channels_last = false) : type(t), shape(std::move(s)) {
    stride.assign(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) stride[i] = stride[i + 1] * shape[i + 1];
    if (channels_last && shape.size() == 4) stride = {shape[1] * shape[2] * shape[3], 1, shape[3] * shape[1], shape[1]};
    bytes.assign(static_cast<size_t>(numel() * dtype_size(t)), 0xff);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  double get(int64_t off) const {
    const uint8_t* p = bytes.data() + off * dtype_size(type);
    if (type == dtype::float32) { float f; std::memcpy(&f, p, 4); return f; }
    if (type == dtype::float16) { _Float16 h; std::memcpy(&h, p, 2); return static_cast<double>(h); }
    uint32_t u = 0;
    std::memcpy(reinterpret_cast<uint8_t*>(&u) + 2, p, 2);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  void set(int64_t off, double v) {
    uint8_t* p = bytes.data() + off * dtype_size(type);
    if (type == dtype::float32) { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    if (type == dtype::float16) { _Float16 h = static_cast<_Float16>(v); std::memcpy(p, &h, 2); return; }
    float f = static_cast<float>(v);  // bfloat16 by truncation: any bf16 value is a fine input
    uint32_t u;
    std::memcpy(&u, &f, 4);
    std::memcpy(p, reinterpret_cast<uint8_t*>(&u) + 2, 2);
  }
  // offset of a row-major linear index
  int64_t off(int64_t i) const {
    int64_t o = 0;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      o += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return o;
  }
  double at(int64_t i) const { return get(off(i)); }
  kf_tensor abi() {
    kf_tensor t{};
    t.data = bytes.data();
    t.dtype = static_cast<int32_t>(type);
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
    return t;
  }
};

void fill(host_tensor& t, uint32_t seed, double scale = 1.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(t.off(i), n(g));
}

// Compiles the family's default-variant source (plus the given knob changes, then `extra` appended) and loads it;
// null (and a failure) when it does not compile. Not dlclose'd: the OpenMP runtime it pulled in may still have
// threads parked. `opt`: the optimization flags (kforge's own compile adds -march=native to -O3).
void* load_family(const std::string& fam, const workload_spec& spec, const knob_values& changes,
                  const std::string& extra = "", const std::vector<std::string>& opt = {"-O1"}) {
  auto* f = find_family(fam, device_kind::cpu);
  auto v = f->default_variant(spec);
  for (auto& [k, x] : changes) v[k] = x;
  EXPECT_TRUE(f->valid(v, spec, nullptr));
  temp_dir dir("kf-run");
  write_file_atomic(dir.path() / "k.cpp", f->emit(spec, v) + extra);
  auto so = (dir.path() / "k.so").string();
  std::vector<std::string> cmd = {KFORGE_CXX_COMPILER, "-std=c++17"};
  cmd.insert(cmd.end(), opt.begin(), opt.end());
  for (std::string a : {"-fopenmp", "-fPIC", "-shared", "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o"}) cmd.push_back(a);
  cmd.push_back(so);
  cmd.push_back((dir.path() / "k.cpp").string());
  auto r = run_process(cmd);
  EXPECT_TRUE(r.ok()) << r.err.substr(0, 2000);
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << dlerror();
  return h;
}

// Compiles the family's default-variant source (plus the given knob changes) and runs it; threads > 0: with that
// many OpenMP threads (omp_set_num_threads of the runtime the kernel loaded, restored after).
int run_family(const std::string& fam, const workload_spec& spec, const knob_values& changes,
               std::vector<host_tensor*> in, std::vector<host_tensor*> out, int threads = 0,
               const std::vector<std::string>& opt = {"-O1"}) {
  void* h = load_family(fam, spec, changes, "", opt);
  if (!h) return -1;
  auto fn = reinterpret_cast<kf_launch_fn>(dlsym(h, "kf_launch"));
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
  auto max_threads = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
  EXPECT_TRUE(set_threads && max_threads) << "the kernel does not link an OpenMP runtime";
  const int before = max_threads ? max_threads() : 0;
  if (threads > 0 && set_threads) set_threads(threads);
  std::vector<kf_tensor> ti, to;
  for (auto* t : in) ti.push_back(t->abi());
  for (auto* t : out) to.push_back(t->abi());
  int rc = fn(ti.data(), static_cast<int>(ti.size()), to.data(), static_cast<int>(to.size()), nullptr);
  if (threads > 0 && set_threads) set_threads(before);
  return rc;
}

TEST(families_cpu_run, softmax_with_mask_softcap_scale_matches_reference) {
  for (auto passes : {"two", "online"}) {
    // float32 in: eager rounds a bf16 softcap's result to bf16, which this reference does not model
    auto spec = test::softmax_spec(true, false, 0, dtype::float32);
    const int64_t B = 2, H = 3, S = 37;
    host_tensor x(dtype::float32, {B, H, S, S}), m(dtype::float32, {S, S}), y(dtype::bfloat16, {B, H, S, S});
    fill(x, 1, 40.0);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) m.set(i * S + j, j > i ? -INFINITY : 0.0);
    ASSERT_EQ(run_family("row_softmax_cpu", spec, {{"passes", passes}, {"cache_row", "0"}, {"math", std::string(passes) == "online" ? "poly" : "libm"}}, {&x, &m}, {&y}), 0);
    for (int64_t r = 0; r < B * H * S; ++r) {
      int64_t i = r % S;
      std::vector<double> z(S);
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < S; ++j) {
        z[j] = (std::tanh(x.at(r * S + j) / 50.0) * 50.0 + m.at(i * S + j)) * 0.5;
        mx = std::max(mx, z[j]);
      }
      for (auto v : z) s += std::exp(v - mx);
      for (int64_t j = 0; j < S; ++j) {
        double want = std::exp(z[j] - mx) / s;
        ASSERT_NEAR(y.at(r * S + j), want, 1e-3 + 1e-2 * want) << passes << " row " << r << " col " << j;
      }
    }
  }
}

TEST(families_cpu_run, log_softmax_and_topk_match_reference) {
  auto spec = test::softmax_spec(false, false, 3, dtype::float16);
  const int64_t B = 1, H = 2, S = 20;
  host_tensor x(dtype::float16, {B, H, S, S}), v(dtype::bfloat16, {B, H, S, 3}), idx(dtype::int64, {B, H, S, 3});
  fill(x, 2, 3.0);
  ASSERT_EQ(run_family("row_softmax_cpu", spec, {{"vector_width", "4"}}, {&x}, {&v, &idx}), 0);
  const int64_t* ip = reinterpret_cast<const int64_t*>(idx.bytes.data());
  for (int64_t r = 0; r < B * H * S; ++r) {
    std::vector<double> z(S);
    for (int64_t j = 0; j < S; ++j) z[j] = std::tanh(x.at(r * S + j) / 50.0) * 50.0 * 0.5;
    std::vector<int64_t> order(S);
    for (int64_t j = 0; j < S; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return z[a] > z[b]; });
    double mx = z[order[0]], s = 0;
    for (auto q : z) s += std::exp(q - mx);
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(ip[r * 3 + q], order[q]) << "row " << r;
      EXPECT_NEAR(v.at(r * 3 + q), std::exp(z[order[q]] - mx) / s, 1e-2);
    }
  }
  // a layout it does not handle is refused, not computed wrongly
  host_tensor xt = x;
  std::swap(xt.stride[2], xt.stride[3]);
  EXPECT_NE(run_family("row_softmax_cpu", spec, {}, {&xt}, {&v, &idx}), 0);
}

// x [T, V] (dtype in) [+ mask [1, V] of the same dtype] -> (log_)softmax(dtype=float32) [-> topk(k)]: a vocabulary's
// logits; cases (T, V), gated.
workload_spec vocab_spec(dtype in, bool mask, bool log, int64_t topk, std::vector<std::pair<int64_t, int64_t>> cases) {
  using namespace test;
  workload_spec s;
  s.name = "test-vocab";
  s.inputs.push_back(tensor_input("x", {sym("T"), sym("V")}, in));
  if (mask) {
    s.inputs.push_back(tensor_input("m", {lit(1), sym("V")}, in));
    s.graph.push_back({"add_mask", {{"input", "x"}, {"mask", "m"}}, {}});
  }
  nlohmann::json args = {{"dim", -1}, {"dtype", "float32"}};
  if (!mask) args["input"] = "x";
  s.graph.push_back({log ? "log_softmax" : "softmax", args, {}});
  if (topk) s.graph.push_back({"topk", {{"k", topk}, {"dim", -1}}, {}});
  for (auto [t, v] : cases) s.cases.push_back(make_case({{"T", t}, {"V", v}}, true));
  s.search.families = {"row_softmax"};
  return s;
}

// One launch of row_softmax_cpu on [T, V] with `threads` OpenMP threads and the default's knobs changed.
struct split_run {
  int64_t T, V;
  int threads;
  knob_values knobs;
  bool masked_half = false;  // the mask's first half -inf: the first threads' segments hold only -inf
};

std::string label(const split_run& r) {
  std::string s = fmt::format("T={} V={} threads={}", r.T, r.V, r.threads);
  for (auto& [k, v] : r.knobs) s += " " + k + "=" + v;
  return s + (r.masked_half ? " masked_half" : "");
}

// softmax / log_softmax of float16 x + a [1, V] float16 mask, float32 out, against double: z is eager's float16 sum.
void check_split_softmax(bool log, const std::vector<split_run>& runs) {
  auto spec = vocab_spec(dtype::float16, true, log, 0, {{1, 151936}});
  for (auto& run : runs) {
    SCOPED_TRACE(label(run));
    host_tensor x(dtype::float16, {run.T, run.V}), m(dtype::float16, {1, run.V}), y(dtype::float32, {run.T, run.V});
    fill(x, 11, 4.0);
    fill(m, 12);
    if (run.masked_half)
      for (int64_t j = 0; j < run.V / 2; ++j) m.set(j, -INFINITY);
    ASSERT_EQ(run_family("row_softmax_cpu", spec, run.knobs, {&x, &m}, {&y}, run.threads), 0);
    for (int64_t r = 0; r < run.T; ++r) {
      std::vector<double> z(run.V);
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < run.V; ++j) {
        z[j] = static_cast<double>(static_cast<_Float16>(x.at(r * run.V + j) + m.at(j)));
        mx = std::max(mx, z[j]);
      }
      for (auto v : z) s += std::exp(v - mx);
      for (int64_t j = 0; j < run.V; ++j) {
        const double got = y.at(r * run.V + j);
        if (z[j] == -INFINITY) {
          ASSERT_EQ(got, log ? -INFINITY : 0.0) << "row " << r << " col " << j;
          continue;
        }
        const double want = log ? (z[j] - mx) - std::log(s) : std::exp(z[j] - mx) / s;
        ASSERT_NEAR(got, want, log ? 1e-4 : 1e-9 + 1e-4 * want) << "row " << r << " col " << j;
      }
    }
  }
}

TEST(families_cpu_run, row_softmax_split_rows_log_softmax_f16_mask_to_float32_matches_reference) {
  check_split_softmax(true, {
                                {1, 100003, 16, {}},  // the default (split=auto) splits one odd row
                                {1, 151936, 16, {{"passes", "online"}}},
                                {3, 151936, 16, {}, true},  // 3 rows on 16 threads, half of every row -inf
                                {3, 100003, 16, {{"split", "within"}, {"cache_row", "0"}}},
                                {1, 5, 8, {{"split", "within"}}},  // 5 values on 8 threads: 7 empty segments
                                {2, 5, 8, {{"split", "within"}, {"passes", "online"}}},
                            });
}

TEST(families_cpu_run, row_softmax_split_rows_softmax_rescales_kept_exponentials) {
  check_split_softmax(false, {
                                 {1, 100003, 16, {}},  // exp_once: each segment's exp(x - its max) kept, rescaled
                                 {3, 151936, 16, {{"cache_row", "0"}}, true},
                                 {1, 151936, 16, {{"passes", "online"}}},
                                 {1, 5, 8, {{"split", "within"}, {"exp_once", "0"}}},
                             });
}

TEST(families_cpu_run, row_softmax_split_rows_topk_merges_segments_in_index_order) {
  auto spec = vocab_spec(dtype::bfloat16, false, false, 5, {{1, 100003}});
  for (auto& run : std::vector<split_run>{{1, 100003, 16, {}},
                                          {3, 151936, 16, {{"split", "within"}, {"passes", "online"}}},
                                          {2, 5, 8, {{"split", "within"}}}}) {
    SCOPED_TRACE(label(run));
    const int64_t V = run.V, k = 5;
    host_tensor x(dtype::bfloat16, {run.T, V}), v(dtype::float32, {run.T, k}), idx(dtype::int64, {run.T, k});
    fill(x, 13, 2.0);
    // A tie for the largest value in the first and the last thread's segments, the third value in between.
    for (int64_t r = 0; r < run.T; ++r) {
      x.set(r * V + 1, 12.0);
      x.set(r * V + V - 2, 12.0);
      x.set(r * V + V / 2, 11.5);
    }
    ASSERT_EQ(run_family("row_softmax_cpu", spec, run.knobs, {&x}, {&v, &idx}, run.threads), 0);
    const int64_t* ip = reinterpret_cast<const int64_t*>(idx.bytes.data());
    for (int64_t r = 0; r < run.T; ++r) {
      std::vector<int64_t> order(V);
      for (int64_t j = 0; j < V; ++j) order[j] = j;
      std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return x.at(r * V + a) > x.at(r * V + b); });
      EXPECT_EQ(order[0], 1);
      double s = 0;
      for (int64_t j = 0; j < V; ++j) s += std::exp(x.at(r * V + j) - 12.0);
      for (int q = 0; q < k; ++q) {
        // The planted three exactly; past them, equal values in different segments may differ in their last bit
        // (each segment's exponentials kept against its own max), so ties among them are the value's, not the index's.
        if (q < 3) EXPECT_EQ(ip[r * k + q], order[q]) << "row " << r << " rank " << q;
        EXPECT_EQ(x.at(r * V + ip[r * k + q]), x.at(r * V + order[q])) << "row " << r << " rank " << q;
        const double want = std::exp(x.at(r * V + order[q]) - 12.0) / s;
        EXPECT_NEAR(v.at(r * k + q), want, 1e-9 + 1e-4 * want) << "row " << r << " rank " << q;
      }
    }
  }
}

// What split=auto decides at launch (row_softmax_cpu.h's kf_split_rows), called through a function appended to the
// source: the default splits the vocabulary's one long row, and is split=rows for the router's 4096 rows of 256.
TEST(families_cpu_run, row_softmax_split_default_splits_one_long_row_not_many_short_ones) {
  const std::string probe =
      "\nextern \"C\" int kf_test_splits(int64_t rows, int64_t L, int T) { return kf_split_rows(rows, L, T); }\n";
  using splits_fn = int (*)(int64_t, int64_t, int);
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  auto vocab = vocab_spec(dtype::float16, true, true, 0, {{1, 151936}});
  EXPECT_EQ(f->default_variant(vocab).at("split"), "auto");
  void* h = load_family("row_softmax_cpu", vocab, {}, probe);
  ASSERT_NE(h, nullptr);
  auto splits = reinterpret_cast<splits_fn>(dlsym(h, "kf_test_splits"));
  ASSERT_NE(splits, nullptr);
  for (int T : {2, 16, 128}) EXPECT_TRUE(splits(1, 151936, T)) << T << " threads";
  EXPECT_TRUE(splits(3, 151936, 16));
  EXPECT_TRUE(splits(3, 151936, 2));   // whole rows: 2 rows' time on one thread; split: 1.5 rows'
  EXPECT_FALSE(splits(1, 151936, 1));  // a team of one
  EXPECT_FALSE(splits(5, 257, 16));    // short rows: the segments' overhead outweighs them
  EXPECT_FALSE(splits(512, 128256, 16));  // every thread busy with whole rows
  EXPECT_FALSE(splits(4096, 256, 16));
  EXPECT_FALSE(splits(4096, 256, 2));

  // A team of one splits nothing: threads=1 emits split=rows whatever the knob says.
  auto one = f->default_variant(vocab);
  one["threads"] = "1";
  auto within = one;
  within["split"] = "within";
  EXPECT_EQ(f->emit(vocab, one), f->emit(vocab, within));
  EXPECT_FALSE(knob_read(*f, vocab, within, "split"));

  // The router's 4096 rows of 256: split=rows, and no other value is valid (the search does not try them).
  auto router = vocab_spec(dtype::bfloat16, false, false, 8, {{4096, 256}});
  auto r = f->default_variant(router);
  EXPECT_EQ(r.at("split"), "rows");
  std::string why;
  r["split"] = "auto";
  EXPECT_FALSE(f->valid(r, router, &why));
  EXPECT_NE(why.find("split=auto: no tuned case has rows of 8192 values or more"), std::string::npos) << why;
}

void check_group_norm(bool channels_last, const knob_values& knobs) {
  auto spec = test::group_norm_spec(true, dtype::float32, channels_last ? "channels_last" : "contiguous");
  const int64_t N = 2, C = 32, H = 5, W = 7, G = 8;
  host_tensor x(dtype::float32, {N, C, H, W}, channels_last), w(dtype::float32, {C}), b(dtype::float32, {C});
  host_tensor y(dtype::float32, {N, C, H, W}, channels_last);
  fill(x, 3, 2.0);
  fill(w, 4);
  fill(b, 5);
  ASSERT_EQ(run_family("group_norm_cpu", spec, knobs, {&x, &w, &b}, {&y}), 0);
  const int64_t cpg = C / G, P = H * W;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double s = 0, s2 = 0;
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t p = 0; p < P; ++p) s += x.at((n * C + c) * P + p);
      double mean = s / (cpg * P);
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t p = 0; p < P; ++p) s2 += std::pow(x.at((n * C + c) * P + p) - mean, 2);
      double rstd = 1 / std::sqrt(s2 / (cpg * P) + 1e-6);
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t p = 0; p < P; ++p) {
          double v = (x.at((n * C + c) * P + p) - mean) * rstd * w.at(c) + b.at(c);
          v = v / (1 + std::exp(-v));
          ASSERT_NEAR(y.at((n * C + c) * P + p), v, 1e-4 + 1e-4 * std::abs(v)) << "n" << n << " c" << c << " p" << p;
        }
    }
}

TEST(families_cpu_run, group_norm_silu_matches_reference_nchw_and_channels_last) {
  check_group_norm(false, {});
  check_group_norm(true, {{"stats", "one_pass"}, {"cache_unit", "0"}, {"math", "poly"}});
}

TEST(families_cpu_run, rms_norm_gelu_matches_reference) {
  auto spec = test::row_norm_spec(true, dtype::float16);
  const int64_t R = 7, D = 100;
  host_tensor x(dtype::float16, {R, D}), w(dtype::float16, {D}), y(dtype::float16, {R, D});
  fill(x, 6);
  fill(w, 7);
  ASSERT_EQ(run_family("row_norm_cpu", spec, {{"math", "poly"}}, {&x, &w}, {&y}), 0);
  for (int64_t r = 0; r < R; ++r) {
    double s2 = 0;
    for (int64_t j = 0; j < D; ++j) s2 += std::pow(x.at(r * D + j), 2);
    double rstd = 1 / std::sqrt(s2 / D + 1e-5);
    for (int64_t j = 0; j < D; ++j) {
      double v = x.at(r * D + j) * rstd * w.at(j);
      v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      ASSERT_NEAR(y.at(r * D + j), v, 2e-3 + 2e-3 * std::abs(v));
    }
  }
}

TEST(families_cpu_run, global_avg_pool_matches_reference_nchw_and_channels_last) {
  for (bool cl : {false, true}) {
    auto spec = test::pool_spec(cl ? "channels_last" : "contiguous", dtype::float16);
    const int64_t N = 2, C = 300;
    host_tensor x(dtype::float16, {N, C, 7, 7}, cl), y(dtype::float16, {N, C});
    fill(x, 8);
    ASSERT_EQ(run_family("pool_cpu", spec, {{"channel_block", "64"}}, {&x}, {&y}), 0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        for (int64_t p = 0; p < 49; ++p) s += x.at((n * C + c) * 49 + p);
        ASSERT_NEAR(y.at(n * C + c), s / 49, 2e-3) << (cl ? "channels_last" : "nchw") << " n" << n << " c" << c;
      }
  }
}

// f16_load=hw (the hardware's float16 load, under kforge's own -O3 -march=native) reads every one of the 65,536
// float16 values as the bit operations do (NaNs as NaNs), and a softcapped, masked fp16 softmax gives the same bits
// both ways.
TEST(families_cpu_run, float16_load_by_the_hardware_reads_every_half_as_the_bit_operations_do) {
  workload_spec spec;
  ASSERT_TRUE(parse_spec_text("version: 1\nname: f16-widen\ninputs:\n  x: {shape: [N], dtype: float16}\n"
                              "graph:\n  - cast: {input: x, dtype: float32}\ncases:\n  - {N: 65536}\n",
                              "f16-widen.yaml", &spec)
                  .empty());
  const std::vector<std::string> native = {"-O3", "-march=native"};
  host_tensor x(dtype::float16, {65536});
  for (int64_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(x.bytes.data() + 2 * i, &h, 2);
  }
  std::vector<std::vector<uint8_t>> got;
  for (const char* how : {"bits", "hw"}) {
    host_tensor y(dtype::float32, {65536});
    ASSERT_EQ(run_family("pointwise_cpu", spec, {{"f16_load", how}}, {&x}, {&y}, 0, native), 0) << how;
    got.push_back(y.bytes);
  }
  for (int64_t i = 0; i < 65536; ++i) {
    float b, h;
    std::memcpy(&b, got[0].data() + 4 * i, 4);
    std::memcpy(&h, got[1].data() + 4 * i, 4);
    _Float16 ref;
    std::memcpy(&ref, x.bytes.data() + 2 * i, 2);
    if (std::isnan(static_cast<float>(ref))) {
      ASSERT_TRUE(std::isnan(b) && std::isnan(h)) << "half 0x" << std::hex << i;
    } else {
      ASSERT_EQ(std::memcmp(&b, &h, 4), 0) << "half 0x" << std::hex << i << ": bits " << b << ", hw " << h;
      ASSERT_EQ(b, static_cast<float>(ref)) << "half 0x" << std::hex << i;
    }
  }

  auto soft = test::softmax_spec(true, false, 0, dtype::float16);
  const int64_t B = 2, H = 3, S = 37;
  host_tensor sx(dtype::float16, {B, H, S, S}), mask(dtype::float32, {S, S});
  fill(sx, 11, 3.0);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) mask.set(i * S + j, j > i ? -INFINITY : 0.0);
  std::vector<std::vector<uint8_t>> probs;
  for (const char* how : {"bits", "hw"}) {
    host_tensor out(dtype::bfloat16, {B, H, S, S});
    ASSERT_EQ(run_family("row_softmax_cpu", soft, {{"f16_load", how}}, {&sx, &mask}, {&out}, 0, native), 0) << how;
    probs.push_back(out.bytes);
  }
  EXPECT_EQ(probs[0], probs[1]);
}

// stage=1 (float16 runs converted by F16C into float buffers around the chain's loop) gives the bits of stage=0: every
// half widened, products of halves rounded to float16 (ties, subnormals, overflow), and a chain with a broadcast row
// and column over rows of 1001 (blocks of 256 and a tail of 8-value groups and single values).
TEST(families_cpu_run, pointwise_float16_staged_through_float_buffers_gives_the_unstaged_bits) {
  const std::vector<std::string> native = {"-O3", "-march=native"};
  auto parse = [](const std::string& name, const std::string& text) {
    workload_spec spec;
    EXPECT_TRUE(parse_spec_text("version: 1\nname: " + name + "\n" + text, name + ".yaml", &spec).empty()) << name;
    return spec;
  };
  auto both = [&](const workload_spec& spec, std::vector<host_tensor*> in, dtype out_t, std::vector<int64_t> shape) {
    std::vector<std::vector<uint8_t>> got;
    for (const char* stage : {"0", "1"}) {
      host_tensor y(out_t, shape);
      EXPECT_EQ(run_family("pointwise_cpu", spec, {{"stage", stage}}, in, {&y}, 0, native), 0) << "stage " << stage;
      got.push_back(y.bytes);
    }
    return got;
  };

  auto widen = parse("widen", "inputs:\n  x: {shape: [N], dtype: float16}\n"
                     "graph:\n  - cast: {input: x, dtype: float32}\ncases:\n  - {N: 65536}\n");
  host_tensor x(dtype::float16, {65536});
  for (int64_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(x.bytes.data() + 2 * i, &h, 2);
  }
  auto w = both(widen, {&x}, dtype::float32, {65536});
  for (int64_t i = 0; i < 65536; ++i) {
    float a, b;
    std::memcpy(&a, w[0].data() + 4 * i, 4);
    std::memcpy(&b, w[1].data() + 4 * i, 4);
    if (std::isnan(a)) ASSERT_TRUE(std::isnan(b)) << "half 0x" << std::hex << i;
    else ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "half 0x" << std::hex << i << ": " << a << " staged " << b;
  }

  // Products of two halves, rounded to float16 at the store: every half times 1 + 2^-10 (ties to even among them),
  // 2^-10 (subnormal results), 2^14 (overflow to infinity) and 0.6.
  auto narrow = parse("narrow", "inputs:\n  x: {shape: [N], dtype: float16}\n  y: {shape: [N], dtype: float16}\n"
                                "graph:\n  - mul: {input: x, other: y}\ncases:\n  - {N: 262144}\n");
  const int64_t N = 262144;
  host_tensor hx(dtype::float16, {N}), hy(dtype::float16, {N});
  const double mult[4] = {1.0 + 1.0 / 1024, 1.0 / 1024, 16384.0, 0.6};
  for (int64_t i = 0; i < N; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(hx.bytes.data() + 2 * i, &h, 2);
    hy.set(i, mult[i / 65536]);
  }
  auto n = both(narrow, {&hx, &hy}, dtype::float16, {N});
  for (int64_t i = 0; i < N; ++i) {
    uint16_t a, b;
    std::memcpy(&a, n[0].data() + 2 * i, 2);
    std::memcpy(&b, n[1].data() + 2 * i, 2);
    const bool nan_a = (a & 0x7c00u) == 0x7c00u && (a & 0x3ffu), nan_b = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
    if (nan_a) ASSERT_TRUE(nan_b) << "value " << i;  // NaN payloads aside
    else ASSERT_EQ(a, b) << "value " << i << " (" << hx.get(i) << " x " << hy.get(i) << "): 0x" << std::hex << a
                         << " staged 0x" << b;
  }

  auto chain = parse("chain", "inputs:\n  x: {shape: [T, D], dtype: float16}\n"
                     "  col: {shape: [T, 1], dtype: float16}\n  row: {shape: [D], dtype: float16}\n"
                     "graph:\n  - mul: {input: x, other: col}\n  - add: {other: row}\n  - silu\n"
                     "cases:\n  - {T: 37, D: 1001}\n");
  host_tensor cx(dtype::float16, {37, 1001}), col(dtype::float16, {37, 1}), row(dtype::float16, {1001});
  fill(cx, 3, 2.0);
  fill(col, 4);
  fill(row, 5);
  auto c = both(chain, {&cx, &col, &row}, dtype::float16, {37, 1001});
  EXPECT_EQ(c[0], c[1]);
}

// kf_round_f16 (cpu_prelude.h: a float rounded to float16 in float arithmetic, so that loops vectorize) gives the bits
// of the IEEE conversion there and back (the compiler's _Float16) for floats of every sign, exponent and top 10
// mantissa bits, each with the low 13 bits that decide the rounding: none, below, at and above the tie, all, and two
// more; the kernel runs under kforge's -O3 -march=native, where the loop is vectorized. A tie that rounds away from
// even, a subnormal quantum off by one, or a NaN let out as a number fails here.
TEST(families_cpu_run, float16_rounding_in_float_arithmetic_is_the_conversion_there_and_back) {
  workload_spec spec;
  ASSERT_TRUE(parse_spec_text("version: 1\nname: f16-round\ninputs:\n  x: {shape: [N], dtype: float32}\n"
                              "graph:\n  - cast: {input: x, dtype: float16}\n  - cast: {dtype: float32}\n"
                              "cases:\n  - {N: 4194304}\n",
                              "f16-round.yaml", &spec)
                  .empty());
  const uint32_t low[8] = {0x0u, 0x1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu, 0x0800u, 0x1234u};
  const int64_t N = int64_t(1) << 22;  // 2^19 high patterns x 8 low ones
  host_tensor x(dtype::float32, {N}), y(dtype::float32, {N});
  for (int64_t i = 0; i < N; ++i) {
    const uint32_t u = (static_cast<uint32_t>(i >> 3) << 13) | low[i & 7];
    std::memcpy(x.bytes.data() + 4 * i, &u, 4);
  }
  ASSERT_EQ(run_family("pointwise_cpu", spec, {}, {&x}, {&y}, 0, {"-O3", "-march=native"}), 0);
  for (int64_t i = 0; i < N; ++i) {
    float f, got;
    std::memcpy(&f, x.bytes.data() + 4 * i, 4);
    std::memcpy(&got, y.bytes.data() + 4 * i, 4);
    const float want = static_cast<float>(static_cast<_Float16>(f));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hexfloat << f;
    } else {
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << std::hexfloat << f << " gave " << got << ", not " << want;
    }
  }
}

}  // namespace
}  // namespace kf
