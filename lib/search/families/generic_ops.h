// generic_ops.h: the fixed code of the generic code generator (generic.cpp), for the cpu and for CUDA alike. Every
// op of the spec language as a plain loop over independent work items (an element, a row, a group), so that any
// valid graph becomes a correct kernel: the root of a search that no family covers, and what the LLM proposer
// rewrites. Correct first, simple to read; the families and the search make it fast.
//
// A tensor is a kf_view (data, dtype, shape, strides in elements); every load converts to kf_acc (float, or double
// when the graph holds float64) and every store rounds from it, so the ops read inputs of any layout and write
// outputs of any dtype. Intermediate results live in contiguous kf_acc buffers.
//
// The emitter (generic.cpp) defines before this text KF_GENERIC_CUDA (0 or 1), KF_ACC_TYPE (kf_acc) and KF_ACC_CODE
// (its kf_abi.h dtype code) and pool_window.h, and writes after it the spec's elementwise stages (in namespace kfk too)
// and kf_launch.
#ifndef KF_EMITTED
#define KF_GENERIC_CUDA 0
#define KF_ACC_TYPE float
#define KF_ACC_CODE KF_FLOAT32
#define KF_POOLS 1
#define KF_POOL_FN static inline
#include "pool_window.h"
#endif  // KF_EMITTED
#include "kf_abi.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if KF_GENERIC_CUDA
#include <cuda_runtime.h>
#define KF_HD __host__ __device__
#else
#include <omp.h>
#define KF_HD
#endif

