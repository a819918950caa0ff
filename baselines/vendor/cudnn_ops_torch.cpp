// cuDNN (legacy API) calls for the vendor baseline: softmax / log_softmax over any dim, and average pooling
// of a whole plane (adaptive_avg_pool2d to 1x1), NCHW or NHWC.
#include <cudnn.h>

#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>

#include "measure/cuda_check.h"
#include "vendor/vendor_ops_torch.h"

namespace kf::vendor {
namespace {

void cudnn_check(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  if (s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM)
    throw not_applicable(fmt::format("{} says {}", call, cudnnGetErrorString(s)));
  throw cuda_error(-1, fmt::format("{}:{}: {} failed: {}", file, line, call, cudnnGetErrorString(s)));
}
#define KF_CUDNN_CHECK(call) cudnn_check((call), #call, __FILE__, __LINE__)

// One handle per worker thread, bound to the current stream before each call.
cudnnHandle_t handle() {
  thread_local cudnnHandle_t h = [] {
    cudnnHandle_t made = nullptr;
    KF_CUDNN_CHECK(cudnnCreate(&made));
    return made;
  }();
  KF_CUDNN_CHECK(cudnnSetStream(h, c10::cuda::getCurrentCUDAStream().stream()));
  return h;
}

cudnnDataType_t cudnn_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return CUDNN_DATA_FLOAT;
    case at::kHalf: return CUDNN_DATA_HALF;
    case at::kBFloat16: return CUDNN_DATA_BFLOAT16;
    case at::kDouble: return CUDNN_DATA_DOUBLE;
    default: throw not_applicable(fmt::format("cuDNN has no {} tensors", c10::toString(t)));
  }
}

struct tensor_desc_guard {
  cudnnTensorDescriptor_t d = nullptr;
  tensor_desc_guard() { KF_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~tensor_desc_guard() { cudnnDestroyTensorDescriptor(d); }
};

// alpha/beta are double for double data, float otherwise.
struct scaling {
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  bool dbl;
  explicit scaling(at::ScalarType t) : dbl(t == at::kDouble) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
};

void check_int_dim(int64_t v, const char* what) {
  if (v > INT32_MAX) throw not_applicable(fmt::format("{} {} exceeds cuDNN's int range", what, v));
}

}  // namespace

at::Tensor cudnn_softmax(const at::Tensor& x_in, const torch_op_args& a, bool log) {
  if (!x_in.is_cuda()) throw not_applicable("cuDNN runs on CUDA tensors only");
  at::Tensor x = x_in;
  if (auto t = a.dtype_arg("dtype")) x = x.to(*t);  // softmax(dtype=...) converts first, as torch does
  x = x.contiguous();
  int64_t dim = a.value("dim").get<int64_t>();
  if (dim < 0) dim += x.dim();
  // As NCHW with N = the dims before, C = the softmax dim, H = the dims after, W = 1: CHANNEL mode.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  check_int_dim(outer, "rows");
  check_int_dim(inner, "inner size");
  at::Tensor y = at::empty_like(x);
  tensor_desc_guard desc;
  KF_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.d, CUDNN_TENSOR_NCHW, cudnn_type(x.scalar_type()),
                                            static_cast<int>(outer), static_cast<int>(x.size(dim)),
                                            static_cast<int>(inner), 1));
  scaling s(x.scalar_type());
  KF_CUDNN_CHECK(cudnnSoftmaxForward(handle(), log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                     CUDNN_SOFTMAX_MODE_CHANNEL, s.one(), desc.d, x.data_ptr(), s.zero(), desc.d,
                                     y.data_ptr()));
  return y;
}

at::Tensor cudnn_adaptive_avg_pool_1x1(const at::Tensor& x, const torch_op_args& a) {
  if (!x.is_cuda()) throw not_applicable("cuDNN runs on CUDA tensors only");
  std::vector<int64_t> size = pool_output_size(a.value("output_size"));
  if (x.dim() != 4 || size.size() != 2 || size[0] != 1 || size[1] != 1)
    throw not_applicable("cudnnPoolingForward covers adaptive_avg_pool2d of a 4-d tensor to 1x1 only");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  for (int64_t v : {n, c, h, w}) check_int_dim(v, "size");
  bool nhwc = x.is_contiguous(at::MemoryFormat::ChannelsLast) && !x.is_contiguous();
  at::Tensor xc = nhwc ? x : x.contiguous();
  at::Tensor y = at::empty({n, c, 1, 1}, x.options().memory_format(nhwc ? at::MemoryFormat::ChannelsLast
                                                                          : at::MemoryFormat::Contiguous));
  cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  cudnnDataType_t type = cudnn_type(x.scalar_type());
  tensor_desc_guard xd, yd;
  KF_CUDNN_CHECK(cudnnSetTensor4dDescriptor(xd.d, fmt, type, int(n), int(c), int(h), int(w)));
  KF_CUDNN_CHECK(cudnnSetTensor4dDescriptor(yd.d, fmt, type, int(n), int(c), 1, 1));
  cudnnPoolingDescriptor_t pd = nullptr;
  KF_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pd));
  struct pd_guard {
    cudnnPoolingDescriptor_t p;
    ~pd_guard() { cudnnDestroyPoolingDescriptor(p); }
  } guard{pd};
  KF_CUDNN_CHECK(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
                                             int(h), int(w), 0, 0, int(h), int(w)));
  scaling s(x.scalar_type());
  KF_CUDNN_CHECK(cudnnPoolingForward(handle(), pd, s.one(), xd.d, xc.data_ptr(), s.zero(), yd.d, y.data_ptr()));
  return y;
}

}  // namespace kf::vendor
