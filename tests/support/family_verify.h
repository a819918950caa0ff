// A family's kernels through the whole verifier (verify/check.h), in a real worker of each device: one worker per
// device for a test binary, specs parsed from text, and batch compiles that warm the compile cache first.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../support/test_compiler.h"
#include "exec/compile.h"
#include "search/family.h"
#include "spec/ops.h"
#include "spec/spec_parse.h"
#include "verify/check.h"

namespace kf::test {

inline worker_client& shared_worker(device_kind d) {
  static worker_client cpu([] {
    worker_options wo;
    wo.device = {device_kind::cpu, 0};
    return wo;
  }());
  if (d == device_kind::cpu) return cpu;
  static worker_client cuda([] {
    worker_options wo;
    wo.device = {device_kind::cuda, 0};
    return wo;
  }());
  return cuda;
}

inline bool have_gpu() { return std::filesystem::exists("/dev/nvidiactl"); }
#define KF_REQUIRE_GPU() \
  if (!kf::test::have_gpu()) GTEST_SKIP() << "no GPU: the CUDA kernels are verified on the GPU machine"

// A spec from YAML text; every diagnostic fails the test.
inline workload_spec parse(const std::string& text) {
  workload_spec s;
  auto d = parse_spec_text(text, "", &s);
  std::string all;
  for (auto& e : d) all += "  " + e.str() + "\n";
  EXPECT_TRUE(d.empty()) << text << all;
  return s;
}

// The family's default for `spec` with `changes` applied.
inline knob_values variant_of(const family& f, const workload_spec& spec, const knob_values& changes) {
  knob_values k = f.default_variant(spec);
  for (auto& [name, value] : changes) k[name] = value;
  return k;
}

// The family's kernel for `spec` (its default, with `changes`) passes the whole verifier on `device`.
inline void expect_passes(const workload_spec& spec, const std::string& label, const std::string& family_name,
                          device_kind device, const knob_values& changes = {}) {
  SCOPED_TRACE(label + " (" + family_name + ")");
  const family* f = find_family(family_name, device);
  ASSERT_NE(f, nullptr);
  std::string why;
  ASSERT_TRUE(f->covers(spec, &why)) << why;
  const knob_values k = variant_of(*f, spec, changes);
  ASSERT_TRUE(f->valid(k, spec, &why)) << why;
  const std::string source = f->emit(spec, k);
  const std::string file = device == device_kind::cuda ? "candidate.cu" : "candidate.cpp";
  check_report r = check_candidate(spec, source, file, shared_compiler(), shared_worker(device), {});
  ASSERT_TRUE(r.compile.ok) << r.result.text() << r.compile.log.substr(0, 3000);
  EXPECT_TRUE(r.result.passed()) << r.result.text() << "\n" << source;
}

// Compiles each (spec, changes) variant of the family together (a pool of threads), so that the checks after find
// them in the compile cache.
inline void warm(const std::string& family_name, device_kind device,
                 const std::vector<std::pair<workload_spec, knob_values>>& variants) {
  const family* f = find_family(family_name, device);
  ASSERT_NE(f, nullptr);
  std::vector<compile_request> reqs;
  for (auto& [s, changes] : variants) reqs.push_back({f->emit(s, variant_of(*f, s, changes)), device, "sm_90a", {}, s.name});
  shared_compiler().compile_batch(reqs);
}

using family_variants = std::vector<std::pair<workload_spec, knob_values>>;

// Every variant through the whole verifier on `device`, compiled in one batch first; each labelled with its spec's
// name and its place among the `per_spec` variants of that spec.
inline void expect_all_pass(const std::string& family_name, device_kind device, const family_variants& v,
                            size_t per_spec) {
  warm(family_name, device, v);
  for (size_t i = 0; i < v.size(); ++i)
    expect_passes(v[i].first, v[i].first.name + " variant " + std::to_string(i % per_spec), family_name, device,
                  v[i].second);
}

// Without a device: every variant's spec is covered, its knobs valid, and it emits a kernel (what the device run
// compiles).
inline void expect_all_valid(const std::string& family_name, device_kind device, const family_variants& v) {
  const family* f = find_family(family_name, device);
  ASSERT_NE(f, nullptr);
  for (auto& [s, changes] : v) {
    std::string why;
    // The spec itself holds in every case (the worker refuses one that does not, before any kernel runs).
    for (const case_spec& c : s.cases) {
      graph_shapes g;
      graph_error e;
      EXPECT_TRUE(try_infer_graph(s, c, &g, &e)) << s.name << ": " << e.message;
    }
    ASSERT_TRUE(f->covers(s, &why)) << s.name << ": " << why;
    EXPECT_TRUE(f->valid(variant_of(*f, s, changes), s, &why)) << s.name << ": " << why;
    EXPECT_NE(f->emit(s, variant_of(*f, s, changes)).find("kf_launch"), std::string::npos) << s.name;
  }
}

}  // namespace kf::test