namespace kfk {

typedef KF_ACC_TYPE kf_acc;

// ---- dtype conversions (bit operations; round to nearest even, NaN stays NaN) ----
KF_HD inline float kf_bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
KF_HD inline uint32_t kf_f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
KF_HD inline float kf_from_bf16(uint16_t h) { return kf_bits_f((uint32_t)h << 16); }
KF_HD inline uint16_t kf_to_bf16(float f) {
  uint32_t u = kf_f_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
KF_HD inline float kf_from_f16(uint16_t h) {
  float f = kf_bits_f((uint32_t)(h & 0x7fffu) << 13) * 5.192296858534828e+33f;  // 2^112: rebias the exponent
  uint32_t u = kf_f_bits(f);
  if (f >= 65536.0f) u |= 0x7f800000u;  // was Inf/NaN: keep it so
  return kf_bits_f(u | ((uint32_t)(h & 0x8000u) << 16));
}
KF_HD inline uint16_t kf_to_f16(float f) {
  uint32_t u = kf_f_bits(f);
  uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);  // rounds to infinity
  if (a < 0x38800000u)                                   // below 2^-14: subnormal or zero
    return (uint16_t)(s | (uint32_t)rintf(kf_bits_f(a) * 16777216.0f));
  a += 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(s | ((a - (112u << 23)) >> 13));
}
// A float rounded through a type (what eager's intermediate result of that type holds).
KF_HD inline kf_acc kf_round(int dtype, kf_acc v) {
  switch (dtype) {
    case KF_FLOAT16:
      return (kf_acc)kf_from_f16(kf_to_f16((float)v));
    case KF_BFLOAT16:
      return (kf_acc)kf_from_bf16(kf_to_bf16((float)v));
    case KF_FLOAT32:
      return (kf_acc)(float)v;
    case KF_INT32:
      return (kf_acc)(int32_t)v;
    case KF_INT64:
      return (kf_acc)(int64_t)v;
    case KF_UINT8:
      return (kf_acc)(uint8_t)v;
    default:
      return v;
  }
}

// ---- math, in kf_acc ----
KF_HD inline float kf_exp(float x) { return expf(x); }
KF_HD inline double kf_exp(double x) { return exp(x); }
KF_HD inline float kf_log(float x) { return logf(x); }
KF_HD inline double kf_log(double x) { return log(x); }
KF_HD inline float kf_tanh(float x) { return tanhf(x); }
KF_HD inline double kf_tanh(double x) { return tanh(x); }
KF_HD inline float kf_erf(float x) { return erff(x); }
KF_HD inline double kf_erf(double x) { return erf(x); }
KF_HD inline float kf_sqrt(float x) { return sqrtf(x); }
KF_HD inline double kf_sqrt(double x) { return sqrt(x); }
KF_HD inline kf_acc kf_sigmoid(kf_acc x) { return (kf_acc)1 / ((kf_acc)1 + kf_exp(-x)); }
KF_HD inline kf_acc kf_relu(kf_acc x) { return x != x ? x : (x > 0 ? x : (kf_acc)0); }  // NaN stays NaN
KF_HD inline kf_acc kf_gelu(kf_acc x) {
  return (kf_acc)0.5 * x * ((kf_acc)1 + kf_erf(x * (kf_acc)0.70710678118654752));
}
KF_HD inline kf_acc kf_gelu_tanh(kf_acc x) {
  return (kf_acc)0.5 * x * ((kf_acc)1 + kf_tanh((kf_acc)0.79788456080286536 * (x + (kf_acc)0.044715 * x * x * x)));
}
// NaN orders above everything, as in torch's sort and topk.
KF_HD inline bool kf_greater(kf_acc a, kf_acc b) { return a > b || (a != a && b == b); }

// ---- views ----
struct kf_view {
  void* data;
  int dtype;
  int ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t stride[KF_MAX_DIMS];
};

KF_HD inline kf_acc kf_load(const kf_view& t, int64_t off) {
  switch (t.dtype) {
    case KF_FLOAT32:
      return (kf_acc)((const float*)t.data)[off];
    case KF_FLOAT16:
      return (kf_acc)kf_from_f16(((const uint16_t*)t.data)[off]);
    case KF_BFLOAT16:
      return (kf_acc)kf_from_bf16(((const uint16_t*)t.data)[off]);
    case KF_FLOAT64:
      return (kf_acc)((const double*)t.data)[off];
    case KF_INT32:
      return (kf_acc)((const int32_t*)t.data)[off];
    case KF_INT64:
      return (kf_acc)((const int64_t*)t.data)[off];
    default:
      return (kf_acc)((const uint8_t*)t.data)[off];
  }
}
KF_HD inline void kf_store(const kf_view& t, int64_t off, kf_acc v) {
  switch (t.dtype) {
    case KF_FLOAT32:
      ((float*)t.data)[off] = (float)v;
      break;
    case KF_FLOAT16:
      ((uint16_t*)t.data)[off] = kf_to_f16((float)v);
      break;
    case KF_BFLOAT16:
      ((uint16_t*)t.data)[off] = kf_to_bf16((float)v);
      break;
    case KF_FLOAT64:
      ((double*)t.data)[off] = (double)v;
      break;
    case KF_INT32:
      ((int32_t*)t.data)[off] = (int32_t)v;
      break;
    case KF_INT64:
      ((int64_t*)t.data)[off] = (int64_t)v;
      break;
    default:
      ((uint8_t*)t.data)[off] = (uint8_t)v;
      break;
  }
}

// The offset in t of the element at multi-index idx of a (broadcast) shape of rank `rank`: t's dims are aligned to
// the right and its size-1 dims broadcast.
KF_HD inline int64_t kf_offset(const kf_view& t, const int64_t* idx, int rank) {
  int64_t off = 0;
  const int lead = rank - t.ndim;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] != 1) off += idx[d + lead] * t.stride[d];
  return off;
}
// The multi-index of the i-th element (row-major) of shape.
KF_HD inline void kf_unravel(int64_t i, const int64_t* shape, int rank, int64_t* idx) {
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    idx[d] = i % n;
    i /= n;
  }
}

