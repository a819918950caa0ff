// The cpu families' emitted kernels, compiled and run: results against a double-precision reference written
// here (independent of the emitters' own dtype helpers: _Float16 and bit shifts), for NCHW and channels_last.
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "exec/kf_abi.h"
#include "search/family.h"
#include "search_test_specs.h"
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

// Compiles the family's default-variant source (plus the given knob changes) and runs it.
int run_family(const std::string& fam, const workload_spec& spec, const knob_values& changes,
               std::vector<host_tensor*> in, std::vector<host_tensor*> out) {
  auto* f = find_family(fam, device_kind::cpu);
  auto v = f->default_variant(spec);
  for (auto& [k, x] : changes) v[k] = x;
  EXPECT_TRUE(f->valid(v, spec, nullptr));
  temp_dir dir("kf-run");
  write_file_atomic(dir.path() / "k.cpp", f->emit(spec, v));
  auto so = (dir.path() / "k.so").string();
  auto r = run_process({KFORGE_CXX_COMPILER, "-std=c++17", "-O1", "-fopenmp", "-fPIC", "-shared",
                        "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", so, (dir.path() / "k.cpp").string()});
  EXPECT_TRUE(r.ok()) << r.err.substr(0, 2000);
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << dlerror();
  if (!h) return -1;
  auto fn = reinterpret_cast<kf_launch_fn>(dlsym(h, "kf_launch"));
  std::vector<kf_tensor> ti, to;
  for (auto* t : in) ti.push_back(t->abi());
  for (auto* t : out) to.push_back(t->abi());
  int rc = fn(ti.data(), static_cast<int>(ti.size()), to.data(), static_cast<int>(to.size()), nullptr);
  // not dlclose'd: the OpenMP runtime it pulled in may still have threads parked
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

}  // namespace
}  // namespace kf
