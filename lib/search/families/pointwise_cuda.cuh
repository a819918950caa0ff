// pointwise_cuda.cuh: the fixed code of the pointwise family (pointwise_cuda.cpp): any chain of elementwise ops in
// one pass, one read of each operand element and one write of each result. Emitted before it (namespace kfk):
//   V, LOADS, BLOCK, WAVES, STREAM, PDL, SPREAD, NOPND  the variant's knobs and the operand count
//   KF_PW_MINB (a macro)                  the occupancy knob's minimum blocks an SM (1: none)
//   out_t, t0 .. t<NOPND-1>                the stored types; operand 0 is the chain's input
//   pw_raw                                 every operand's V elements as loaded (packed<t_k, V>, unconverted)
//   kf_vec_load(const pw_args&, int64_t i, pw_raw&)  issues the loads of the V elements at i of every operand
//   kf_vec_math(const pw_raw&, float* y)            V results from them (every operand full or row)
//   kf_one(const pw_args&, int64_t i)             one result from element i, any layout (broadcast, strided)
// declared there and defined after this file (they read pw_args).
// The loads are issued apart from the math (v5): a conversion of operand 0's values placed before operand 1's
// address (a branch: full or row) waited for operand 0's load, so each operand cost its own memory latency (SASS
// of the stored SwiGLU winner: the second LDG.128 pair after the first pair's PRMTs; on the H200, SwiGLU T=1 went
// from 1.58 to 1.50 us without it, docs/kernel-notes.md).
// Two paths, chosen at launch: vectors (every operand is the output's shape or a row of its trailing dims,
// contiguous and aligned; LOADS independent vectors in flight per thread) and, for anything else, one element a
// thread with its offsets computed from the strides. The tail past the last whole vector takes the scalar path.
#ifndef KF_EMITTED
#include "pointwise_cuda_stub.cuh"
#endif  // KF_EMITTED

namespace kfk {

// An operand as the launch classified it: full (the output's shape, contiguous), row (a contiguous block of the
// output's trailing dims, broadcast over the leading ones: element i reads i % inner) or general.
enum { pw_full = 0, pw_row = 1, pw_general = 2 };
struct pw_opnd {
  const void* p;
  int kind;
  int64_t inner;
  int ndim;
  int64_t shape[KF_MAX_DIMS], stride[KF_MAX_DIMS];
};
struct pw_args {
  pw_opnd o[NOPND];
  out_t* y;
  int64_t n;
  int ndim;  // the output's shape (the general path unravels element indices over it)
  int64_t shape[KF_MAX_DIMS], stride[KF_MAX_DIMS];
};

// The offset of element i (row-major over the output's shape) in an operand, broadcast dims read once.
__device__ __forceinline__ int64_t pw_offset(const pw_opnd& t, const pw_args& a, int64_t i) {
  if (t.kind == pw_full) return i;
  if (t.kind == pw_row) return i % t.inner;
  int64_t off = 0;
  const int lead = a.ndim - t.ndim;
  for (int d = a.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % a.shape[d];
    i /= a.shape[d];
    const int td = d - lead;
    if (td >= 0 && t.shape[td] != 1) off += idx * t.stride[td];
  }
  return off;
}
__device__ __forceinline__ int64_t pw_out_offset(const pw_args& a, int64_t i) {
  int64_t off = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    off += (i % a.shape[d]) * a.stride[d];
    i /= a.shape[d];
  }
  return off;
}

template <typename T>
__device__ __forceinline__ float pw_load_one(const pw_opnd& t, const pw_args& a, int64_t i) {
  return to_f(static_cast<const T*>(t.p)[pw_offset(t, a, i)]);
}
template <typename T>
__device__ __forceinline__ const T* pw_vec_ptr(const pw_opnd& t, int64_t i) {
  return static_cast<const T*>(t.p) + (t.kind == pw_row ? i % t.inner : i);
}

// Vector path: each thread takes LOADS vectors of V elements a step, BLOCK threads apart (coalesced), the loads of
// every vector and operand issued before any value is converted; then the scalar tail [tail_start, n).
// (Templates, so that kf_vec and kf_one, which the emitter defines after this file, are needed only where kf_launch
// instantiates them.)
// The occupancy knob: a minimum of blocks an SM caps the registers. Only when asked: `__launch_bounds__(128, 1)` is
// not `__launch_bounds__(128)` to ptxas (GeGLU: 52 registers against 39).
#if KF_PW_MINB > 1
#define KF_PW_BOUNDS(nt) __launch_bounds__(nt, (nt) == BLOCK ? KF_PW_MINB : 1)
#else
#define KF_PW_BOUNDS(nt) __launch_bounds__(nt)
#endif

// NT: the block, BLOCK threads or a warp where SPREAD narrowed it (pw_grid); a constant in the index math.
template <int NT>
__global__ void KF_PW_BOUNDS(NT) pw_vec_kernel(pw_args a, int64_t nvec, int64_t tail_start) {
  wait_prior_grid<PDL>();
  constexpr int nt = NT;
  const int64_t step = (int64_t)gridDim.x * nt * LOADS;
  for (int64_t base = (int64_t)blockIdx.x * nt * LOADS + threadIdx.x; base < nvec; base += step) {
    pw_raw raw[LOADS];
    // Every step loads (one past the end re-reads vector 0): a branch around each load kept it waiting for the
    // math of the step before, one memory latency a step, where straight code issues all LOADS at once.
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
      const int64_t j = base + (int64_t)l * nt;
      kf_vec_load(a, (j < nvec ? j : 0) * V, raw[l]);
    }
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
      const int64_t j = base + (int64_t)l * nt;
      float y[V];
      kf_vec_math(raw[l], y);
      if (j < nvec) store_vec<out_t, V, STREAM>(a.y + j * V, y);
    }
  }
  for (int64_t i = tail_start + (int64_t)blockIdx.x * nt + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * nt)
    a.y[i] = from_f<out_t>(kf_one(a, i));
}

