// row_norm_cpu through the whole verifier (static scan, compile, every rule on every case, in a real worker): its
// default variant and knob variants on RMSNorm and LayerNorm rows with the prologues and epilogues it fuses (a
// residual add returned beside the result in either order, a per-channel scale, SiLU and a cast), in bfloat16,
// float16 and float32; its kernel launched directly on layouts it refuses; and what its knobs change in the emitted
// source.
#include <dlfcn.h>

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "exec/kf_abi.h"
#include "search/family.h"
#include "util/error.h"

namespace kf {
namespace {

using test::parse;

const family& row_norm() {
  const family* f = find_family("row_norm_cpu", device_kind::cpu);
  KF_ASSERT(f != nullptr, "row_norm_cpu is not in the family table");
  return *f;
}

// The default variant, then the default with each of `variants`' knobs changed: each passes the verifier.
void expect_passes(const std::string& yaml, const std::vector<knob_values>& variants) {
  const workload_spec spec = parse(yaml);
  std::vector<knob_values> all = {{}};
  all.insert(all.end(), variants.begin(), variants.end());
  std::vector<std::pair<workload_spec, knob_values>> warm;
  for (auto& changes : all) warm.push_back({spec, changes});
  test::warm("row_norm_cpu", device_kind::cpu, warm);
  for (auto& changes : all) {
    std::string label = spec.name + ": default";
    for (auto& [name, value] : changes) label += " " + name + "=" + value;
    test::expect_passes(spec, label, "row_norm_cpu", device_kind::cpu, changes);
  }
}

// Both ways of reading a row again (staged or not) whatever the default, one thread and several, few and many
// accumulators, tasks of one row and of many.
const std::vector<knob_values> k_knob_variants = {
    {{"threads", "1"}, {"lanes", "4"}, {"cache_row", "0"}},
    {{"cache_row", "1"}, {"rows_per_task", "1"}, {"schedule", "dynamic"}, {"threads", "2"}},
    {{"lanes", "8"}, {"rows_per_task", "64"}, {"cache_row", "0"}},
};

TEST(row_norm_cpu, rms_norm_bf16_rows_of_3584_pass_for_one_and_five_rows) {
  expect_passes(R"(version: 1
name: rn-rms-bf16
inputs:
  x: {shape: [T, 3584], dtype: bfloat16}
  w: {shape: [3584], dtype: bfloat16, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - rms_norm: {input: x, normalized_shape: [3584], weight: w, eps: 1.0e-6}
cases: [{T: 1, gate: true}, {T: 5}]
)",
                k_knob_variants);
}

TEST(row_norm_cpu, layer_norm_fp16_over_two_dims_with_weight_and_bias_passes) {
  expect_passes(R"(version: 1
name: rn-layer-f16-2d
inputs:
  x: {shape: [B, 3, 12, 41], dtype: float16}
  w: {shape: [12, 41], dtype: float16, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [12, 41], dtype: float16, init: {normal: {std: 0.1}}}
graph:
  - layer_norm: {input: x, normalized_shape: [12, 41], weight: w, bias: b, eps: 1.0e-5}
cases: [{B: 2, gate: true}, {B: 1}]
)",
                k_knob_variants);
}

// The residual add's sum h is returned too, as the result's sibling in either order.
std::string residual_spec(const std::string& outputs) {
  return R"(version: 1
name: rn-residual
inputs:
  x: {shape: [T, 1000], dtype: bfloat16}
  r: {shape: [T, 1000], dtype: bfloat16}
  w: {shape: [1000], dtype: bfloat16, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - add: {input: x, other: r, as: h}
  - rms_norm: {normalized_shape: [1000], weight: w, eps: 1.0e-6, as: y}
outputs: )" + outputs + R"(
cases: [{T: 5, gate: true}, {T: 1}, {T: 67}]
)";
}

TEST(row_norm_cpu, residual_add_rms_norm_returning_y_then_h_passes) {
  expect_passes(residual_spec("[y, h]"), k_knob_variants);
}

TEST(row_norm_cpu, residual_add_rms_norm_returning_h_then_y_passes) {
  expect_passes(residual_spec("[h, y]"), {{{"cache_row", "1"}}, {{"threads", "1"}}});
}

TEST(row_norm_cpu, norm_then_silu_and_a_cast_passes_with_either_math) {
  expect_passes(R"(version: 1
name: rn-silu-cast
inputs:
  x: {shape: [T, 768], dtype: float16}
  w: {shape: [768], dtype: float16, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [768], dtype: float16, init: {normal: {std: 0.1}}}
graph:
  - layer_norm: {input: x, normalized_shape: [768], weight: w, bias: b, eps: 1.0e-12}
  - silu: {}
  - cast: {dtype: float32}
cases: [{T: 9, gate: true}, {T: 1}]
)",
                {{{"math", "libm"}}, {{"math", "poly"}, {"cache_row", "0"}, {"lanes", "8"}}});
}

