// Verify end to end with real worker subprocesses: kernels that crash, hang or exit cost one worker and get a
// precise verdict; each cheating kernel is rejected for the right rule; honest kernels pass. The cpu corpus runs
// everywhere; the cuda corpus needs a GPU (and skips without one).
#include <filesystem>

#include <gtest/gtest.h>

#include "../support/test_compiler.h"
#include "exec/device.h"
#include "spec/spec_parse.h"
#include "util/fs.h"
#include "verify/check.h"

using namespace kf;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const fs::path k_data = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data";
const std::string k_gate = "R=64,C=128";
const std::string k_odd = "R=5,C=33";

workload_spec test_spec() { return load_spec((k_data / "specs" / "softmax-small.yaml").string()); }

using test::shared_compiler;

check_report check_file(const std::string& rel, worker_client& w, check_options o = {}) {
  fs::path p = k_data / "kernels" / rel;
  return check_candidate(test_spec(), read_file(p), p.filename().string(), shared_compiler(), w, o);
}

bool has_gpu() {
  gpu_probe p = probe_gpus();
  return p.smi_gpus > 0 || p.device_node;
}

worker_options on(device_kind k) {
  worker_options o;
  o.device = {k, 0};
  return o;
}

struct expectation {
  std::string file;
  std::string rule;       // must fail
  std::string also = "";  // must fail too (when the cheat breaks two rules by its nature)
};

void expect_rejected_for(const expectation& e, worker_client& w, check_options o = {}) {
  SCOPED_TRACE(e.file);
  check_report r = check_file(e.file, w, o);
  // A static finding stops the candidate before the compile; the dynamic rules need it compiled and run.
  if (e.rule.rfind("static.", 0) == 0) EXPECT_EQ(r.result.status_of("compiles"), check_status::skipped);
  else EXPECT_TRUE(r.compile.ok) << r.compile.log;
  EXPECT_FALSE(r.result.passed()) << r.result.text();
  EXPECT_EQ(r.result.status_of(e.rule), check_status::failed) << "expected rule " << e.rule << "\n" << r.result.text();
  if (!e.also.empty())
    EXPECT_EQ(r.result.status_of(e.also), check_status::failed) << "expected rule " << e.also << "\n" << r.result.text();
}

}  // namespace

TEST(worker, crashing_kernels_each_get_a_precise_verdict_and_the_run_goes_on) {
  worker_client w(on(device_kind::cpu));
  check_options o;
  o.static_scan = false;  // abort() and exit() are static findings: this is about what the worker does at run time
  o.cases = {k_gate, k_odd};
  o.timeout = 20s;
  struct t {
    std::string file, rule, evidence;
  };
  for (auto& c : std::vector<t>{{"crash/segfault.cpp", "crash", "SIGSEGV"},
                                {"crash/abort.cpp", "crash", "SIGABRT"},
                                {"crash/exit.cpp", "exit", "code 3"},
                                {"crash/hang.cpp", "hang", "no answer"}}) {
    SCOPED_TRACE(c.file);
    check_options oc = o;
    if (c.rule == "hang") oc.timeout = 3s;
    check_report r = check_file(c.file, w, oc);
    EXPECT_FALSE(r.result.passed());
    // every case fails on its own, with its own fresh worker
    for (auto& name : o.cases) EXPECT_EQ(r.result.status_of(c.rule, name), check_status::failed) << r.result.text();
    EXPECT_NE(r.result.text().find(c.evidence), std::string::npos) << r.result.text();
  }
  check_report honest = check_file("honest/naive.cpp", w, o);  // the same client, a fresh worker
  EXPECT_TRUE(honest.result.passed()) << honest.result.text();
}

TEST(worker, honest_cpu_kernels_pass_every_rule) {
  worker_client w(on(device_kind::cpu));
  for (auto file : {"honest/naive.cpp", "honest/vectorized.cpp"}) {
    SCOPED_TRACE(file);
    check_report r = check_file(file, w);
    EXPECT_TRUE(r.result.passed()) << r.result.text();
    for (auto rule : {"match", "nan_inf", "all_written", "inputs_unchanged", "new_inputs", "deterministic", "stream",
                      "reads_outside_inputs", "writes_outside_outputs", "handles_input"})
      EXPECT_TRUE(r.result.has(rule)) << "rule never checked: " << rule;
  }
}

