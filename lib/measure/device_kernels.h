// Launchers for the timing protocol's helper kernels (device_kernels.cu). Plain C++ interface, so the
// callers need not be compiled by nvcc. Return a cudaError_t as int.
#pragma once
#include <cstdint>

namespace kf::cuda {

int launch_empty(void* stream);
// Spins until *host_mapped_flag (pinned, mapped host memory) is non-zero or timeout_s passes.
int launch_block_stream(const int32_t* host_mapped_flag, double timeout_s, void* stream);

// Spins for `ns` nanoseconds of the GPU's global timer: a known delay (kforge calibrate's injected slowdown).
int launch_spin(unsigned long long ns, void* stream);

}  // namespace kf::cuda
