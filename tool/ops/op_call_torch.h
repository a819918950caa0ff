// What a call of torch.ops.kforge.<workload> does on each dispatch key. On CPU and CUDA: the stored kernel's
// kf_launch, on the current stream, with the inputs and freshly allocated outputs, when the kernel covers the call
// (the spec's dtypes, ranks and sizes; inputs laid out as the verifier's are; a kernel for this device); otherwise,
// or when kf_launch declines (non-zero), the workload's eager graph, with a warning once per shape. On Meta: the
// outputs' shapes and dtypes, so the operator works inside torch.compile graphs and under fake tensors.
// Include only from *_torch.cpp.
#pragma once
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "exec/device.h"
#include "op_registry_torch.h"

namespace kf::ops {

// The outputs of a call on `device` (cpu or cuda): always contiguous, never aliasing an input, as the Meta
// kernel says.
std::vector<at::Tensor> call_op(const op_entry& entry, device_kind device, const std::vector<at::Tensor>& inputs);

// Why the stored kernel does not cover this call, or "" when it does.
std::string not_covered(const op_entry& entry, device_kind device, const std::vector<at::Tensor>& inputs);

// Meta tensors of the outputs' shapes and dtypes (contiguous): the spec's inference where the sizes are concrete
// and the spec takes them, else the eager graph run on the meta inputs (symbolic sizes, a call the kernel does not
// cover).
std::vector<at::Tensor> call_meta(const op_entry& entry, const std::vector<at::Tensor>& inputs);

}  // namespace kf::ops