TEST(row_norm_cpu, row_broadcast_operand_in_the_prologue_passes) {
  expect_passes(R"(version: 1
name: rn-row-scale
inputs:
  x: {shape: [T, 4, 300], dtype: bfloat16}
  s: {shape: [300], dtype: bfloat16, init: {uniform: {low: 0.5, high: 2.0}}}
  w: {shape: [300], dtype: bfloat16, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - mul: {input: x, other: s}
  - rms_norm: {normalized_shape: [300], weight: w}
cases: [{T: 3, gate: true}, {T: 1}]
)",
                {{{"cache_row", "1"}, {"threads", "2"}, {"rows_per_task", "1"}}, {{"threads", "1"}}});
}

TEST(row_norm_cpu, float32_throughout_passes) {
  expect_passes(R"(version: 1
name: rn-f32
inputs:
  x: {shape: [T, 777], dtype: float32}
  r: {shape: [T, 777], dtype: float32}
  c: {shape: [777], dtype: float32}
  g: {shape: [T, 777], dtype: float32}
  w: {shape: [777], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [777], dtype: float32, init: {normal: {std: 0.1}}}
graph:
  - add: {input: x, other: r}
  - add: {other: c, as: h}
  - layer_norm: {normalized_shape: [777], weight: w, bias: b, eps: 1.0e-5}
  - gelu: {approximate: tanh}
  - mul: {other: g, as: y}
outputs: [y, h]
cases: [{T: 6, gate: true}, {T: 1}]
)",
                {{{"math", "libm"}, {"cache_row", "1"}}, {{"threads", "1"}, {"lanes", "16"}}});
}

TEST(row_norm_cpu, canonical_knobs_drop_what_a_variant_does_not_read) {
  const family& f = row_norm();
  const workload_spec plain = parse(residual_spec("[y, h]"));
  auto v = f.default_variant(plain);
  EXPECT_FALSE(knob_read(f, plain, v, "math")) << "no exp, tanh or erf: math is not read";
  EXPECT_TRUE(knob_read(f, plain, v, "rows_per_task"));
  v["threads"] = "1";
  EXPECT_FALSE(knob_read(f, plain, v, "schedule"));
  EXPECT_FALSE(knob_read(f, plain, v, "rows_per_task"));
  auto w = v;
  w["schedule"] = "dynamic";
  w["rows_per_task"] = "64";
  EXPECT_EQ(f.emit(plain, v), f.emit(plain, w));
  const std::string src = f.emit(plain, v);
  EXPECT_EQ(src.rfind(fmt::format("// kforge kernel: family row_norm_cpu, version {}\n", f.version()), 0), 0u);
  EXPECT_NE(src.find("// computes: add -> rms_norm: 1 prologue op(s) -> rms_norm"), std::string::npos) << src.substr(0, 400);
  EXPECT_NE(src.find("constexpr int kf_n_outputs = 2, kf_y_output = 0, kf_h_output = 1;"), std::string::npos);
  EXPECT_NE(src.find("constexpr bool kf_parallel = false;"), std::string::npos);
  const workload_spec swapped = parse(residual_spec("[h, y]"));
  EXPECT_NE(f.emit(swapped, v).find("kf_y_output = 1, kf_h_output = 0;"), std::string::npos);
}

