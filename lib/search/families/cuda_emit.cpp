#include "search/families/cuda_emit.h"

#include <cmath>
#include <fmt/format.h>

#include "search/families/embedded.h"
#include "util/error.h"

namespace kf::cuda_emit {

bool storable(dtype t) {
  return t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16 || t == dtype::float64;
}

std::string c_type(dtype t) {
  switch (t) {
    case dtype::float32: return "float";
    case dtype::float16: return "__half";
    case dtype::bfloat16: return "__nv_bfloat16";
    case dtype::float64: return "double";
    case dtype::boolean: return "bool";  // a masked_fill mask
    default: KF_ASSERT(false, "no CUDA float type for {}", dtype_name(t));
  }
}

std::string float_literal(double v) {
  KF_ASSERT(!std::isnan(v), "a NaN constant");
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  auto s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string round_to(const std::string& x, dtype t) {
  if (t == dtype::float16 || t == dtype::bfloat16) return fmt::format("to_f(from_f<{}>({}))", c_type(t), x);
  return "";
}

namespace {

std::string norm_activation_code(norm_graph::activation a) {
  switch (a) {
    case norm_graph::activation::none: return "";
    case norm_graph::activation::silu: return "  x = x * rcp_ftz(1.f + exp_ftz(-x));\n";
    case norm_graph::activation::gelu: return "  x = 0.5f * x * (1.f + erff(x * 0.70710678118654752f));\n";
    case norm_graph::activation::gelu_tanh:
      // 0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation in 1 + tanh(u) on the negative tail.
      return "  x = x * rcp_ftz(1.f + exp_ftz(-1.5957691216057308f * (x + 0.044715f * x * x * x)));\n";
  }
  return "";
}

}  // namespace

std::string norm_pre_and_finalize(const norm_graph& g) {
  std::string pre;
  for (auto t : g.prologue_casts)
    if (auto e = round_to("x[v]", t); !e.empty()) pre += fmt::format("    x[v] = {};\n", e);
  std::string s = fmt::format(
      "\n// The casts before the norm, on values as loaded.\n"
      "template <int V>\n__device__ __forceinline__ void prologue_x(float* x) {{\n{}}}\n",
      pre.empty() ? "" : "#pragma unroll\n  for (int v = 0; v < V; ++v) {\n" + pre + "  }\n");
  s += fmt::format("\n// The fused activation and casts after the norm.\n"
                   "__device__ __forceinline__ float finalize(float x) {{\n{}{}  return x;\n}}\n",
                   norm_activation_code(g.act), rounding_code(g.epilogue_casts, g.out_type));
  return s;
}

std::string rounding_code(std::vector<dtype> chain, std::optional<dtype> stored_as) {
  if (stored_as && !chain.empty() && chain.back() == *stored_as) chain.pop_back();
  std::string s;
  for (auto t : chain)
    if (auto e = round_to("x", t); !e.empty()) s += fmt::format("  x = {};\n", e);
  return s;
}

std::string prologue_code(const std::vector<elementwise_step>& steps, const std::string& tanh_fn) {
  std::string s;
  int mask_i = 0;
  for (auto& st : steps) {
    switch (st.what) {
      case elementwise_step::kind::scale:
        s += fmt::format("  x = x * {};\n", float_literal(st.value));
        break;
      case elementwise_step::kind::softcap:
        if (tanh_fn == "tanh_exp")
          s += fmt::format("  x = softcap_exp(x, {}, {});\n", float_literal(2.0 / std::log(2.0) / st.value),
                           float_literal(st.value));
        else
          s += fmt::format("  x = {}(x * {}) * {};\n", tanh_fn, float_literal(1.0 / st.value), float_literal(st.value));
        break;
      case elementwise_step::kind::add_mask:
        s += fmt::format("  x = x + m{};\n", mask_i++);
        break;
      case elementwise_step::kind::masked_fill: {
        // The value as x's type holds it (masked_fill rounds it there); a mask is loaded as 0 or 1.
        std::string value = float_literal(st.value);
        if (auto r = round_to(value, st.to); !r.empty() && std::isfinite(st.value)) value = r;  // an infinity stays
        s += st.fill_where_false ? fmt::format("  x = m{} != 0.f ? x : {};\n", mask_i++, value)
                                 : fmt::format("  x = m{} != 0.f ? {} : x;\n", mask_i++, value);
        break;
      }
      case elementwise_step::kind::cast:
        if (auto r = round_to("x", st.to); !r.empty()) s += fmt::format("  x = {};\n", r);
        break;
    }
  }
  return s;
}

std::string prelude(const family& f, const workload_spec& spec, const knob_values& v,
                    const std::string& graph_description) {
  return family_kernel_header(f, spec, v, graph_description) + "\n" +
         std::string(embedded_file("search/families/cuda_prelude.cuh"));
}

std::string variant(const std::string& code) {
  return "\n// ---- this variant ----\nnamespace kfk {\n\n" + code + "\n}  // namespace kfk\n";
}

std::string fixed_file(std::string_view path) { return "\n" + std::string(embedded_file(path)); }

std::string math_functions(bool fast) {
  std::string s =
      "__device__ __forceinline__ float kf_sqrt(float x) { return sqrtf(x); }\n"
      "__device__ __forceinline__ float kf_erf(float x) { return erff(x); }\n"
      "__device__ __forceinline__ float kf_relu(float x) { return x != x ? x : fmaxf(x, 0.f); }\n"
      "template <typename T> __device__ __forceinline__ float kf_round_to(float x) { return to_f(from_f<T>(x)); }\n"
      "__device__ __forceinline__ float kf_round(int code, float x) {\n"
      "  return code == KF_FLOAT16 ? kf_round_to<__half>(x) : code == KF_BFLOAT16 ? kf_round_to<__nv_bfloat16>(x)\n"
      "       : code == KF_INT32 ? (float)(int32_t)x : code == KF_INT64 ? (float)(int64_t)x : code == KF_UINT8 ? (float)(uint8_t)x : x;\n"
      "}\n";
  if (fast)
    s += "__device__ __forceinline__ float kf_exp(float x) { return exp_ftz(x); }\n"
         "__device__ __forceinline__ float kf_tanh(float x) { return tanh_exp(x); }\n"
         "__device__ __forceinline__ float kf_sigmoid(float x) { return rcp_ftz(1.f + ex2_ftz(-1.44269504088896341f * x)); }\n";
  else
    s += "__device__ __forceinline__ float kf_exp(float x) { return expf(x); }\n"
         "__device__ __forceinline__ float kf_tanh(float x) { return tanhf(x); }\n"
         "__device__ __forceinline__ float kf_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }\n";
  s += "__device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * (1.f + kf_erf(x * 0.70710678118654752f)); }\n"
       "__device__ __forceinline__ float kf_gelu_tanh(float x) {\n"
       "  return 0.5f * x * (1.f + kf_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));\n"
       "}\n";
  return s;
}

std::string epilogue() {
  return "\nextern \"C\" int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, "
         "void* stream) {\n  return kfk::launch(inputs, n_inputs, outputs, n_outputs, static_cast<cudaStream_t>(stream));\n}\n";
}

}  // namespace kf::cuda_emit
