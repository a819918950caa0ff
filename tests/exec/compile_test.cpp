#include <dlfcn.h>
#include <sys/stat.h>

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/compile.h"
#include "exec/kf_abi.h"
#include "util/fs.h"

using namespace kf;
namespace fs = std::filesystem;

namespace {

const char* k_good = R"(#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  y[0] = x[0] * 2;
  return 0;
}
)";

compile_options opts(const temp_dir& t) {
  compile_options o;
  o.cache_root = t.path() / "cache";
  return o;
}

}  // namespace

TEST(compile, cpu_source_compiles_and_is_cached) {
  temp_dir t;
  compiler c(opts(t));
  compile_request r{k_good, device_kind::cpu};
  auto first = c.compile(r);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(fs::exists(first.so_path));
  EXPECT_TRUE(fs::path(first.so_path).is_absolute());
  EXPECT_EQ(first.key.size(), 64u);
  auto second = c.compile(r);
  EXPECT_TRUE(second.ok);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.so_path, first.so_path);
  r.extra_flags = {"-DVARIANT=2"};  // flags are part of the key
  auto third = c.compile(r);
  EXPECT_FALSE(third.cached);
  EXPECT_NE(third.key, first.key);
}

// A damaged entry (its library truncated, deleted or rewritten, its result.json garbage) is a miss and is rebuilt,
// not a permanent "cannot load" for an honest kernel.
TEST(compile, a_damaged_cache_entry_is_rebuilt) {
  temp_dir t;
  compiler c(opts(t));
  compile_request r{k_good, device_kind::cpu};
  auto first = c.compile(r);
  ASSERT_TRUE(first.ok) << first.log;
  const auto size = fs::file_size(first.so_path);
  const fs::path result_json = fs::path(first.so_path).parent_path() / "result.json";
  for (int damage = 0; damage < 4; ++damage) {
    SCOPED_TRACE(damage);
    if (damage == 0) fs::resize_file(first.so_path, 100);
    if (damage == 1) fs::remove(first.so_path);
    if (damage == 2) {  // same size, other bytes
      std::string bytes = read_file(first.so_path);
      bytes[bytes.size() / 2] ^= 0x5a;
      write_file_atomic(first.so_path, bytes);
    }
    if (damage == 3) write_file_atomic(result_json, "garbage");
    auto again = c.compile(r);
    ASSERT_TRUE(again.ok) << again.log;
    EXPECT_FALSE(again.cached);
    EXPECT_EQ(again.so_path, first.so_path);
    EXPECT_EQ(fs::file_size(again.so_path), size);
    EXPECT_TRUE(c.compile(r).cached);  // and the rebuilt entry serves the next lookup
  }
}

// Two candidates in one process keep their own function-local statics, even of templates of the same name
// (which GCC would otherwise make STB_GNU_UNIQUE: one object for every library loaded).
TEST(compile, candidates_loaded_together_keep_their_own_statics) {
  temp_dir t;
  compiler c(opts(t));
  auto source = [](int tag) {
    return fmt::format(R"(#include "kf_abi.h"
namespace shared_ns {{
template <int V> int& calls() {{ static int n = 0; return n; }}
}}
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor* out, int, void*) {{
  static_cast<float*>(out[0].data)[0] = (float)(++shared_ns::calls<1>() * 100 + {});
  return 0;
}}
)", tag);
  };
  auto a = c.compile({source(1), device_kind::cpu});
  auto b = c.compile({source(2), device_kind::cpu});
  ASSERT_TRUE(a.ok && b.ok) << a.log << b.log;
  void* ha = ::dlopen(a.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* hb = ::dlopen(b.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(ha && hb) << ::dlerror();
  auto fa = reinterpret_cast<kf_launch_fn>(::dlsym(ha, "kf_launch"));
  auto fb = reinterpret_cast<kf_launch_fn>(::dlsym(hb, "kf_launch"));
  ASSERT_TRUE(fa && fb);
  float y = 0;
  kf_tensor out{};
  out.data = &y;
  fa(nullptr, 0, &out, 1, nullptr);
  EXPECT_EQ(y, 101.f);
  fb(nullptr, 0, &out, 1, nullptr);
  EXPECT_EQ(y, 102.f) << "the second library counted the first one's calls";
  fa(nullptr, 0, &out, 1, nullptr);
  EXPECT_EQ(y, 201.f);
  ::dlclose(hb);
  ::dlclose(ha);
}

TEST(compile, error_is_a_result_with_the_log) {
  temp_dir t;
  compiler c(opts(t));
  auto r = c.compile({"#include \"kf_abi.h\"\nint kf_launch( { syntax error\n", device_kind::cpu});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.so_path.empty());
  EXPECT_NE(r.error.find("compile error"), std::string::npos);
  EXPECT_NE(r.log.find("error"), std::string::npos);
  auto again = c.compile({"#include \"kf_abi.h\"\nint kf_launch( { syntax error\n", device_kind::cpu});
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.cached);  // a compile error is a property of the source: cached too
  EXPECT_EQ(again.log, r.log);
}