// The kernel compiled as kforge compiles it and launched directly on layouts no spec expresses: what it does not
// take (a strided row, a strided or column-shaped operand, a wrong dtype or count, an h of another shape) it refuses
// with 1 rather than computing it wrongly; a contiguous launch matches a double computation.
TEST(row_norm_cpu, launch_refuses_what_it_does_not_take) {
  const workload_spec spec = parse(R"(version: 1
name: rn-launch
inputs:
  x: {shape: [T, 37], dtype: float32}
  s: {shape: [37], dtype: float32}
  w: {shape: [37], dtype: float32}
graph:
  - mul: {input: x, other: s, as: h}
  - rms_norm: {normalized_shape: [37], weight: w, eps: 1.0e-5, as: y}
outputs: [y, h]
cases: [{T: 3, gate: true}]
)");
  const family& f = row_norm();
  compile_result c = test::shared_compiler().compile(
      {f.emit(spec, f.default_variant(spec)), device_kind::cpu, "", {}, "rn-launch"});
  ASSERT_TRUE(c.ok) << c.log.substr(0, 3000);
  void* so = dlopen(c.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(so, nullptr) << dlerror();
  auto launch = reinterpret_cast<kf_launch_fn>(dlsym(so, "kf_launch"));
  ASSERT_NE(launch, nullptr);
  const int64_t T = 3, D = 37;
  std::vector<float> x(2 * T * D), sv(2 * D), w(D), y(T * D + 80, -7.f), h(T * D, -7.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (size_t i = 0; i < sv.size(); ++i) sv[i] = 0.5f + 0.01f * static_cast<float>(i);
  for (int64_t i = 0; i < D; ++i) w[i] = 1.f - 0.02f * static_cast<float>(i);
  auto tensor = [](float* data, std::vector<int64_t> shape, std::vector<int64_t> stride) {
    kf_tensor t{};
    t.data = data;
    t.dtype = KF_FLOAT32;
    t.ndim = static_cast<int32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d], t.stride[d] = stride[d];
    return t;
  };
  std::vector<kf_tensor> in = {tensor(x.data(), {T, D}, {D, 1}), tensor(sv.data(), {D}, {1}), tensor(w.data(), {D}, {1})};
  std::vector<kf_tensor> out = {tensor(y.data(), {T, D}, {D, 1}), tensor(h.data(), {T, D}, {D, 1})};
  ASSERT_EQ(launch(in.data(), 3, out.data(), 2, nullptr), 0);
  for (int64_t r = 0; r < T; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += std::pow(static_cast<double>(x[r * D + j]) * sv[j], 2);
    const double rstd = 1 / std::sqrt(ss / D + 1e-5);
    for (int64_t j = 0; j < D; ++j) {
      const double hv = static_cast<double>(x[r * D + j]) * sv[j];
      EXPECT_NEAR(h[r * D + j], hv, 1e-6 * (1 + std::fabs(hv)));
      EXPECT_NEAR(y[r * D + j], hv * rstd * w[j], 1e-5 * (1 + std::fabs(hv * rstd)));
    }
  }
  auto refused = [&](const char* what, std::vector<kf_tensor> i, std::vector<kf_tensor> o, int n_in = 3) {
    EXPECT_EQ(launch(i.data(), n_in, o.data(), static_cast<int>(o.size()), nullptr), 1) << what;
  };
  auto with = [](std::vector<kf_tensor> v, size_t k, kf_tensor t) {
    v[k] = t;
    return v;
  };
  refused("x transposed", with(in, 0, tensor(x.data(), {T, D}, {1, T})), out);
  refused("x rows 2D apart", with(in, 0, tensor(x.data(), {T, D}, {2 * D, 1})), out);
  refused("s every other float", with(in, 1, tensor(sv.data(), {D}, {2})), out);
  refused("s a column", with(in, 1, tensor(sv.data(), {T, 1}, {1, 1})), out);
  refused("w of another length", with(in, 2, tensor(w.data(), {D - 1}, {1})), out);
  kf_tensor bf = in[0];
  bf.dtype = KF_BFLOAT16;
  refused("x in bfloat16", with(in, 0, bf), out);
  refused("y rows 40 apart", in, with(out, 0, tensor(y.data(), {T, D}, {D + 40, 1})));
  refused("h of fewer rows", in, with(out, 1, tensor(h.data(), {T - 1, D}, {D, 1})));
  refused("no h", in, {out[0]});
  refused("an input missing", in, out, 2);
  // not dlclose'd: the OpenMP runtime it pulled in may still have threads parked
}

TEST(row_norm_cpu, declines_a_channels_last_input) {
  workload_spec spec = parse(R"(version: 1
name: rn-cl
inputs:
  x: {shape: [2, 4, 5, 6], dtype: float32, memory_format: channels_last}
graph:
  - rms_norm: {input: x, normalized_shape: [6]}
cases: [{gate: true}]
)");
  std::string why;
  EXPECT_FALSE(row_norm().covers(spec, &why));
  EXPECT_NE(why.find("input x is channels_last"), std::string::npos) << why;
}

}  // namespace
}  // namespace kf
