#include <gtest/gtest.h>

#include "verify/static_scan.h"

using namespace kf;

namespace {

std::vector<std::string> rules_of(std::string_view src, scan_options o = {}) {
  std::vector<std::string> r;
  for (auto& f : static_scan(src, o)) r.push_back(f.rule);
  return r;
}

bool finds(std::string_view src, std::string_view rule, scan_options o = {}) {
  for (auto& f : static_scan(src, o))
    if (f.rule == rule) return true;
  return false;
}

const char* k_honest = R"(// softmax: one block per row; no printf here, no std::thread, cudaDeviceSynchronize() is banned
#include "kf_abi.h"
#include <cuda_runtime.h>
#include <math.h>
__global__ void k(const float* x, float* y, long n) { y[0] = expf(x[0]); }
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void* stream) {
  const char* msg = "printf(\"x\") and exit(1) in a string are not calls";
  (void)msg;
  float* tmp = nullptr;
  cudaMallocAsync((void**)&tmp, 16, (cudaStream_t)stream);
  k<<<dim3(1), dim3(32), 0, (cudaStream_t)stream>>>((const float*)in[0].data, (float*)out[0].data, 1);
  cudaFreeAsync(tmp, (cudaStream_t)stream);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";

}  // namespace

TEST(static_scan, honest_source_has_no_findings) {
  auto f = static_scan(k_honest, {});
  for (auto& x : f) ADD_FAILURE() << x.rule << " line " << x.line << ": " << x.token;
}

TEST(static_scan, comments_and_strings_are_blanked_keeping_lines) {
  std::string s = blank_comments("a // printf\nb /* x\ny */ c \"exit(1)\" 'q'\n", true);
  EXPECT_EQ(s.find("printf"), std::string::npos);
  EXPECT_EQ(s.find("exit"), std::string::npos);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);
  EXPECT_NE(s.find('c'), std::string::npos);
  EXPECT_EQ(blank_comments("R\"d(exit(1))d\" x", true).find("exit"), std::string::npos);
}

