// Pieces every cpu family's emitted source shares: the order of a kernel's parts, the prelude every kernel opens with
// (cpu_prelude.h: the dtype conversions, bit operations, no library), C names for spec dtypes, and the knob-selected
// macros the families' fixed files read.
#pragma once
#include <string>
#include <string_view>

#include "search/family.h"
#include "search/graph_match.h"
#include "spec/spec.h"

namespace kf::cpu_emit {

// A cpu kernel is, in order: header() (its kernel header, family_kernel_header, and a blank line), prelude()
// (cpu_prelude.h: the standard includes and
//   float kf_ld_bf16(uint16_t), uint16_t kf_st_bf16(float), float kf_ld_f16(uint16_t), uint16_t kf_st_f16(float),
//   float kf_exp_poly(float), float kf_tanh_poly(float)),
// variant() (the variant's macros, types, constants and generated functions: the fused prologue and epilogue), and
// the family's fixed file (fixed_file). Everything is at file scope with internal linkage but kf_launch.
std::string header(const family& f, const workload_spec& spec, const knob_values& v, const std::string& computes);
// The prelude, after the f16_load knob's macro (KF_F16_LOAD_HW for "hw"); v must hold the knob.
std::string prelude(const knob_values& v);
// `code` under a "this variant" comment.
std::string variant(const std::string& code);
// A fixed file of the family, embedded at build time (embedded.h: "search/families/row_softmax_cpu.h").
std::string fixed_file(std::string_view path);

// The storage type of a dtype in emitted code ("float", "uint16_t", "double").
std::string storage_type(dtype t);
// An expression turning a stored value into float, a float into the stored value, and a float rounded
// through a type (what eager's intermediate result of that type would hold).
std::string load(dtype t, const std::string& expr);
std::string store(dtype t, const std::string& expr);
std::string round_through(dtype t, const std::string& expr);
// store, for a loop that should vectorize: float16 through kf_st_f16_sel (the same bits, selects for branches), where
// kf_st_f16 keeps the loop scalar.
std::string store_vec(dtype t, const std::string& expr);

// The statements applying one softmax prologue step to `float v`, each indented two spaces: a scale, a softcap
// (KF_TANH), an add of `mask_value` (add_mask: the caller writes where its mask's value lives), nothing for a cast;
// then the rounding through the step's type where that is 16-bit.
std::string prologue_statements(const elementwise_step& st, const std::string& mask_value = "");
// The pooling families' (pool_cpu, adaptive_pool_cpu) types kf_in_t, kf_out_t and kf_acc_t (`accum`), and their
// kf_load (an element of x as a float), kf_fin (the mean rounded through x's type and each later cast) and kf_store.
std::string pool_types(const pool_graph& g, const std::string& accum);
std::string pool_io(const pool_graph& g);
// A C++ float literal for v ("50.0f", "1e-06f", "INFINITY").
std::string float_literal(double v);

// The knob every cpu family has, "f16_load": how a stored float16 becomes a float, by the bit operations (they
// vectorize with the loop around them) or by the hardware's conversion (F16C, AArch64: one instruction, which GCC 12
// does not vectorize without AVX512-FP16). `before` is "bits".
knob f16_load_knob();
// Whether the spec holds a float16 value anywhere: an input, or a dtype argument of an op (a cast, a softmax's
// dtype). Without one the kernel loads no float16 and f16_load changes nothing.
bool has_float16(const workload_spec& spec);
// canonical_knobs' part: f16_load at "bits" where the spec has no float16 (so such variants emit one source).
void canonical_f16_load(const workload_spec& spec, knob_values& v);

// The macros of the knobs the cpu families share:
// KF_EXP / KF_TANH for a "math" knob: libm (expf, tanhf) or poly (kf_exp_poly, kf_tanh_poly: they vectorize).
std::string math_macros(const std::string& math);
// KF_NUM_THREADS, the `num_threads(N)` clause of a "threads" knob (nothing for "all": OpenMP's default), and
// KF_SCHEDULE, a "schedule" knob's kind (static, dynamic), for the fixed files' `#pragma omp` lines.
std::string omp_macros(const std::string& threads, const std::string& schedule);

}  // namespace kf::cpu_emit
