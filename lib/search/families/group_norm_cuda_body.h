// The fixed CUDA code of the group_norm_cuda family, in the order the family emits it: the per-row kernels and
// the split pair (group_norm_cuda_body.cpp), the kernels that span the grid (team, stream:
// group_norm_cuda_grid.cpp; ring: group_norm_cuda_ring.cpp), then the launch (group_norm_cuda_body.cpp).
#pragma once

namespace kf {
const char* group_norm_cuda_rows();
const char* group_norm_cuda_grid();
const char* group_norm_cuda_ring();
const char* group_norm_cuda_launch();
}  // namespace kf