inline int64_t kf_numel(const kf_view& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}
inline kf_view kf_view_of(const kf_tensor& t) {
  kf_view v;
  v.data = t.data;
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  for (int d = 0; d < KF_MAX_DIMS; ++d) {
    v.shape[d] = d < t.ndim ? t.shape[d] : 1;
    v.stride[d] = d < t.ndim ? t.stride[d] : 0;
  }
  return v;
}
// A contiguous view of `shape` (data set later).
inline kf_view kf_contiguous(int dtype, int ndim, const int64_t* shape) {
  kf_view v;
  v.data = 0;
  v.dtype = dtype;
  v.ndim = ndim;
  int64_t s = 1;
  for (int d = KF_MAX_DIMS - 1; d >= 0; --d) {
    v.shape[d] = d < ndim ? shape[d] : 1;
    v.stride[d] = d < ndim ? s : 0;
    if (d < ndim) s *= shape[d];
  }
  return v;
}
inline bool kf_same_shape(const kf_view& a, const kf_view& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}
// Broadcasts b's shape into a (right-aligned); false when they do not broadcast.
inline bool kf_broadcast_into(kf_view* a, const kf_view& b) {
  const int rank = a->ndim > b.ndim ? a->ndim : b.ndim;
  int64_t out[KF_MAX_DIMS];
  for (int d = 0; d < rank; ++d) {
    const int ia = d - (rank - a->ndim), ib = d - (rank - b.ndim);
    const int64_t x = ia >= 0 ? a->shape[ia] : 1, y = ib >= 0 ? b.shape[ib] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[d] = x == 1 ? y : x;
  }
  *a = kf_contiguous(a->dtype, rank, out);
  return true;
}

// v with a size-1 dim inserted at pos (stride 0): a vector as a one-row or one-column matrix.
inline kf_view kf_insert_dim(kf_view v, int pos) {
  for (int d = v.ndim; d > pos; --d) {
    v.shape[d] = v.shape[d - 1];
    v.stride[d] = v.stride[d - 1];
  }
  v.shape[pos] = 1;
  v.stride[pos] = 0;
  v.ndim += 1;
  return v;
}
// The shape of a @ b (both of rank >= 2, batch dims broadcast) as a contiguous view of `dtype`; false when the
// inner dims differ or the batch dims do not broadcast.
inline bool kf_matmul_shape(const kf_view& a, const kf_view& b, int dtype, kf_view* y) {
  if (a.shape[a.ndim - 1] != b.shape[b.ndim - 2]) return false;
  kf_view ab = kf_contiguous(dtype, a.ndim - 2, a.shape), bb = kf_contiguous(dtype, b.ndim - 2, b.shape);
  if (!kf_broadcast_into(&ab, bb)) return false;
  int64_t shape[KF_MAX_DIMS];
  for (int d = 0; d < ab.ndim; ++d) shape[d] = ab.shape[d];
  shape[ab.ndim] = a.shape[a.ndim - 2];
  shape[ab.ndim + 1] = b.shape[b.ndim - 1];
  *y = kf_contiguous(dtype, ab.ndim + 2, shape);
  return true;
}

// ---- running work items: item(i) for i in [0, n) ----
#if KF_GENERIC_CUDA
template <typename Item>
__global__ void kf_items_kernel(int64_t n, Item item) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) item(i);
}
template <typename Item>
inline int kf_items(int64_t n, const Item& item, void* stream, int block) {
  if (n <= 0) return 0;
  int64_t grid = (n + block - 1) / block;
  if (grid > 65535 * 16) grid = 65535 * 16;
  kf_items_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)stream>>>(n, item);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
inline void* kf_alloc(int64_t bytes, void* stream) {
  void* p = 0;
  if (cudaMallocAsync(&p, bytes > 0 ? bytes : 1, (cudaStream_t)stream) != cudaSuccess) return 0;
  return p;
}
inline void kf_free(void* p, void* stream) { cudaFreeAsync(p, (cudaStream_t)stream); }
#else
template <typename Item>
inline int kf_items(int64_t n, const Item& item, void* stream, int threads) {
  (void)stream;
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1 + n / (8 * threads)) num_threads(threads) if (n > 1)
  for (int64_t i = 0; i < n; ++i) item(i);
  return 0;
}
inline void* kf_alloc(int64_t bytes, void* stream) {
  (void)stream;
  return malloc(bytes > 0 ? (size_t)bytes : 1);
}
inline void kf_free(void* p, void* stream) {
  (void)stream;
  free(p);
}
#endif