// General path: one element a thread, grid-stride.
template <int NT>
__global__ void KF_PW_BOUNDS(NT) pw_one_kernel(pw_args a) {
  wait_prior_grid<PDL>();
  constexpr int nt = NT;
  for (int64_t i = (int64_t)blockIdx.x * nt + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * nt)
    a.y[pw_out_offset(a, i)] = from_f<out_t>(kf_one(a, i));
}

// The GPU's SMs, read at the first launch. Host state at namespace scope with internal linkage (CONTRIBUTING.md):
// a function-local static of an inline function would be one object for every candidate library in the worker.
static int g_pw_sms = 0;
inline int pw_sms() {
  if (!g_pw_sms) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_pw_sms, cudaDevAttrMultiProcessorCount, dev);
    if (g_pw_sms <= 0) g_pw_sms = 132;
  }
  return g_pw_sms;
}

struct pw_launch {
  int64_t blocks;
  int threads;
};

// Blocks for `items` thread-items: enough for one item each (WAVES 0), or WAVES waves of resident blocks. SPREAD: a
// one-shot grid of fewer blocks than SMs launches blocks of a warp instead, so that a small tensor (a decode step) is
// read by many SMs at once rather than by a few, each waiting on its own requests.
inline pw_launch pw_grid(int64_t items) {
  int threads = BLOCK;
  int64_t need = (items + threads - 1) / threads;
  if (need < 1) need = 1;
  if (WAVES == 0) {
    if (SPREAD && BLOCK > 32 && need < pw_sms()) {
      threads = 32;
      need = (items + 31) / 32;
    }
    return {need < 2147483647 ? need : 2147483647, threads};
  }
  const int64_t resident = (int64_t)pw_sms() * (2048 / BLOCK) * WAVES;
  return {need < resident ? need : resident, threads};
}

// Classifies an operand against the output's shape (right-aligned, as broadcasting reads it).
inline pw_opnd pw_classify(const kf_tensor& t, const kf_tensor& y) {
  pw_opnd o;
  o.p = t.data;
  o.ndim = t.ndim;
  for (int d = 0; d < KF_MAX_DIMS; ++d) {
    o.shape[d] = d < t.ndim ? t.shape[d] : 1;
    o.stride[d] = d < t.ndim ? t.stride[d] : 0;
  }
  o.kind = pw_general;
  o.inner = 1;
  if (!contiguous(t)) return o;
  const int lead = y.ndim - t.ndim;
  int first = t.ndim;  // the first dim of t's trailing block that matches y's
  for (int d = t.ndim - 1; d >= 0 && t.shape[d] == y.shape[d + lead]; --d) first = d;
  for (int d = 0; d < first; ++d)
    if (t.shape[d] != 1) return o;
  for (int d = first; d < t.ndim; ++d) o.inner *= t.shape[d];
  o.kind = first == 0 && lead == 0 ? pw_full : pw_row;
  return o;
}

template <int = 0>
inline int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != KF_N_INPUTS || n_out != 1) return 1;
  const kf_tensor& y = out[0];
  if (y.dtype != dtype_code<out_t>::value || y.ndim != KF_OUT_RANK) return 1;
  pw_args a;
  a.y = static_cast<out_t*>(y.data);
  a.n = numel(y);
  a.ndim = y.ndim;
  for (int d = 0; d < KF_MAX_DIMS; ++d) {
    a.shape[d] = d < y.ndim ? y.shape[d] : 1;
    a.stride[d] = d < y.ndim ? y.stride[d] : 0;
  }
  bool vec = contiguous(y) && reinterpret_cast<uintptr_t>(y.data) % vec_align<out_t, V>() == 0;
  for (int k = 0; k < NOPND; ++k) {
    const kf_tensor& t = in[kf_operand_input[k]];
    if (t.dtype != kf_operand_dtype[k] || t.ndim > y.ndim) return 1;
    for (int d = 0; d < t.ndim; ++d)
      if (t.shape[d] != 1 && t.shape[d] != y.shape[d + y.ndim - t.ndim]) return 1;
    a.o[k] = pw_classify(t, y);
    vec = vec && a.o[k].kind != pw_general && (a.o[k].kind == pw_full || a.o[k].inner % V == 0) &&
          reinterpret_cast<uintptr_t>(t.data) % kf_operand_align[k] == 0;
  }
  if (a.n == 0) return 0;
  if (vec) {
    const int64_t nvec = a.n / V;
    const pw_launch g = pw_grid((nvec + LOADS - 1) / LOADS);
    if constexpr (SPREAD && BLOCK != 32)  // the warp-wide kernel is instantiated only where it can run
      if (g.threads == 32)
        return launch_kernel<PDL>(pw_vec_kernel<32>, dim3((unsigned)g.blocks), 32, 0, s, a, nvec, nvec * V);
    return launch_kernel<PDL>(pw_vec_kernel<BLOCK>, dim3((unsigned)g.blocks), BLOCK, 0, s, a, nvec, nvec * V);
  }
  const pw_launch g = pw_grid(a.n);
  if constexpr (SPREAD && BLOCK != 32)
    if (g.threads == 32) return launch_kernel<PDL>(pw_one_kernel<32>, dim3((unsigned)g.blocks), 32, 0, s, a);
  return launch_kernel<PDL>(pw_one_kernel<BLOCK>, dim3((unsigned)g.blocks), BLOCK, 0, s, a);
}

}  // namespace kfk
