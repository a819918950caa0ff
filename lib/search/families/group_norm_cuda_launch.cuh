// group_norm_cuda_launch.cuh: the last of group_norm_cuda's fixed files: the launch of the variant's strategy (with
// the per-row kernels as the fallback of the grid strategies) and kf_launch's checks.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// the files emitted before it; kforge emits it without these lines.
#include "group_norm_cuda_ring.cuh"
#endif  // KF_EMITTED

namespace kfk {

// A cluster of k_cluster CTAs per row, each CTA a segment of it (in registers when it fits k_chunks vectors a
// thread), the statistics combined through distributed shared memory.
template <int V>
int launch_cluster_rows(norm_args a, cudaStream_t s) {
  a.seg = ((a.n + k_cluster - 1) / k_cluster + V - 1) / V * V;
  const dim3 grid(k_cluster, (unsigned)(a.rows < 65535 ? a.rows : 65535));
  if (launch_clusters(norm_kernel<V, s_cluster>, k_cluster, grid, NT, 0, s, a) != 0) return 3;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

// ---- fit (the grid strategies): a launch whose rows each fit the registers of one block (k_chunks vectors a
// thread), or else of a cluster of k_cluster CTAs, with every row's block or cluster resident at once, runs that
// per-row kernel instead: x is read from DRAM once into registers and the statistics meet in shared memory or
// through distributed shared memory, where the grid kernels pass each row through bulk copies into shared memory,
// a barrier in global memory (team) or ticket and statistics round trips (stream). What is resident is the
// occupancy calculator's answer for this device and kernel (registers decide it), asked once per device.
struct fit_setup {
  int dev = -1, blocks = 0, clusters = 0;  // the block kernel's resident blocks, the cluster kernel's clusters
};
static fit_setup g_fit_setup[2];  // per vector width; internal linkage, as g_team_setup

template <int V>
int launch_fit(norm_args a, cudaStream_t s) {
  fit_setup& su = g_fit_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  if (dev != su.dev) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, norm_kernel<V, s_block>, NT, 0) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    su.blocks = sms * per_sm;
    su.clusters = 0;
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = k_cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(k_cluster);
    cfg.blockDim = dim3(NT);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if ((k_cluster > 8 && cudaFuncSetAttribute(norm_kernel<V, s_cluster>,
                                               cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) ||
        cudaOccupancyMaxActiveClusters(&su.clusters, norm_kernel<V, s_cluster>, &cfg) != cudaSuccess) {
      cudaGetLastError();  // no cluster launch here: blocks only
      su.clusters = 0;
    }
    su.dev = dev;
  }
  const int64_t cap = (int64_t)k_chunks * NT * V;  // elements a block holds in registers
  if (a.n <= cap && a.rows <= su.blocks) {
    norm_kernel<V, s_block><<<(unsigned)a.rows, NT, 0, s>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
  }
  if (a.n <= cap * k_cluster && a.rows <= su.clusters) return launch_cluster_rows<V>(a, s);
  return -1;
}

template <int V>
int run(norm_args a, cudaStream_t s) {
  const int64_t k_grid_cap = 1 << 22;
  if constexpr (k_fit &&
                (k_strategy == s_split || k_strategy == s_team || k_strategy == s_stream || k_strategy == s_ring)) {
    const int rc = launch_fit<V>(a, s);
    if (rc >= 0) return rc;
  }
  if constexpr (k_strategy == s_team) {
    const int rc = launch_team<V>(a, s);
    if (rc >= 0) return rc;
  }
  if constexpr (k_strategy == s_stream || k_strategy == s_ring) {
    const int rc = launch_stream<V>(a, s);
    if (rc >= 0) return rc;
  }
  if constexpr (k_strategy == s_split) {
    int64_t splits = k_splits;
    if (a.rows * splits > k_part_cap) splits = k_part_cap / a.rows;
    if (splits >= 2) {
      a.splits = (int)splits;
      a.seg = ((a.n + splits - 1) / splits + V - 1) / V * V;
      const unsigned blocks = (unsigned)(a.rows * splits);
      stats_kernel<V><<<blocks, NT, 0, s>>>(a);
      apply_kernel<V><<<blocks, NT, 0, s>>>(a);
      return cudaGetLastError() == cudaSuccess ? 0 : 3;
    }
  }
  if constexpr (k_strategy == s_warp) {
    const int64_t blocks = (a.rows + NT / 32 - 1) / (NT / 32);
    norm_kernel<V><<<(unsigned)(blocks < k_grid_cap ? blocks : k_grid_cap), NT, 0, s>>>(a);
  } else if constexpr (k_strategy == s_cluster) {
    return launch_cluster_rows<V>(a, s);
  } else {
    norm_kernel<V, s_block><<<(unsigned)(a.rows < k_grid_cap ? a.rows : k_grid_cap), NT, 0, s>>>(a);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

int launch(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, cudaStream_t s) {
  if (n_in != k_n_inputs || n_out != 1) return 1;
  const kf_tensor& x = in[k_x_input];
  if (x.dtype != dtype_code<in_t>::value || x.ndim < 1 || !contiguous(x)) return 1;
  norm_args a = {};
  a.x = static_cast<const in_t*>(x.data);
  a.eps = k_eps;
  const int64_t total = numel(x);
  int64_t wn;  // elements the weight and bias must hold
  if constexpr (k_group) {
    if (x.ndim < 2 || x.shape[1] % k_num_groups != 0) return 1;
    a.groups = k_num_groups;
    a.cpg = x.shape[1] / k_num_groups;
    a.hw = 1;
    for (int d = 2; d < x.ndim; ++d) a.hw *= x.shape[d];
    a.rows = x.shape[0] * k_num_groups;
    a.n = a.cpg * a.hw;
    wn = x.shape[1];
  } else {
    if (x.ndim < k_normalized_dims) return 1;
    a.n = 1;
    for (int d = x.ndim - k_normalized_dims; d < x.ndim; ++d) a.n *= x.shape[d];
    a.rows = a.n ? total / a.n : 0;
    wn = a.n;
  }
  bool vec_ok = a.n % k_vec == 0 && aligned(a.x, vec_align<in_t, k_vec>());
  if (k_group) vec_ok = vec_ok && a.hw % k_vec == 0;
  if (k_has_w) {
    const kf_tensor& w = in[k_w_input];
    if (w.dtype != dtype_code<w_t>::value || numel(w) != wn || !contiguous(w)) return 1;
    a.w = static_cast<const w_t*>(w.data);
    if (!k_group) vec_ok = vec_ok && aligned(a.w, vec_align<w_t, k_vec>());
  }
  if (k_has_b) {
    const kf_tensor& b = in[k_b_input];
    if (b.dtype != dtype_code<b_t>::value || numel(b) != wn || !contiguous(b)) return 1;
    a.b = static_cast<const b_t*>(b.data);
    if (!k_group) vec_ok = vec_ok && aligned(a.b, vec_align<b_t, k_vec>());
  }
  const kf_tensor& y = out[0];
  if (y.dtype != dtype_code<out_t>::value || !contiguous(y) || numel(y) != total) return 1;
  a.y = static_cast<out_t*>(y.data);
  vec_ok = vec_ok && aligned(a.y, vec_align<out_t, k_vec>());
  if (total == 0) return 0;
  return vec_ok ? run<k_vec>(a, s) : run<1>(a, s);
}

}  // namespace kfk