// ---- the ops that are not elementwise, each over its work items ----

// softmax / log_softmax along dim: an item is one row (every index but dim's).
struct kf_softmax_item {
  kf_view x, y;
  int dim;
  bool log;
  KF_HD void operator()(int64_t i) const {
    int64_t shape[KF_MAX_DIMS], idx[KF_MAX_DIMS];
    for (int d = 0; d < x.ndim; ++d) shape[d] = d == dim ? 1 : x.shape[d];
    kf_unravel(i, shape, x.ndim, idx);
    const int64_t n = x.ndim ? x.shape[dim] : 1;
    const int64_t xs = x.ndim ? x.stride[dim] : 0, ys = y.ndim ? y.stride[dim] : 0;
    const int64_t xo = kf_offset(x, idx, x.ndim), yo = kf_offset(y, idx, x.ndim);
    kf_acc m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      kf_acc v = kf_load(x, xo + j * xs);
      if (v > m || v != v) m = v;
    }
    double s = 0;  // statistics in double: a root that is exact enough for every verifier rule
    for (int64_t j = 0; j < n; ++j)
      s += m == -INFINITY ? kf_exp(kf_load(x, xo + j * xs)) : kf_exp(kf_load(x, xo + j * xs) - m);
    const kf_acc ls = (kf_acc)kf_log(s);
    for (int64_t j = 0; j < n; ++j) {
      kf_acc v = kf_load(x, xo + j * xs);
      kf_acc r =
          m == -INFINITY ? (log ? v - ls : (kf_acc)(kf_exp(v) / s)) : (log ? v - m - ls : (kf_acc)(kf_exp(v - m) / s));
      kf_store(y, yo + j * ys, r);
    }
  }
};

// layer_norm / rms_norm over the trailing `nd` dims: an item is one row of their product. Weight and bias have the
// normalized shape (data null when absent).
struct kf_row_norm_item {
  kf_view x, y, w, b;
  int nd;
  bool rms;
  kf_acc eps;
  KF_HD void operator()(int64_t i) const {
    int64_t n = 1;
    for (int d = x.ndim - nd; d < x.ndim; ++d) n *= x.shape[d];
    int64_t idx[KF_MAX_DIMS], widx[KF_MAX_DIMS];
    // The row's elements: outer index i, inner index j (row-major over the normalized dims).
    auto at = [&](const kf_view& t, int64_t j, bool param) -> int64_t {
      int64_t rem = j;
      for (int d = x.ndim - 1; d >= x.ndim - nd; --d) {
        widx[d - (x.ndim - nd)] = rem % x.shape[d];
        idx[d] = rem % x.shape[d];
        rem /= x.shape[d];
      }
      int64_t o = i;
      for (int d = x.ndim - nd - 1; d >= 0; --d) {
        idx[d] = o % x.shape[d];
        o /= x.shape[d];
      }
      return param ? kf_offset(t, widx, nd) : kf_offset(t, idx, x.ndim);
    };
    double mean = 0, sq = 0;  // statistics in double: rows of one value normalize to exactly 0
    for (int64_t j = 0; j < n; ++j) {
      double v = kf_load(x, at(x, j, false));
      mean += v;
      sq += v * v;
    }
    mean /= (double)n;
    double var = 0;
    if (!rms)
      for (int64_t j = 0; j < n; ++j) {
        double v = kf_load(x, at(x, j, false)) - mean;
        var += v * v;
      }
    const double inv = rms ? 1.0 / kf_sqrt(sq / (double)n + (double)eps) : 1.0 / kf_sqrt(var / (double)n + (double)eps);
    for (int64_t j = 0; j < n; ++j) {
      double d = kf_load(x, at(x, j, false));
      kf_acc v = (kf_acc)(rms ? d * inv : (d - mean) * inv);
      if (w.data) v *= kf_load(w, at(w, j, true));
      if (b.data) v += kf_load(b, at(b, j, true));
      kf_store(y, at(y, j, false), v);
    }
  }
};

