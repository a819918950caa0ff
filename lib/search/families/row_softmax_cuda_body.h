// The fixed CUDA code of the row_softmax_cuda family (see row_softmax_cuda_body.cpp).
#pragma once

namespace kf {
const char* row_softmax_cuda_body();
}