TEST(compile, undefined_symbols_fail_at_link_time) {
  temp_dir t;
  compiler c(opts(t));
  auto r = c.compile({"#include \"kf_abi.h\"\nextern \"C\" int some_library_call(void);\n"
                      "extern \"C\" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) { return some_library_call(); }\n",
                      device_kind::cpu});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("some_library_call"), std::string::npos);
}

TEST(compile, batch_keeps_request_order) {
  temp_dir t;
  auto o = opts(t);
  o.jobs = 2;
  compiler c(o);
  std::vector<compile_request> reqs;
  for (int i = 0; i < 3; ++i) {
    compile_request r{k_good, device_kind::cpu};
    r.extra_flags = {fmt::format("-DK={}", i)};
    reqs.push_back(r);
  }
  reqs[1].source = "not C++ at all";
  auto results = c.compile_batch(reqs);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok);
  EXPECT_FALSE(results[1].ok);
  EXPECT_TRUE(results[2].ok);
  EXPECT_NE(results[0].so_path, results[2].so_path);
}

// Two requests of one source in a batch (two knob sets that emit the same code) compile once: built twice in
// parallel, the loser's cleanup raced the winner's folder.
TEST(compile, batch_compiles_a_repeated_source_once) {
  temp_dir t;
  auto o = opts(t);
  o.jobs = 4;
  compiler c(o);
  std::vector<compile_request> reqs(4, compile_request{k_good, device_kind::cpu});
  reqs[2].extra_flags = {"-DOTHER=1"};
  auto results = c.compile_batch(reqs);
  ASSERT_EQ(results.size(), 4u);
  for (auto& r : results) EXPECT_TRUE(r.ok) << r.log;
  EXPECT_EQ(results[0].so_path, results[1].so_path);
  EXPECT_EQ(results[0].so_path, results[3].so_path);
  EXPECT_GT(results[0].seconds, 0.0);  // compiled, not found in the cache
  EXPECT_EQ(results[1].seconds, results[0].seconds);  // shared, not built (or looked up) a second time
  EXPECT_EQ(results[3].seconds, results[0].seconds);
  EXPECT_NE(results[0].so_path, results[2].so_path);
  int entries = 0;
  for (auto& e : fs::directory_iterator(t.path() / "cache" / "compile")) entries += e.is_directory();
  EXPECT_EQ(entries, 2);  // no leftover private folders either
}

TEST(compile, timeout_is_a_result_and_not_cached) {
  temp_dir t;
  fs::path slow = t.path() / "slow-cxx";
  write_file_atomic(slow, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo slow 1.0; exit 0; fi\nsleep 30\n");
  ::chmod(slow.c_str(), 0755);
  auto o = opts(t);
  o.cxx = slow.string();
  o.timeout = std::chrono::seconds(1);
  compiler c(o);
  auto r = c.compile({k_good, device_kind::cpu});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("timed out"), std::string::npos);
  EXPECT_FALSE(fs::exists(t.path() / "cache" / "compile" / r.key));
}

TEST(compile, parses_ptxas_report) {
  std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1aPf' for 'sm_90a'
ptxas info    : Function properties for _Z1aPf
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_Z1bPf' for 'sm_90a'
ptxas info    : Function properties for _Z1bPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 0 barriers, 380 bytes cmem[0]
)";
  auto r = parse_ptxas_resources(log);
  EXPECT_EQ(r.kernels, 2);
  EXPECT_EQ(r.registers, 128);
  EXPECT_EQ(r.smem_bytes, 4096);
  EXPECT_EQ(r.spill_stores, 8);
  EXPECT_EQ(r.spill_loads, 4);
  EXPECT_EQ(r.stack_bytes, 16);
  EXPECT_FALSE(parse_ptxas_resources("").known());
}

TEST(compile, cuda_source_compiles_with_nvcc_and_reports_resources) {
  temp_dir t;
  compiler c(opts(t));
  compile_request r;
  r.device = device_kind::cuda;
  r.source = R"(#include "kf_abi.h"
#include <cuda_runtime.h>
__global__ void twice(const float* x, float* y, long n) {
  __shared__ float tile[256];
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = 2 * tile[threadIdx.x];
}
extern "C" int kf_launch(const kf_tensor* in, int, kf_tensor* out, int, void* stream) {
  long n = in[0].shape[0];
  twice<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";
  auto res = c.compile(r);
  if (!res.ok && res.log.find("not found") != std::string::npos) GTEST_SKIP() << "no nvcc: " << res.log;
  ASSERT_TRUE(res.ok) << res.log;
  EXPECT_TRUE(res.resource.known());
  EXPECT_GT(res.resource.registers, 0);
  EXPECT_EQ(res.resource.smem_bytes, 1024);
}
