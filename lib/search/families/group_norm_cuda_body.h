// The fixed CUDA code of the group_norm_cuda family (see group_norm_cuda_body.cpp).
#pragma once

namespace kf {
const char* group_norm_cuda_body();
}
