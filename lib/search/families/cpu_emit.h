// Pieces every cpu family's emitted source shares: the dtype conversions (bit operations, no library),
// the header comment, and a small template substitution so emitters read like the code they emit.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "search/family.h"
#include "spec/spec.h"

namespace kf::cpu_emit {

// cpu_prelude.h: the standard includes and the conversion helpers:
//   float kf_ld_bf16(uint16_t), uint16_t kf_st_bf16(float), float kf_ld_f16(uint16_t), uint16_t kf_st_f16(float),
//   float kf_exp_poly(float), float kf_tanh_poly(float).
std::string prelude();

// The storage type of a dtype in emitted code ("float", "uint16_t", "double").
std::string storage_type(dtype t);
// An expression turning a stored value into float, a float into the stored value, and a float rounded
// through a type (what eager's intermediate result of that type would hold).
std::string load(dtype t, const std::string& expr);
std::string store(dtype t, const std::string& expr);
std::string round_through(dtype t, const std::string& expr);
// The function name that stores a float as t ("kf_st_bf16"; "" for float32, "(double)" for float64).
std::string store_fn(dtype t);

// A C++ float literal for v ("50.0f", "1e-06f", "INFINITY").
std::string float_literal(double v);

// The kernel header (family_kernel_header: family, version, knobs, what it computes) and a blank line.
std::string header(const family& f, const workload_spec& spec, const knob_values& v, const std::string& computes);

// KF_EXP / KF_TANH for a "math" knob: libm (expf, tanhf) or poly (kf_exp_poly, kf_tanh_poly: they vectorize).
std::string math_macros(const std::string& math);

// `#pragma omp ...` clauses for a "threads" knob ("all" leaves the count to OpenMP).
std::string num_threads_clause(const std::string& threads);

// Replaces each $KEY$ in `text` by its value; an unknown $KEY$ is a bug (asserts).
std::string subst(std::string_view text, const std::map<std::string, std::string>& values);

}  // namespace kf::cpu_emit
