// Honest CUDA softmax over the last dim of a rank-2 float32 tensor: one thread per row, any strides.
#include "kf_abi.h"
#include <cuda_runtime.h>

__global__ void softmax_rows(const float* x, long xs0, long xs1, float* y, long ys0, long ys1, long rows, long cols) {
  long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * xs0;
  float* yr = y + r * ys0;
  float m = -INFINITY;
  for (long c = 0; c < cols; ++c) m = fmaxf(m, xr[c * xs1]);
  double sum = 0;
  for (long c = 0; c < cols; ++c) sum += exp((double)xr[c * xs1] - m);
  for (long c = 0; c < cols; ++c) yr[c * ys1] = (float)(exp((double)xr[c * xs1] - m) / sum);
}

extern "C" int kf_launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KF_FLOAT32 || out[0].dtype != KF_FLOAT32) return 1;
  long rows = in[0].shape[0], cols = in[0].shape[1];
  softmax_rows<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, in[0].stride[0], in[0].stride[1], (float*)out[0].data, out[0].stride[0],
      out[0].stride[1], rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