TEST(static_scan, each_rule_with_its_line) {
  struct t {
    const char* src;
    const char* rule;
  };
  for (auto& c : std::vector<t>{
           {"void f(){ cudaStream_t s; cudaStreamCreateWithFlags(&s, 1); }", "static.stream_creation"},
           {"void f(){ std::thread t([]{}); t.detach(); }", "static.thread_creation"},
           {"void f(){ pthread_create(0,0,0,0); }", "static.thread_creation"},
           {"void f(){ cudaDeviceSynchronize(); }", "static.device_sync"},
           {"void f(float* p){ cudaMemcpy(p, p, 4, cudaMemcpyDeviceToDevice); }", "static.device_sync"},
           {"void f(){ printf(\"%d\", 1); }", "static.host_io"},
           {"void f(){ std::cout << 1; }", "static.host_io"},
           {"void f(){ FILE* x = fopen(\"a\", \"w\"); }", "static.host_io"},
           {"void f(){ system(\"ls\"); }", "static.process"},
           {"void f(){ if (fork() == 0) {} }", "static.process"},
           {"void f(){ std::exit(3); }", "static.process"},
           {"void f(){ cudaStreamAttrValue v; v.accessPolicyWindow.hitRatio = 1; }", "static.l2_persistence"},
           {"void f(){ void* h = dlopen(\"x.so\", 0); }", "static.dynamic_loading"},
           {"void f(){ auto t = torch::zeros({2}); }", "static.library_call"},
           {"void f(){ at::Tensor t; }", "static.library_call"},
           {"void f(){ cublasHandle_t h; cublasCreate(&h); }", "static.library_call"},
           {"#include <cudnn.h>\nvoid f(){}", "static.library_call"},
           {"__attribute__((constructor)) void init() {}", "static.load_time_code"},
           {"__global__ void k(){}\nvoid f(){ k<<<1, 32>>>(); }", "static.default_stream"},
           {"__global__ void k(){}\nvoid f(){ k<<<1, 32, 0, 0>>>(); }", "static.default_stream"},
           {"void f(void* p){ cudaMemcpyAsync(p, p, 4, cudaMemcpyDeviceToDevice); }", "static.default_stream"},
       }) {
    EXPECT_TRUE(finds(c.src, c.rule)) << c.rule << " not found in: " << c.src;
  }
  auto f = static_scan("int a;\n\n  printf(\"x\");\n", {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 3);
  EXPECT_EQ(f[0].token, "printf");
}

// A cheat the dynamic checks catch only when the race shows: a PDL launch whose kernel reads its input without
// waiting for the kernel that wrote it.
TEST(static_scan, a_pdl_launch_must_wait_for_the_previous_grid) {
  const char* launch = R"(__global__ void k(const float* x, float* y) { WAIT y[0] = x[0]; }
int go(const float* x, float* y, cudaStream_t s) {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c = {}; c.stream = s; c.attrs = &a; c.numAttrs = 1;
  return cudaLaunchKernelEx(&c, k, x, y);
}
)";
  auto with = [&](const char* wait) {
    std::string src = launch;
    src.replace(src.find("WAIT"), 4, wait);
    return src;
  };
  auto f = static_scan(with(""), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "static.pdl_wait");
  EXPECT_EQ(f[0].line, 4);
  // Named in a comment only, the wait is still missing.
  EXPECT_TRUE(finds(with("/* griddepcontrol.wait */"), "static.pdl_wait"));
  EXPECT_FALSE(finds(with("asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");"), "static.pdl_wait"));
  EXPECT_FALSE(finds(with("cudaGridDependencySynchronize();"), "static.pdl_wait"));
  EXPECT_FALSE(finds("__global__ void k(){}", "static.pdl_wait"));
}

TEST(static_scan, ordinary_names_are_not_findings) {
  // variables named like banned calls, method calls and namespaces that merely look alike
  const char* src = R"(
int thread = 0; int exit_code = 1; float system_scale = 2; int at = 3;
struct s { void write(int); } w;
void f(int kill_count) { w.write(thread + at); auto x = exit_code * system_scale; (void)x; (void)kill_count; }
)";
  auto r = rules_of(src);
  EXPECT_TRUE(r.empty()) << r[0];
}

// An include by its own path pulls a host file into the compile (and its text into the log and the reports).
TEST(static_scan, includes_by_their_own_path_are_found) {
  for (auto inc : {"#include \"/etc/passwd\"\n", "#include </dev/zero>\n", "#include \"../../secret.h\"\n",
                   "  #  include \"a/../../b.h\"\n", "#include \"~/x.h\"\n"})
    EXPECT_TRUE(finds(inc, "static.include_path")) << inc;
  for (auto inc : {"#include \"kf_abi.h\"\n", "#include <cuda/std/cmath>\n", "#include \"my..header.h\"\n"})
    EXPECT_FALSE(finds(inc, "static.include_path")) << inc;
}

TEST(static_scan, allowed_library_is_not_a_finding) {
  const char* src = "#include <cublas_v2.h>\nvoid f(){ cublasHandle_t h; cublasCreate(&h); }";
  EXPECT_TRUE(finds(src, "static.library_call"));
  scan_options o;
  o.allow_libraries = {"cublas"};
  EXPECT_FALSE(finds(src, "static.library_call", o));
}

TEST(static_scan, checks_cover_every_static_rule) {
  verdict v;
  add_scan_checks(v, static_scan("void f(){ printf(\"a\"); printf(\"b\"); }", {}));
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.status_of("static.host_io"), check_status::failed);
  EXPECT_EQ(v.status_of("static.process"), check_status::passed);
  auto fails = v.failures();
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_NE(fails[0]->detail.find("line 1"), std::string::npos);
  EXPECT_NE(fails[0]->detail.find("1 more"), std::string::npos);
  int static_rules = 0;
  for (auto& r : verify_rules()) static_rules += r.stage == rule_stage::static_scan;
  EXPECT_EQ(static_cast<int>(v.checks().size()), static_rules);
}
