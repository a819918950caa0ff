// group_norm_cuda_ring.cuh: group_norm_cuda's `ring` kernel: the stream kernel's ticket order, but a block keeps
// each segment it takes in a ring of shared-memory slots from its statistics to its apply step, across rows, so x is
// read from DRAM once and never again from L2, whatever the tensor's size (as `team`, whose blocks serialize load,
// barrier and store of one row at a time). Emitted after group_norm_cuda_grid.cuh, whose bulk copies, counters and
// segment items it uses.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// the files emitted before it; kforge emits it without these lines.
#include "group_norm_cuda_grid.cuh"
#endif  // KF_EMITTED

namespace kfk {

// ---- ring: tickets are segments in row order, taken from one counter (dealing them round robin instead, with no
// atomics, measured slower on an H200: 123.7 against 113.3 us at SD3.5 256x512). Each block has NT compute threads
// and one control warp. The control warp takes tickets into the free slots of the block's ring, starts their bulk
// copies, and hands the
// compute threads one operation at a time through a queue in shared memory: reduce a slot (its statistics), or
// apply the oldest reduced slot, from shared memory, once its row's statistics are in. It also does everything that
// waits on global memory (tickets; posting each slot's partial record and counting it into its row, the row's last
// one finishing the row; waiting for rows), so the compute threads only read shared memory, reduce and store y.
// A slot is reduced once the copies of k_ahead later slots are in flight, or nothing else is left. The control warp
// waits on a row only when every slot its block holds is reduced and posted, so with the grid co-resident (a
// cooperative launch) and blocks x slots at least a row's segments the launch cannot hang: were every block
// waiting, all held segments, and the first untaken one, would lie in one row (docs/kernel-notes.md). The last
// block out resets the counters, as stream's. ----
constexpr int k_ring_slots = 32;  // most slots a block
constexpr int k_ring_queue = 4;   // operations handed to the compute threads ahead of their completion
constexpr int op_stats = 0, op_apply = 1, op_end = 2;

struct ring_op {
  int kind, slot;
  unsigned ticket, parity;  // the slot's segment; the parity its copy completes with
  float2 mr;                // op_apply: the row's (mean, rstd)
};

__device__ __forceinline__ void mbar_init_count(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// A barrier of the NT compute threads alone (the control warp is elsewhere).
__device__ __forceinline__ void compute_sync() { asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory"); }

__device__ __forceinline__ void ring_segment(const norm_args& a, unsigned t, int64_t* row, int64_t* lo, int64_t* hi) {
  *row = t / a.splits;
  *lo = min(a.n, (int64_t)(t % a.splits) * a.seg);
  *hi = min(a.n, *lo + a.seg);
}

// The compute threads: the queue's operations in order, until op_end.
template <int V>
__device__ __forceinline__ void ring_compute(const norm_args& a, in_t* ring, ring_op* ops, f3* recs, uint64_t* full,
                                             uint64_t* op_ready, uint64_t* op_done, f3* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (unsigned n = 0;; ++n) {
    const int q = (int)(n % k_ring_queue);
    mbar_wait(&op_ready[q], (n / k_ring_queue) & 1);
    const ring_op o = ops[q];
    if (o.kind == op_end) return;
    int64_t row, lo, hi;
    ring_segment(a, o.ticket, &row, &lo, &hi);
    const in_t* const slot = ring + (int64_t)o.slot * a.seg;
    auto load = [&](int64_t i, float* x) { load_vec<in_t, V>(slot + (i - lo), x), prologue_x<V>(x); };
    if (o.kind == op_stats) {
      mbar_wait(&full[o.slot], o.parity);
      moments mo;
      mo.shift = row_shift<V>(a, row * a.n);
#pragma unroll k_unroll
      for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
        float x[V];
        load(i, x);
        mo.add<V>(x);
      }
      f3 p = warp_reduce(mo.record(), comb_add);
      if (lane == 0) scratch[warp] = p;
      compute_sync();
      if (threadIdx.x == 0) {
        for (int w = 1; w < NT / 32; ++w) p = comb_add(p, scratch[w]);
        recs[q] = p;
      }
      compute_sync();  // scratch is free again
    } else {
      segment_apply<V>(a, row, lo, hi, o.mr, load);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&op_done[q]);  // this warp is done with the slot, and recs[q] is written
  }
}

template <int V>
__global__ void __launch_bounds__(NT + 32) ring_kernel(norm_args a, int slots) {
  static_assert(V * sizeof(in_t) == 16, "the ring moves whole 16-byte vectors with bulk copies");
  static_assert(NT % 32 == 0 && NT >= 64, "whole compute warps");
  extern __shared__ __align__(128) unsigned char ring_smem[];
  in_t* const ring = reinterpret_cast<in_t*>(ring_smem);  // slot k at ring + k * a.seg
  __shared__ f3 scratch[NT / 32];
  __shared__ ring_op ops[k_ring_queue];
  __shared__ f3 recs[k_ring_queue];
  __shared__ unsigned slot_ticket[k_ring_slots];
  __shared__ __align__(8) uint64_t full[k_ring_slots];  // a slot's copy has landed
  __shared__ __align__(8) uint64_t op_ready[k_ring_queue], op_done[k_ring_queue];
  __shared__ bool last;
  const int64_t segs = a.splits, total = a.rows * segs;
  const unsigned lane = threadIdx.x & 31, all = 0xffffffffu;
  if (threadIdx.x == 0) {
    for (int k = 0; k < slots; ++k) mbar_init_count(&full[k], 1);
    for (int q = 0; q < k_ring_queue; ++q) mbar_init_count(&op_ready[q], 1), mbar_init_count(&op_done[q], NT / 32);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x < NT) {
    ring_compute<V>(a, ring, ops, recs, full, op_ready, op_done, scratch);
  } else {  // the control warp: every lane runs it in step, lane 0 touches memory
    int64_t taken = 0, reduced = 0, applying = 0, applied = 0;  // slots, in ring order: pushed as stats / apply ops
    unsigned pushed = 0, retired = 0;                           // operations, in queue order
    bool exhausted = false;
    // Waits for the oldest operation in flight: posts a stats op's record (finishing the row when it is the row's
    // last), or counts an apply op's slot as free.
    auto retire = [&]() {
      const int q = (int)(retired % k_ring_queue);
      mbar_wait(&op_done[q], (retired / k_ring_queue) & 1);
      const ring_op o = ops[q];
      if (o.kind == op_stats) {
        int64_t row, lo, hi;
        ring_segment(a, o.ticket, &row, &lo, &hi);
        int row_done = 0;
        if (lane == 0) {
          g_part[o.ticket] = recs[q];
          __threadfence();
          row_done = atomicAdd(&g_row_done[row], 1u) == (unsigned)segs - 1;
        }
        if (__shfl_sync(all, row_done, 0)) {  // every record of the row is written
          __threadfence();
          const f3 t = warp_sum_records(&g_part[row * segs], segs);
          if (lane == 0) {
            g_row_mr[row] = finish_stats(t, row_shift<V>(a, row * a.n), a.eps);
            __threadfence();
            st_release(&g_row_ready[row], 1u);
          }
        }
      } else {
        ++applied;
      }
      ++retired;
    };
    auto push = [&](int kind, int64_t seq, float2 mr) {
      if (pushed - retired == k_ring_queue) retire();
      const int q = (int)(pushed % k_ring_queue), k = (int)(seq % slots);
      if (lane == 0) {
        ops[q] = ring_op{kind, k, slot_ticket[k], (unsigned)((seq / slots) & 1), mr};
        mbar_arrive(&op_ready[q]);
      }
      __syncwarp();
      ++pushed;
    };
    for (;;) {
      while (!exhausted && taken - applied < slots) {  // fill the free slots
        unsigned t = 0;
        if (lane == 0) t = atomicAdd(&g_stream_ticket, 1u);
        t = __shfl_sync(all, t, 0);
        if (t >= total) {
          exhausted = true;
          break;
        }
        if (lane == 0) {
          const int k = (int)(taken % slots);
          int64_t row, lo, hi;
          ring_segment(a, t, &row, &lo, &hi);
          const unsigned bytes = (unsigned)((hi - lo) * (int64_t)sizeof(in_t));
          slot_ticket[k] = t;
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // earlier reads of the slot come first
          mbar_expect(&full[k], bytes);
          bulk_load(ring + (int64_t)k * a.seg, a.x + row * a.n + lo, bytes, &full[k]);
        }
        __syncwarp();
        ++taken;
      }
      const bool can_reduce = reduced < taken, can_apply = applying < reduced;
      if (can_reduce && (taken - reduced > k_ahead || exhausted || !can_apply)) {
        push(op_stats, reduced++, float2{});
        continue;
      }
      if (can_apply) {
        int ready = 0;
        float2 mr{};
        if (lane == 0) {
          const int64_t row = slot_ticket[applying % slots] / segs;
          ready = ld_acquire(&g_row_ready[row]) != 0;
          if (ready) mr = __ldcg(&g_row_mr[row]);
        }
        if (__shfl_sync(all, ready, 0)) {
          push(op_apply, applying++, mr);
        } else if (can_reduce) {
          push(op_stats, reduced++, float2{});
        } else if (retired < pushed) {
          retire();  // its record may be what the row waits for
        } else {
          __nanosleep(64);  // every held slot reduced and posted: the row is others' to finish
        }
        continue;
      }
      if (retired < pushed) {
        retire();
        continue;
      }
      break;  // no ticket left, every slot applied
    }
    push(op_end, 0, float2{});
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // every block took its last ticket before counting itself out
    __threadfence();
    last = atomicAdd(&g_stream_out, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    for (int64_t r = threadIdx.x; r < a.rows; r += NT + 32) g_row_done[r] = 0, g_row_ready[r] = 0;
    if (threadIdx.x == 0) g_stream_ticket = 0, g_stream_out = 0;
    __threadfence();
  }
}

static grid_setup g_ring_setup;  // one vector width (16 bytes) runs the ring

// The ring launch over the stream kernel's segments (a.seg elements, a.splits a row): as many blocks as fit on the
// device at once with k_ring_kb KiB of slots each. -1 where it does not apply (vectors of other than 16 bytes,
// fewer than k_ahead + 2 slots, no cooperative launch, or too little shared memory on the device for the rows:
// the caller runs the stream kernel), 3 on a launch error.
template <int V>
int launch_ring(norm_args a, cudaStream_t s) {
  if constexpr (V * sizeof(in_t) != 16) {
    return -1;
  } else {
    const int64_t seg_bytes = a.seg * (int64_t)sizeof(in_t);
    const int slots = (int)min((int64_t)k_ring_slots, (int64_t)k_ring_kb * 1024 / seg_bytes);
    if (slots < k_ahead + 2) return -1;
    const size_t smem = (size_t)slots * (size_t)seg_bytes;
    grid_setup& su = g_ring_setup;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 3;
    if (dev != su.dev || smem != su.smem) {
      int coop = 0;
      if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
          cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
          cudaFuncSetAttribute(ring_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, ring_kernel<V>, NT + 32, smem) != cudaSuccess ||
          !coop || su.per_sm < 1) {
        cudaGetLastError();
        su.dev = -1;
        return -1;
      }
      su.dev = dev;
      su.smem = smem;
    }
    const int64_t total = a.rows * a.splits;
    const int64_t blocks = min((int64_t)su.per_sm * su.sms, total);
    // Room for a row's segments plus one a block beyond the copies in flight: below it, blocks would wait on rows
    // most of the time (and below a row's segments in all, the launch could hang).
    if (blocks * (slots - k_ahead) < a.splits + blocks) return -1;
    cudaLaunchAttribute coop = {};
    coop.id = cudaLaunchAttributeCooperative;  // co-residency guaranteed, or the launch fails: never a hang
    coop.val.cooperative = 1;
    return launch_with(coop, ring_kernel<V>, dim3((unsigned)blocks), NT + 32, smem, s, a, slots);
  }
}

}  // namespace kfk