// A case too big for the machine is the spec's problem, said before anything is allocated; a 0-d input gets the
// adversarial kinds that apply to it. Neither is blamed on the kernel (both once aborted the worker on a rule
// missing from the table, which read as the kernel crashing).
TEST(worker, a_case_bigger_than_memory_is_refused_and_a_scalar_input_is_judged) {
  worker_client w(on(device_kind::cpu));
  workload_spec big;
  ASSERT_TRUE(parse_spec_text("version: 1\nname: big\ninputs:\n  x: {shape: [T, 1024], dtype: float32}\ngraph:\n"
                              "  - silu: {input: x}\ncases: [{T: 100000000000}]\n", "big.yaml", &big).empty());
  const std::string silu = "#include \"kf_abi.h\"\n#include <math.h>\nextern \"C\" int kf_launch(const kf_tensor* in, int, "
                           "kf_tensor* out, int, void*) {\n  long n = 1;\n  for (int d = 0; d < in[0].ndim; ++d) n *= "
                           "in[0].shape[d];\n  const float* x = (const float*)in[0].data;\n  float* y = (float*)out[0].data;\n"
                           "  for (long i = 0; i < n; ++i) y[i] = x[i] / (1.f + expf(-x[i]));\n  return 0;\n}\n";
  try {
    check_report r = check_candidate(big, silu, "silu.cpp", shared_compiler(), w, {});
    ADD_FAILURE() << "expected a refusal, got " << r.result.text();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("GiB to verify"), std::string::npos) << e.what();
  }
  workload_spec scalar;
  ASSERT_TRUE(parse_spec_text("version: 1\nname: scalar\ninputs:\n  x: {shape: [], dtype: float32}\ngraph:\n"
                              "  - silu: {input: x}\ncases: [{}]\n", "scalar.yaml", &scalar).empty());
  check_report r = check_candidate(scalar, silu, "silu.cpp", shared_compiler(), w, {});
  EXPECT_TRUE(r.result.passed()) << r.result.text();
}

TEST(worker, verify_says_where_its_time_went) {
  worker_client w(on(device_kind::cpu));
  fs::path p = k_data / "kernels" / "honest" / "naive.cpp";
  compile_result cr = shared_compiler().compile({read_file(p), device_kind::cpu});
  ASSERT_TRUE(cr.ok) << cr.log;
  std::map<std::string, double> steps;
  check_options o;
  o.seeds = 1;
  verdict v = verify_in_worker(test_spec(), {{"kind", "kernel"}, {"name", "naive"}, {"so", cr.so_path}}, w, o, &steps);
  EXPECT_TRUE(v.passed()) << v.text();
  for (auto step : {"inputs", "launch", "reference", "compare"}) {
    ASSERT_TRUE(steps.count(step)) << "no time for step " << step;
    EXPECT_GT(steps[step], 0.0) << step;
  }
}

// The worker keeps verification's inputs: verifying LibTorch eager first (what a search does while its first batch
// compiles) leaves a candidate's verification of the same cases and seeds nothing to draw.
TEST(worker, inputs_drawn_once_serve_the_next_verification) {
  worker_client w(on(device_kind::cpu));
  fs::path p = k_data / "kernels" / "honest" / "naive.cpp";
  compile_result cr = shared_compiler().compile({read_file(p), device_kind::cpu});
  ASSERT_TRUE(cr.ok) << cr.log;
  check_options o;
  o.seeds = 2;
  o.cases = {k_gate, k_odd};
  int64_t warm = 0, candidate = 0;
  verdict e = verify_in_worker(test_spec(), {{"kind", "eager"}, {"name", "eager"}}, w, o, nullptr, &warm);
  EXPECT_TRUE(e.passed()) << e.text();
  EXPECT_GT(warm, 0);
  verdict v = verify_in_worker(test_spec(), {{"kind", "kernel"}, {"name", "naive"}, {"so", cr.so_path}}, w, o,
                               nullptr, &candidate);
  EXPECT_TRUE(v.passed()) << v.text();
  EXPECT_EQ(candidate, 0);
}

TEST(worker, cpu_cheats_are_rejected_for_the_right_rule) {
  worker_client w(on(device_kind::cpu));
  for (auto& e : std::vector<expectation>{{"cheat/cpu/zeros.cpp", "match"},
                                          {"cheat/cpu/constant.cpp", "match"},
                                          {"cheat/cpu/gate_only.cpp", "handles_input"},
                                          {"cheat/cpu/cache_by_pointer.cpp", "new_inputs"},
                                          {"cheat/cpu/cache_static.cpp", "new_inputs"},
                                          {"cheat/cpu/modify_input.cpp", "inputs_unchanged"},
                                          {"cheat/cpu/side_thread.cpp", "static.thread_creation"},
                                          {"cheat/cpu/half_written.cpp", "all_written"},
                                          {"cheat/cpu/read_past_end.cpp", "reads_outside_inputs"},
                                          {"cheat/cpu/race.cpp", "deterministic"}})
    expect_rejected_for(e, w);
}

TEST(worker, shape_specialized_kernel_passes_its_case_and_fails_the_others) {
  worker_client w(on(device_kind::cpu));
  check_report r = check_file("cheat/cpu/gate_only.cpp", w);
  EXPECT_EQ(r.result.status_of("match", k_gate), check_status::passed) << r.result.text();
  EXPECT_EQ(r.result.status_of("handles_input", k_gate), check_status::passed);
  EXPECT_EQ(r.result.status_of("handles_input", k_odd), check_status::failed);
}

TEST(worker, side_thread_is_caught_at_run_time_without_the_static_scan) {
  worker_client w(on(device_kind::cpu));
  check_options o;
  o.static_scan = false;
  check_report r = check_file("cheat/cpu/side_thread.cpp", w, o);
  EXPECT_EQ(r.result.status_of("stream"), check_status::failed) << r.result.text();
  EXPECT_FALSE(r.result.has("static.thread_creation"));
}

