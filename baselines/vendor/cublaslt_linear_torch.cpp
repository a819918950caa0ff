// cuBLASLt for linear (y = x W^T + b) in the vendor baseline: one matmul with the bias fused as an epilogue,
// fp32 accumulation (torch's default for fp16/bf16/fp32 without TF32), the heuristic's first algorithm.
#include <cublasLt.h>

#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>

#include "measure/cuda_check.h"
#include "vendor/vendor_ops_torch.h"

namespace kf::vendor {
namespace {

void lt_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE)
    throw not_applicable(fmt::format("{} says {}", call, cublasGetStatusString(s)));
  throw cuda_error(-1, fmt::format("{}:{}: {} failed: {}", file, line, call, cublasGetStatusString(s)));
}
#define KF_CUBLAS_CHECK(call) lt_check((call), #call, __FILE__, __LINE__)

constexpr size_t k_workspace_bytes = 32u << 20;

cudaDataType_t blas_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return CUDA_R_32F;
    case at::kHalf: return CUDA_R_16F;
    case at::kBFloat16: return CUDA_R_16BF;
    default: throw not_applicable(fmt::format("cuBLASLt linear here covers float32/float16/bfloat16, not {}",
                                              c10::toString(t)));
  }
}

struct lt_state {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  lt_state() {
    KF_CUBLAS_CHECK(cublasLtCreate(&handle));
    KF_CUDA_CHECK(cudaMalloc(&workspace, k_workspace_bytes));
  }
};

lt_state& state() {
  thread_local lt_state s;  // lives as long as the worker; freed with the process
  return s;
}

template <class T, void (*destroy)(T)>
struct owned {
  T v = nullptr;
  ~owned() { if (v) destroy(v); }
};
void destroy_desc(cublasLtMatmulDesc_t d) { cublasLtMatmulDescDestroy(d); }
void destroy_layout(cublasLtMatrixLayout_t l) { cublasLtMatrixLayoutDestroy(l); }
void destroy_pref(cublasLtMatmulPreference_t p) { cublasLtMatmulPreferenceDestroy(p); }

}  // namespace

at::Tensor cublaslt_linear(const at::Tensor& x_in, const torch_op_args& a) {
  if (!x_in.is_cuda()) throw not_applicable("cuBLASLt runs on CUDA tensors only");
  std::optional<at::Tensor> weight = a.tensor("weight");
  std::optional<at::Tensor> bias = a.tensor("bias");
  if (!weight || weight->dim() != 2) throw not_applicable("linear needs a 2-d weight");
  at::Tensor x = x_in.contiguous();
  at::Tensor w = weight->contiguous();
  if (w.scalar_type() != x.scalar_type() || (bias && bias->scalar_type() != x.scalar_type()))
    throw not_applicable("linear with mixed dtypes");
  const int64_t k = x.size(-1), n = w.size(0), m = x.numel() / std::max<int64_t>(k, 1);
  if (w.size(1) != k) throw not_applicable("linear: weight does not match the input's last dim");
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
  out_shape.back() = n;
  at::Tensor y = at::empty(out_shape, x.options());
  cudaDataType_t type = blas_type(x.scalar_type());

  // Column-major view: Y^T [n, m] = op(W)[n, k] * X^T [k, m]; row-major W [n, k] is col-major [k, n], transposed.
  owned<cublasLtMatmulDesc_t, destroy_desc> desc;
  KF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.v, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  KF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.v, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  KF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.v, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  at::Tensor b;
  if (bias) {
    b = bias->contiguous();
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const void* bias_ptr = b.data_ptr();
    KF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.v, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    KF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.v, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr));
  }
  owned<cublasLtMatrixLayout_t, destroy_layout> la, lb, lc;
  KF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la.v, type, k, n, k));
  KF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb.v, type, k, m, k));
  KF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc.v, type, n, m, n));
  owned<cublasLtMatmulPreference_t, destroy_pref> pref;
  KF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.v));
  size_t ws = k_workspace_bytes;
  KF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.v, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  lt_state& st = state();
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  KF_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(st.handle, desc.v, la.v, lb.v, lc.v, lc.v, pref.v, 1, &heuristic, &found));
  if (found == 0) throw not_applicable("cuBLASLt has no algorithm for this linear");
  float one = 1, zero = 0;
  KF_CUBLAS_CHECK(cublasLtMatmul(st.handle, desc.v, &one, w.data_ptr(), la.v, x.data_ptr(), lb.v, &zero, y.data_ptr(),
                                 lc.v, y.data_ptr(), lc.v, &heuristic.algo, st.workspace, k_workspace_bytes,
                                 c10::cuda::getCurrentCUDAStream().stream()));
  return y;
}

}  // namespace kf::vendor
