// Checking CUDA runtime calls (CONTRIBUTING.md error channels): a failed call throws kf::cuda_error with the
// file, line and the call's text. Include only from *.cu and *_torch.cpp files.
#pragma once
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {

// A failed CUDA call. `code` is the cudaError_t; sticky errors mean the context is poisoned.
class cuda_error : public infra_error {
 public:
  cuda_error(int code, const std::string& message) : infra_error(message), m_code(code) {}
  int code() const { return m_code; }

 private:
  int m_code;
};

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* call, const char* file, int line) {
  throw cuda_error(static_cast<int>(e),
                   fmt::format("{}:{}: {} failed: {} ({})", file, line, call, cudaGetErrorString(e),
                               cudaGetErrorName(e)));
}

}  // namespace kf

#define KF_CUDA_CHECK(call)                                                        \
  do {                                                                             \
    cudaError_t kf_cuda_err_ = (call);                                             \
    if (kf_cuda_err_ != cudaSuccess) ::kf::cuda_fail(kf_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
