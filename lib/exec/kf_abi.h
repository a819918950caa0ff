/* kforge candidate kernel ABI, version 1 (docs/design.md "Candidate kernel ABI").
 * A candidate is one translation unit that includes only this header, CUDA/CCCL headers and the
 * standard library, and exports kf_launch. Inputs and outputs follow the spec's order; outputs are
 * allocated (and poisoned) by the harness. All work goes on `stream` (a cudaStream_t; null on cpu).
 * Return 0 on success, non-zero for an input the kernel does not handle. */
#ifndef KF_ABI_H
#define KF_ABI_H
#include <stdint.h>

#define KF_ABI_VERSION 1
#define KF_MAX_DIMS 8

enum kf_dtype {
  KF_FLOAT32 = 0,
  KF_FLOAT16 = 1,
  KF_BFLOAT16 = 2,
  KF_FLOAT64 = 3,
  KF_INT32 = 4,
  KF_INT64 = 5,
  KF_UINT8 = 6,
  KF_BOOL = 7 /* one byte: 0 or 1 */
};

typedef struct kf_tensor {
  void* data;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t stride[KF_MAX_DIMS]; /* in elements */
} kf_tensor;

#ifdef __cplusplus
extern "C" {
#endif
typedef int (*kf_launch_fn)(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                            void* stream);
int kf_launch(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream);
#ifdef __cplusplus
}
#endif

#endif /* KF_ABI_H */
