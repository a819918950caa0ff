// The worker's device side: binding to the device, its health check and the `env` command (the table of commands
// is beside the worker's main, tool/worker/main.cpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/headeronly/version.h>
#if KFORGE_WITH_CUDA
#include <cuda_runtime.h>
#include <cudnn.h>
#endif

#include <fmt/format.h>

#include "exec/worker_device.h"
#include "util/error.h"

namespace kf {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(line.find_first_not_of(" \t", pos + 1));
    }
  return "unknown";
}

#if KFORGE_WITH_CUDA
std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }
#endif

}  // namespace

nlohmann::json env_command(const nlohmann::json&, worker_context& ctx) {
  return {{"ok", true}, {"env", worker_env(ctx)}};
}

nlohmann::json worker_env(const worker_context& ctx) {
  nlohmann::json env = {{"device", ctx.device.str()}, {"torch", TORCH_VERSION}, {"cpu_model", cpu_model()},
                        {"threads", at::get_num_threads()}, {"cpu_count", std::thread::hardware_concurrency()},
                        {"sandbox", ctx.sandbox}};
  if (ctx.device.kind == device_kind::cpu) {
    env["gpu_key"] = cpu_key();
    return env;
  }
#if KFORGE_WITH_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, ctx.device.index) != cudaSuccess)
    throw infra_error(fmt::format("cudaGetDeviceProperties({}) failed", ctx.device.index));
  int sm_clock = 0, mem_clock = 0, driver = 0, runtime = 0;
  cudaDeviceGetAttribute(&sm_clock, cudaDevAttrClockRate, ctx.device.index);
  cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, ctx.device.index);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  size_t cudnn = cudnnGetVersion();
  env["gpu_name"] = p.name;
  env["arch"] = fmt::format("sm_{}{}", p.major, p.minor);
  env["sm_count"] = p.multiProcessorCount;
  env["l2_bytes"] = p.l2CacheSize;
  env["memory_bytes"] = p.totalGlobalMem;
  env["sm_clock_mhz"] = sm_clock / 1000;
  env["mem_clock_mhz"] = mem_clock / 1000;
  env["driver"] = version_text(driver);
  env["cuda_runtime"] = version_text(runtime);
  env["cudnn"] = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
  env["gpu_key"] = gpu_key(env);
  return env;
#else
  throw infra_error("this kforge-worker was built without CUDA");
#endif
}

void worker_setup(worker_context& ctx) {
  if (ctx.device.kind == device_kind::cpu) return;
#if KFORGE_WITH_CUDA
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || ctx.device.index >= count) {
    std::fprintf(stderr, "kforge-worker: no CUDA device %d (%s; %d visible)\n", ctx.device.index,
                 e == cudaSuccess ? "out of range" : cudaGetErrorString(e), count);
    std::exit(2);
  }
  cudaSetDevice(ctx.device.index);
  ctx.device_health = [] {
    // A sticky error (illegal address, a trap) survives every later call: the context is unusable.
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess) return std::string();
    cudaError_t again = cudaDeviceSynchronize();
    if (again == cudaSuccess) return std::string();  // a transient error, already reported and cleared
    return fmt::format("{} ({})", cudaGetErrorName(again), cudaGetErrorString(again));
  };
#else
  std::fprintf(stderr, "kforge-worker: built without CUDA, cannot use %s\n", ctx.device.str().c_str());
  std::exit(2);
#endif
}

}  // namespace kf
