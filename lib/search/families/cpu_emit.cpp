#include "search/families/cpu_emit.h"

#include <cmath>

#include <fmt/format.h>

#include "search/families/embedded.h"
#include "search/graph_match.h"
#include "util/error.h"

namespace kf::cpu_emit {

std::string header(const family& f, const workload_spec& spec, const knob_values& v, const std::string& computes) {
  return family_kernel_header(f, spec, v, computes) + "\n";
}

std::string prelude(const knob_values& v) {
  const std::string& f16 = v.at("f16_load");
  KF_ASSERT(f16 == "bits" || f16 == "hw", "f16_load={}", f16);
  return (f16 == "hw" ? "#define KF_F16_LOAD_HW 1\n" : "") + std::string(embedded_file("search/families/cpu_prelude.h"));
}

knob f16_load_knob() {
  return {"f16_load",
          {"bits", "hw"},
          "float16 loads: bit operations that vectorize with their loop, or the hardware's conversion (one "
          "instruction, faster in loops the compiler does not vectorize; GCC 12 vectorizes it only with AVX512-FP16)",
          "bits"};
}

bool has_float16(const workload_spec& spec) {
  for (auto& in : spec.inputs)
    if (in.type == dtype::float16) return true;
  for (auto& call : spec.graph)
    if (dtype_arg(call.args, "dtype") == dtype::float16) return true;
  return false;
}

void canonical_f16_load(const workload_spec& spec, knob_values& v) {
  if (!has_float16(spec)) v["f16_load"] = "bits";
}

std::string variant(const std::string& code) { return "\n// ---- this variant ----\n" + code; }

std::string fixed_file(std::string_view path) { return "\n" + std::string(embedded_file(path)); }

std::string storage_type(dtype t) {
  switch (t) {
    case dtype::float32: return "float";
    case dtype::float16:
    case dtype::bfloat16: return "uint16_t";
    case dtype::float64: return "double";
    case dtype::boolean: return "uint8_t";  // a masked_fill mask: 0 or 1
    default: KF_ASSERT(false, "no cpu storage for {}", dtype_name(t));
  }
}

std::string load(dtype t, const std::string& e) {
  switch (t) {
    case dtype::float32: return e;
    case dtype::float16: return fmt::format("kf_ld_f16({})", e);
    case dtype::bfloat16: return fmt::format("kf_ld_bf16({})", e);
    case dtype::float64: return fmt::format("(float)({})", e);
    case dtype::boolean: return fmt::format("(float)({})", e);
    default: KF_ASSERT(false, "no cpu load for {}", dtype_name(t));
  }
}

std::string store(dtype t, const std::string& e) {
  switch (t) {
    case dtype::float32: return e;
    case dtype::float16: return fmt::format("kf_st_f16({})", e);
    case dtype::bfloat16: return fmt::format("kf_st_bf16({})", e);
    case dtype::float64: return fmt::format("(double)({})", e);
    default: KF_ASSERT(false, "no cpu store for {}", dtype_name(t));
  }
}

std::string store_vec(dtype t, const std::string& e) {
  return t == dtype::float16 ? fmt::format("kf_st_f16_sel({})", e) : store(t, e);
}

std::string round_through(dtype t, const std::string& e) {
  if (t == dtype::float16) return fmt::format("kf_round_f16({})", e);  // the same bits, and it vectorizes
  if (t == dtype::bfloat16) return load(t, store(t, e));
  return e;  // float32 and float64 hold a float exactly
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

std::string pool_types(const pool_graph& g, const std::string& accum) {
  return fmt::format("\ntypedef {} kf_in_t;\ntypedef {} kf_out_t;\ntypedef {} kf_acc_t;\n", storage_type(g.in_type),
                     storage_type(g.out_type), accum);
}

std::string pool_io(const pool_graph& g) {
  std::string epi = round_through(g.in_type, "v");
  for (auto t : g.epilogue_casts) epi = round_through(t, epi);
  return fmt::format(
      "\n// An element of x as a float (kf_load), the mean on its way out, rounded through x's type and each later\n"
      "// cast (kf_fin), and stored as the output's type (kf_store).\n"
      "static inline float kf_load(kf_in_t v) {{ return {}; }}\n"
      "static inline float kf_fin(float v) {{ return {}; }}\n"
      "static inline kf_out_t kf_store(float v) {{ return {}; }}\n",
      load(g.in_type, "v"), epi, store(g.out_type, "v"));
}

std::string prologue_statements(const elementwise_step& st, const std::string& mask_value) {
  std::string line;
  switch (st.what) {
    case elementwise_step::kind::scale: line = fmt::format("v = v * {};", float_literal(st.value)); break;
    case elementwise_step::kind::softcap:
      line = fmt::format("v = KF_TANH(v * {}) * {};", float_literal(1.0 / st.value), float_literal(st.value));
      break;
    case elementwise_step::kind::cast: break;
    case elementwise_step::kind::add_mask: line = fmt::format("v = v + {};", mask_value); break;
    case elementwise_step::kind::masked_fill: {  // rounded to x's type below, as masked_fill does
      const std::string value = float_literal(st.value);
      line = st.fill_where_false ? fmt::format("v = {} != 0.f ? v : {};", mask_value, value)
                                 : fmt::format("v = {} != 0.f ? {} : v;", mask_value, value);
      break;
    }
  }
  std::string out = line.empty() ? "" : "  " + line + "\n";
  if (st.to == dtype::float16 || st.to == dtype::bfloat16) out += "  v = " + round_through(st.to, "v") + ";\n";
  return out;
}

std::string math_macros(const std::string& math) {
  if (math == "poly") return "#define KF_EXP kf_exp_poly\n#define KF_TANH kf_tanh_poly\n";
  return "#define KF_EXP expf\n#define KF_TANH tanhf\n";
}

std::string omp_macros(const std::string& threads, const std::string& schedule) {
  return fmt::format("#define KF_NUM_THREADS{}\n#define KF_SCHEDULE {}\n",
                     threads == "all" ? std::string() : fmt::format(" num_threads({})", threads), schedule);
}

}  // namespace kf::cpu_emit