// group_norm over [N, C, *]: an item is one (n, group).
struct kf_group_norm_item {
  kf_view x, y, w, b;
  int64_t groups;
  kf_acc eps;
  KF_HD void operator()(int64_t i) const {
    const int64_t C = x.shape[1], cpg = C / groups, n0 = i / groups, g = i % groups;
    int64_t spatial = 1;
    for (int d = 2; d < x.ndim; ++d) spatial *= x.shape[d];
    const int64_t count = cpg * spatial;
    int64_t idx[KF_MAX_DIMS];
    auto at = [&](const kf_view& t, int64_t j) -> int64_t {  // j-th element of the group
      idx[0] = n0;
      idx[1] = g * cpg + j / spatial;
      int64_t rem = j % spatial;
      for (int d = x.ndim - 1; d >= 2; --d) {
        idx[d] = rem % x.shape[d];
        rem /= x.shape[d];
      }
      return kf_offset(t, idx, x.ndim);
    };
    double mean = 0;  // statistics in double: groups of one value normalize to exactly 0
    for (int64_t j = 0; j < count; ++j) mean += kf_load(x, at(x, j));
    mean /= (double)count;
    double var = 0;
    for (int64_t j = 0; j < count; ++j) {
      double v = kf_load(x, at(x, j)) - mean;
      var += v * v;
    }
    const double inv = 1.0 / kf_sqrt(var / (double)count + (double)eps);
    for (int64_t j = 0; j < count; ++j) {
      kf_acc v = (kf_acc)((kf_load(x, at(x, j)) - mean) * inv);
      const int64_t c = g * cpg + j / spatial;
      if (w.data) v *= kf_load(w, c * w.stride[0]);
      if (b.data) v += kf_load(b, c * b.stride[0]);
      kf_store(y, at(y, j), v);
    }
  }
};

// topk along dim: an item is one row; the k largest (or smallest), in order, ties to the lower index. Each pick is
// the best element that orders after the previous pick, so no memory of the picked set is needed.
struct kf_topk_item {
  kf_view x, values, indices;
  int dim;
  int64_t k;
  bool largest;
  KF_HD bool before(kf_acc a, int64_t ia, kf_acc b, int64_t ib) const {  // a orders before b
    if (a == b || (a != a && b != b)) return ia < ib;
    return largest ? kf_greater(a, b) : kf_greater(b, a);
  }
  KF_HD void operator()(int64_t i) const {
    int64_t shape[KF_MAX_DIMS], idx[KF_MAX_DIMS];
    for (int d = 0; d < x.ndim; ++d) shape[d] = d == dim ? 1 : x.shape[d];
    kf_unravel(i, shape, x.ndim, idx);
    const int64_t n = x.ndim ? x.shape[dim] : 1, xs = x.ndim ? x.stride[dim] : 0;
    const int64_t vs = values.ndim ? values.stride[dim] : 0, is = indices.ndim ? indices.stride[dim] : 0;
    const int64_t xo = kf_offset(x, idx, x.ndim), vo = kf_offset(values, idx, x.ndim),
                  io = kf_offset(indices, idx, x.ndim);
    kf_acc prev = 0;
    int64_t prev_i = -1;
    for (int64_t r = 0; r < k; ++r) {
      kf_acc best = 0;
      int64_t best_i = -1;
      for (int64_t j = 0; j < n; ++j) {
        kf_acc v = kf_load(x, xo + j * xs);
        if (prev_i >= 0 && !before(prev, prev_i, v, j)) continue;
        if (best_i < 0 || before(v, j, best, best_i)) best = v, best_i = j;
      }
      kf_store(values, vo + r * vs, best);
      kf_store(indices, io + r * is, (kf_acc)best_i);
      prev = best;
      prev_i = best_i;
    }
  }
};

