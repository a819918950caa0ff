// CRASH (expect: cuda_error, the context poisoned): writes far outside its output.
#include "kf_abi.h"
#include <cuda_runtime.h>
__global__ void wild(float* y) { y[(1L << 40) + threadIdx.x] = 1.f; }
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor* out, int, void* stream) {
  wild<<<1, 32, 0, (cudaStream_t)stream>>>((float*)out[0].data);
  return 0;
}
