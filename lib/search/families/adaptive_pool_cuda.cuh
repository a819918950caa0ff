// adaptive_pool_cuda.cuh: the fixed code of adaptive_pool_cuda, emitted after the variant's constants, types and
// casts (adaptive_pool_cuda.cpp): average pooling of x [N, C, H, W] (or [C, H, W]) to a contiguous [N, C, OH, OW]
// over torch's adaptive windows [floor(i H / OH), ceil((i + 1) H / OH)). A thread an output value, any strides:
//  - channels_last x (a pixel's channels contiguous): consecutive threads take consecutive channels of one output
//    position, so each load of the window is coalesced across the warp (the stores to y are C apart);
//  - otherwise: consecutive threads take consecutive outputs of a plane (neighbouring windows of a row).
// With `k_cvec` > 1 a channels_last thread owns that many neighbouring channels (one vector load a pixel).
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// typical values of what the family emits before it; kforge emits it without these lines.
#include "adaptive_pool_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

struct apool_args {
  const in_t* x;
  out_t* y;
  int64_t n, c, h, w;      // x's sizes (n = 1 for a 3-d x)
  int64_t sn, sc, sh, sw;  // x's strides, in elements
};

__device__ __forceinline__ int64_t win_lo(int64_t i, int64_t len, int64_t n) { return i * len / n; }
__device__ __forceinline__ int64_t win_hi(int64_t i, int64_t len, int64_t n) { return ((i + 1) * len + n - 1) / n; }

// Output (n, c .. c + V - 1, oi, oj): the window's mean, cast and stored.
template <int V>
__device__ __forceinline__ void apool_one(const apool_args& a, int64_t n, int64_t c, int64_t oi, int64_t oj) {
  const int64_t h0 = win_lo(oi, a.h, k_oh), h1 = win_hi(oi, a.h, k_oh);
  const int64_t w0 = win_lo(oj, a.w, k_ow), w1 = win_hi(oj, a.w, k_ow);
  float s[V];
#pragma unroll
  for (int v = 0; v < V; ++v) s[v] = 0.f;
  const in_t* base = a.x + n * a.sn + c * a.sc;
  for (int64_t hh = h0; hh < h1; ++hh)
    for (int64_t ww = w0; ww < w1; ++ww) {
      float xv[V];
      load_vec<in_t, V>(base + hh * a.sh + ww * a.sw, xv);
#pragma unroll
      for (int v = 0; v < V; ++v) s[v] += xv[v];
    }
  const float count = (float)((h1 - h0) * (w1 - w0));
#pragma unroll
  for (int v = 0; v < V; ++v) a.y[((n * a.c + c + v) * k_oh + oi) * k_ow + oj] = from_f<out_t>(finalize(s[v] / count));
}

template <int V>
__global__ void __launch_bounds__(k_threads) apool_cl_kernel(apool_args a) {
  wait_prior_grid<k_pdl>();
  const int64_t cv = a.c / V, total = a.n * k_oh * k_ow * cv;
  for (int64_t t = (int64_t)blockIdx.x * k_threads + threadIdx.x; t < total; t += (int64_t)gridDim.x * k_threads) {
    const int64_t c = t % cv * V, pos = t / cv;
    apool_one<V>(a, pos / (k_oh * k_ow), c, pos / k_ow % k_oh, pos % k_ow);
  }
}

__global__ void __launch_bounds__(k_threads) apool_planes_kernel(apool_args a) {
  wait_prior_grid<k_pdl>();
  const int64_t total = a.n * a.c * k_oh * k_ow;
  for (int64_t t = (int64_t)blockIdx.x * k_threads + threadIdx.x; t < total; t += (int64_t)gridDim.x * k_threads) {
    const int64_t plane = t / (k_oh * k_ow);
    apool_one<1>(a, plane / a.c, plane % a.c, t / k_ow % k_oh, t % k_ow);
  }
}

inline int apool_blocks(int64_t items) {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 1;
  }();
  const int64_t want = (items + k_threads - 1) / k_threads, cap = (int64_t)sms * k_waves * (2048 / k_threads);
  return (int)(want < cap ? (want > 0 ? want : 1) : cap);
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  const kf_tensor& y = out[0];
  if (x.dtype != dtype_code<in_t>::value || (x.ndim != 3 && x.ndim != 4) || y.dtype != dtype_code<out_t>::value)
    return 1;
  const int d0 = x.ndim - 3;  // index of C
  apool_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.y = static_cast<out_t*>(y.data);
  a.n = x.ndim == 4 ? x.shape[0] : 1;
  a.c = x.shape[d0], a.h = x.shape[d0 + 1], a.w = x.shape[d0 + 2];
  a.sn = x.ndim == 4 ? x.stride[0] : 0;
  a.sc = x.stride[d0], a.sh = x.stride[d0 + 1], a.sw = x.stride[d0 + 2];
  if (!contiguous(y) || numel(y) != a.n * a.c * k_oh * k_ow) return 1;
  if (a.n * a.c == 0) return 0;
  if (a.h == 0 || a.w == 0) return 1;  // torch refuses an empty window
  if (a.sc == 1 && a.c > 1) {
    // channels_last: vectors of k_cvec channels where the channels and every pixel's address allow them.
    const bool vec = k_cvec > 1 && a.c % k_cvec == 0 && a.sh % k_cvec == 0 && a.sw % k_cvec == 0 &&
                     a.sn % k_cvec == 0 && aligned(a.x, vec_align<in_t, k_cvec>());
    if (vec)
      return launch_kernel<k_pdl>(apool_cl_kernel<k_cvec>, dim3(apool_blocks(a.n * k_oh * k_ow * a.c / k_cvec)),
                                  k_threads, 0, s, a);
    return launch_kernel<k_pdl>(apool_cl_kernel<1>, dim3(apool_blocks(a.n * k_oh * k_ow * a.c)), k_threads, 0, s, a);
  }
  return launch_kernel<k_pdl>(apool_planes_kernel, dim3(apool_blocks(a.n * a.c * k_oh * k_ow)), k_threads, 0, s, a);
}

}  // namespace kfk