TEST(worker, a_kernel_that_leaves_a_thread_writing_costs_its_worker_for_each_case) {
  // The thread may still write the worker's memory after the case freed its buffers: each case that saw it ends
  // its worker, and the next case (and the next kernel) get a fresh one.
  worker_client w(on(device_kind::cpu));
  check_options o;
  o.static_scan = false;
  o.cases = {k_gate, k_odd};
  check_report r = check_file("cheat/cpu/side_thread.cpp", w, o);
  for (auto& name : o.cases) EXPECT_EQ(r.result.status_of("stream", name), check_status::failed) << r.result.text();
  EXPECT_FALSE(w.running());
  EXPECT_EQ(w.starts(), 2);
  check_report honest = check_file("honest/naive.cpp", w, o);
  EXPECT_TRUE(honest.result.passed()) << honest.result.text();
  EXPECT_EQ(w.starts(), 3);
}

TEST(worker, compile_error_is_a_verdict) {
  worker_client w(on(device_kind::cpu));
  check_report r = check_candidate(test_spec(), "#include \"kf_abi.h\"\nnot C++;\n", "broken.cpp", shared_compiler(),
                                   w, {});
  EXPECT_FALSE(r.result.passed());
  EXPECT_EQ(r.result.status_of("compiles"), check_status::failed);
  EXPECT_NE(r.result.first_failure().find("error"), std::string::npos);
  EXPECT_FALSE(w.running());  // nothing to run: the worker was never started
}

TEST(worker, cuda_corpus_compiles) {
  // Runs without a GPU: the GPU tests below must not fail for a typo.
  std::vector<compile_request> reqs;
  std::vector<std::string> names;
  for (auto dir : {"honest", "cheat/cuda", "crash/cuda"})
    for (auto& f : fs::directory_iterator(k_data / "kernels" / dir)) {
      if (f.path().extension() != ".cu") continue;
      compile_request r;
      r.source = read_file(f.path());
      r.device = device_kind::cuda;
      r.name = f.path().filename().string();
      reqs.push_back(r);
      names.push_back(f.path().string());
    }
  ASSERT_GE(reqs.size(), 14u);
  auto results = shared_compiler().compile_batch(reqs);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok && results[i].log.find("not found") != std::string::npos) GTEST_SKIP() << "no nvcc";
    EXPECT_TRUE(results[i].ok) << names[i] << "\n" << results[i].log;
  }
}

TEST(worker, cuda_out_of_bounds_write_poisons_the_context_and_the_next_kernel_runs) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA GPU: /dev/nvidia0 missing and nvidia-smi lists none";
  worker_client w(on(device_kind::cuda));
  check_options o;
  o.cases = {k_gate};
  check_report r = check_file("crash/cuda/oob_write.cu", w, o);
  EXPECT_EQ(r.result.status_of("cuda_error", k_gate), check_status::failed) << r.result.text();
  EXPECT_FALSE(w.running());  // the poisoned worker is gone
  check_report honest = check_file("honest/naive.cu", w, o);
  EXPECT_TRUE(honest.result.passed()) << honest.result.text();
  check_options oh = o;
  oh.timeout = 5s;
  check_report hang = check_file("crash/cuda/hang.cu", w, oh);
  EXPECT_EQ(hang.result.status_of("hang", k_gate), check_status::failed) << hang.result.text();
}

TEST(worker, honest_cuda_kernels_pass_every_rule) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA GPU: /dev/nvidia0 missing and nvidia-smi lists none";
  worker_client w(on(device_kind::cuda));
  for (auto file : {"honest/naive.cu", "honest/vectorized.cu"}) {
    SCOPED_TRACE(file);
    check_report r = check_file(file, w);
    EXPECT_TRUE(r.result.passed()) << r.result.text();
    EXPECT_TRUE(r.compile.resource.known());
  }
}

TEST(worker, cuda_cheats_are_rejected_for_the_right_rule) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA GPU: /dev/nvidia0 missing and nvidia-smi lists none";
  worker_client w(on(device_kind::cuda));
  for (auto& e : std::vector<expectation>{{"cheat/cuda/zeros.cu", "match"},
                                          {"cheat/cuda/constant.cu", "match"},
                                          {"cheat/cuda/gate_only.cu", "handles_input"},
                                          {"cheat/cuda/cache_by_pointer.cu", "new_inputs"},
                                          {"cheat/cuda/cache_static.cu", "new_inputs"},
                                          {"cheat/cuda/modify_input.cu", "inputs_unchanged"},
                                          {"cheat/cuda/side_stream.cu", "static.stream_creation"},
                                          {"cheat/cuda/half_written.cu", "all_written"},
                                          {"cheat/cuda/read_past_end.cu", "reads_outside_inputs"},
                                          {"cheat/cuda/race.cu", "deterministic"}})
    expect_rejected_for(e, w);
  check_options dynamic_only;  // the side stream is caught at run time too
  dynamic_only.static_scan = false;
  expect_rejected_for({"cheat/cuda/side_stream.cu", "stream"}, w, dynamic_only);
}