#ifdef KF_POOLS
// adaptive_avg_pool2d, avg_pool2d or max_pool2d over the last two dims: an item is one output element, its window
// pool_window.h's (fixed: avg_pool2d's or max_pool2d's kernel, stride and padding; else adaptive; max: the largest).
struct kf_pool_item {
  kf_view x, y;
  bool fixed;
  int64_t kh, kw, sh, sw, ph, pw;
  bool incl_pad;
  int64_t divisor;
  bool max;
  KF_HD void operator()(int64_t i) const {
    int64_t idx[KF_MAX_DIMS];
    const int r = y.ndim;
    kf_unravel(i, y.shape, r, idx);
    const int64_t H = x.shape[r - 2], W = x.shape[r - 1], OH = y.shape[r - 2], OW = y.shape[r - 1];
    const int64_t oh = idx[r - 2], ow = idx[r - 1];
    const kf_pool_win rows = kf_pool_window(fixed, oh, H, OH, kh, sh, ph),
                      cols = kf_pool_window(fixed, ow, W, OW, kw, sw, pw);
    kf_acc s = kf_pool_start<kf_acc>(max);
    for (int64_t h = rows.lo; h < rows.hi; ++h)
      for (int64_t w = cols.lo; w < cols.hi; ++w) {
        idx[r - 2] = h;
        idx[r - 1] = w;
        s = kf_pool_step<kf_acc>(s, kf_load(x, kf_offset(x, idx, r)), max);
      }
    idx[r - 2] = oh;
    idx[r - 1] = ow;
    kf_store(y, kf_offset(y, idx, r), s / (kf_acc)kf_pool_count(rows, cols, fixed, incl_pad, divisor, max));
  }
};
#endif  // KF_POOLS

// A reshape (flatten): the i-th element of x (row-major) is the i-th of y.
struct kf_reshape_item {
  kf_view x, y;
  KF_HD void operator()(int64_t i) const {
    int64_t ix[KF_MAX_DIMS], iy[KF_MAX_DIMS];
    kf_unravel(i, x.shape, x.ndim, ix);
    kf_unravel(i, y.shape, y.ndim, iy);
    kf_store(y, kf_offset(y, iy, y.ndim), kf_load(x, kf_offset(x, ix, x.ndim)));
  }
};

// y[..., m, n] = sum_k a[..., m, k] * b[..., k, n] (+ bias[n]), batch dims broadcast: an item is one output element.
// linear is this with b the transposed weight (strides swapped). All three views have rank y.ndim >= 2.
struct kf_matmul_item {
  kf_view a, b, bias, y;
  KF_HD void operator()(int64_t i) const {
    int64_t idx[KF_MAX_DIMS];
    const int r = y.ndim;
    kf_unravel(i, y.shape, r, idx);
    const int64_t m = idx[r - 2], n = idx[r - 1], K = a.shape[a.ndim - 1];
    idx[r - 1] = 0;
    const int64_t ao = kf_offset(a, idx, r);
    idx[r - 2] = 0;
    idx[r - 1] = n;
    const int64_t bo = kf_offset(b, idx, r);
    const int64_t as = a.stride[a.ndim - 1], bs = b.stride[b.ndim - 2];
    double s = 0;  // in double: a float sum over a long K drifts past float32's tolerance
    for (int64_t k = 0; k < K; ++k) s += (double)kf_load(a, ao + k * as) * (double)kf_load(b, bo + k * bs);
    if (bias.data) s += (double)kf_load(bias, n * bias.stride[0]);
    idx[r - 2] = m;
    idx[r - 1] = n;
    kf_store(y, kf_offset(y, idx, r), (kf_acc)s);
  }
};

}  // namespace kfk
