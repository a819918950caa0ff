// The fixed CUDA code of the pool_cuda family (see pool_cuda_body.cpp).
#pragma once

namespace kf {
const char* pool_cuda_body();
}
