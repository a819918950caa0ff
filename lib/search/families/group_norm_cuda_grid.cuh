// group_norm_cuda_grid.cuh: the group_norm_cuda kernels that span the grid, each reading x from DRAM once however
// long a row is: `team` (co-resident blocks per row, the row held in shared memory, one cooperative launch) and
// `stream` (the apply step trailing the statistics by a few MiB, reading x back from L2, blocks taking work in ticket
// order); `stream`'s launch also starts `ring` (group_norm_cuda_ring.cuh), which keeps the segments in shared memory.
// Emitted after group_norm_cuda_rows.cuh, whose statistics helpers they use.
#ifndef KF_EMITTED
// Read on its own (an editor, clang-format, tests/search/family_sources_test.cpp), this file sees
// the files emitted before it; kforge emits it without these lines.
#include "group_norm_cuda_rows.cuh"
#endif  // KF_EMITTED

namespace kfk {

// ---- team: co-resident blocks (one cooperative launch), `tsize` of them per row. Each block keeps the first
// `hold` elements of its segment in shared memory from the statistics to the apply step, so a row far larger than
// one SM is read from DRAM once; the blocks of a team meet at a barrier in global memory once per row. ----
constexpr int k_team_cap = 8192;                 // blocks of one launch
__device__ f3 g_team_part[2][k_team_cap];        // partial records by row parity: a block is at most one row ahead
__device__ unsigned g_team_arrived[k_team_cap];  // per team: arrivals, counting up across its rows
__device__ unsigned g_team_left[k_team_cap];     // per team: blocks done; the last resets both for the next launch

// The sum of n records that other blocks wrote, for every lane of the calling warp; read through L2 (__ldcg), not
// L1, which may hold stale lines of them.
__device__ __forceinline__ f3 warp_sum_records(const f3* recs, int64_t n) {
  f3 p{0.f, 0.f, 0.f};
  for (int64_t j = threadIdx.x & 31; j < n; j += 32)
    p = comb_add(p, f3{__ldcg(&recs[j].a), __ldcg(&recs[j].b), __ldcg(&recs[j].c)});
  return warp_reduce(p, comb_add);
}

// Loads V elements of x, keeps a raw copy at `kept` (shared memory) and returns them as floats (before the prologue).
template <int V>
__device__ __forceinline__ void load_keep(const in_t* src, in_t* kept, float* x) {
  constexpr int B = V * (int)sizeof(in_t);
  if constexpr (B > 16) {
    load_keep<V / 2>(src, kept, x);
    load_keep<V / 2>(src + V / 2, kept + V / 2, x + V / 2);
  } else if constexpr (V == 1) {
    const in_t r = *src;
    *kept = r;
    x[0] = to_f(r);
  } else {
    using R = typename raw_bits<B>::type;
    const R r = *reinterpret_cast<const R*>(src);
    *reinterpret_cast<R*>(kept) = r;
    const in_t* t = reinterpret_cast<const in_t*>(&r);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = to_f(t[v]);
  }
}

// ---- the Hopper bulk copy (TMA, 1-D): global -> shared memory, completion counted in bytes on an mbarrier ----
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n waiting:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra waiting;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// The same with an L2 eviction priority for the lines read (a createpolicy value): a hint on this access only, no
// state left in the device's configuration.
__device__ __forceinline__ void bulk_load_hint(void* dst, const void* src, unsigned bytes, uint64_t* bar,
                                               uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

__device__ __forceinline__ uint64_t l2_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}

__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// GroupNorm's channels a team block's segment spans, per row: their (scale, shift) in shared memory, so that the
// apply loop neither divides its index by hw nor loads w and b per vector (a load the compiler cannot hoist past the
// stores to y, which may alias w and b: each vector's division, w and b loads, math and store ran one after
// another). Thread j loads channel j's w and b when its row starts, so the statistics and the team's barrier hide
// that load; the table is filled once the row's mean and rstd are in. A segment spanning more channels than the
// table or the block's threads applies per vector as before.
constexpr int k_team_chan = 128;

// x / d and x % d for a row's indices, in 32-bit arithmetic where both fit (a 64-bit division is a long subroutine).
__device__ __forceinline__ void row_divmod(int64_t x, int64_t d, int64_t* q, int64_t* r) {
  if (x <= 0xffffffffll && d <= 0xffffffffll) {
    const uint32_t q32 = (uint32_t)x / (uint32_t)d;
    *q = q32;
    *r = (int64_t)((uint32_t)x - q32 * (uint32_t)d);
  } else {
    *q = x / d;
    *r = x - *q * d;
  }
}

// The kept part of a segment arrives in up to k_team_parts bulk copies, each with its own mbarrier, so the
// statistics start on the first part while the others are still in flight.
constexpr int k_team_parts = 8;

// At most 64 registers a thread whatever NT (1024 threads an SM): the 48 KiB variants fit 4 blocks an SM. The channel
// table's registers took a 256-thread block from 64 to 80 (3 an SM).
template <int V>
__global__ void __launch_bounds__(NT, 1024 / NT) team_kernel(norm_args a, int tsize, int teams, int64_t hold) {
  extern __shared__ __align__(128) unsigned char team_smem[];
  in_t* kept = reinterpret_cast<in_t*>(team_smem);
  __shared__ f3 scratch[NT / 32];
  __shared__ float2 row_stats;
  __shared__ float2 chan[k_group ? k_team_chan : 1];  // the segment's channels' (scale, shift), GroupNorm
  __shared__ __align__(8) uint64_t bars[k_team_parts];
  const int team = blockIdx.x / tsize, b = blockIdx.x % tsize;
  const int64_t lo = min(a.n, (int64_t)b * a.seg), hi = min(a.n, lo + a.seg), kept_hi = min(hi, lo + hold);
  // Bulk copies move 16-byte units between 16-byte aligned addresses: whole vectors of V elements when V
  // elements are 16 bytes (the launch checked x's alignment and n % V for this V).
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  const int64_t kept_n = kept_hi - lo;
  const int parts = (int)min((int64_t)k_team_parts, max((int64_t)1, kept_n * (int64_t)sizeof(in_t) / 16384));
  const int64_t part_n = ((kept_n + parts - 1) / parts + V - 1) / V * V;
  if (k_bulk && threadIdx.x == 0) {
    for (int p = 0; p < k_team_parts; ++p) mbar_init(&bars[p]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // GroupNorm: the segment's channels [c_lo, c_lo + tab_n) (tab_n 0: no table), and each thread's place in them,
  // stepped without division: channel c0 and offset r0 of its first vector, dc channels and dr elements a step.
  constexpr int k_tab_cap = k_team_chan < NT ? k_team_chan : NT;
  const int64_t step = (int64_t)NT * V, first = lo + (int64_t)threadIdx.x * V;
  int64_t c_lo = 0;
  int tab_n = 0, c0 = 0, r0 = 0, dc = 0, dr = 0;
  if constexpr (k_group) {
    int64_t c_last, q, r;
    row_divmod(lo, a.hw, &c_lo, &r);
    row_divmod(hi > lo ? hi - 1 : lo, a.hw, &c_last, &r);
    if (hi > lo && c_last - c_lo < k_tab_cap && a.hw <= 0x3fffffffll && step <= 0x3fffffffll) {  // rem + dr fits an int
      tab_n = (int)(c_last - c_lo + 1);  // the same for the whole block
      row_divmod(first, a.hw, &q, &r);
      c0 = (int)(q - c_lo);  // past the table only for a thread with no vector in the segment
      r0 = (int)r;
      row_divmod(step, a.hw, &q, &r);
      dc = (int)q;
      dr = (int)r;
    }
  }
  unsigned round = 0;
  for (int64_t row = team; row < a.rows; row += teams, ++round) {
    const int64_t base = row * a.n;
    float2 twb = make_float2(1.f, 0.f);  // this thread's table channel's w and b, loaded ahead of the statistics
    if constexpr (k_group)
      if ((int)threadIdx.x < tab_n) twb = channel_wb(a, (row % a.groups) * a.cpg + c_lo + threadIdx.x);
    moments mo;
    mo.shift = row_shift<V>(a, base);
    if constexpr (k_bulk) {
      __syncthreads();  // every thread is done reading the previous row's kept part
      if (threadIdx.x == 0 && kept_n > 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        for (int p = 0; p < parts; ++p) {
          const int64_t p_lo = min(kept_n, (int64_t)p * part_n), p_n = min(kept_n, p_lo + part_n) - p_lo;
          const unsigned bytes = (unsigned)(p_n * (int64_t)sizeof(in_t));
          mbar_expect(&bars[p], bytes);
          if (bytes) bulk_load(kept + p_lo, a.x + base + lo + p_lo, bytes, &bars[p]);
        }
      }
      for (int p = 0; p < parts && kept_n > 0; ++p) {
        const int64_t p_lo = min(kept_n, (int64_t)p * part_n), p_hi = min(kept_n, p_lo + part_n);
        mbar_wait(&bars[p], round & 1);
#pragma unroll k_unroll
        for (int64_t j = p_lo + (int64_t)threadIdx.x * V; j < p_hi; j += (int64_t)NT * V) {
          float x[V];
          load_vec<in_t, V>(kept + j, x);
          prologue_x<V>(x);
          mo.add<V>(x);
        }
      }
    } else {
#pragma unroll k_unroll
      for (int64_t i = lo + (int64_t)threadIdx.x * V; i < kept_hi; i += (int64_t)NT * V) {
        float x[V];
        load_keep<V>(a.x + base + i, kept + (i - lo), x);
        prologue_x<V>(x);
        mo.add<V>(x);
      }
    }
    add_block_range<V>(a, base, kept_hi, hi, mo);  // what does not fit in shared memory is read twice
    const f3 t = block_reduce<NT>(mo.record(), comb_add, scratch);
    if (threadIdx.x == 0) {
      g_team_part[round & 1][blockIdx.x] = t;
      __threadfence();
      atomicAdd(&g_team_arrived[team], 1u);
      const unsigned target = (round + 1) * (unsigned)tsize;
      while ((int)(ld_acquire(&g_team_arrived[team]) - target) < 0) __nanosleep(32);
    }
    __syncthreads();
    if (threadIdx.x < 32) {  // the row's statistics from the team's records
      const f3 p = warp_sum_records(&g_team_part[round & 1][team * tsize], tsize);
      if (threadIdx.x == 0) row_stats = finish_stats(p, mo.shift, a.eps);
    }
    __syncthreads();
    const float2 mr = row_stats;  // rewritten only after the next row's block_reduce, which every thread reaches
    if (tab_n > 0) {              // the table (rewritten, like row_stats, only after the next row's barriers)
      if ((int)threadIdx.x < tab_n) chan[threadIdx.x] = affine_of(twb, mr.x, mr.y);
      __syncthreads();
    }
    int c = c0, rem = r0;
#pragma unroll k_unroll
    for (int64_t i = first; i < hi; i += step) {
      float x[V];  // the kept part is complete: every thread waited for it (bulk) or wrote its own (else)
      if (i < kept_hi) load_vec<in_t, V>(kept + (i - lo), x), prologue_x<V>(x);
      else load_x<V>(a, base + i, x);
      if (tab_n > 0) {
        const float2 t = chan[c];
        apply_uniform<V>(t.x, t.y, x);
        c += dc;
        rem += dr;
        if (rem >= (int)a.hw) rem -= (int)a.hw, ++c;
      } else {
        apply<V>(a, row, i, mr.x, mr.y, x);
      }
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  }
  if (threadIdx.x == 0) {  // every block of the team is past its last barrier once all have counted themselves out
    __threadfence();
    if (atomicAdd(&g_team_left[team], 1u) == (unsigned)tsize - 1) {
      g_team_arrived[team] = 0;
      g_team_left[team] = 0;
      __threadfence();
    }
  }
}

// What a grid-wide kernel was sized for, per vector width: the device, its SMs and L2, the blocks an SM holds with
// `smem` bytes of dynamic shared memory. At namespace scope with internal linkage: a template's function-local
// static would be one object shared by every candidate library in the process (STB_GNU_UNIQUE).
struct grid_setup {
  int dev = -1, sms = 0, per_sm = 0, l2 = 0;
  size_t smem = 0;
};
static grid_setup g_team_setup[2];

// The team launch: as many blocks as fit on the device at once (k_team_kb KiB of shared memory each), split into
// teams. A team takes rows one after another; each round costs its segment's bytes plus a fixed latency (a
// barrier, the first bytes' round trip: ~32 KB of one SM's share of DRAM bandwidth), so few long rows get big teams
// and many short rows get many small teams. -1 when the device cannot launch it (the caller falls back to a block
// per row), 3 on a launch error.
template <int V>
int launch_team(norm_args a, cudaStream_t s) {
  grid_setup& su = g_team_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  const size_t want = (size_t)k_team_kb * 1024;
  if (dev != su.dev) {
    int coop = 0;
    if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaFuncSetAttribute(team_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)want) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, team_kernel<V>, NT, want) != cudaSuccess || !coop) {
      cudaGetLastError();
      return -1;
    }
    su.dev = dev;
  }
  const int64_t resident = min((int64_t)su.per_sm * su.sms, (int64_t)k_team_cap);
  if (resident < 1) return -1;
  const int64_t es = sizeof(in_t), per_block = (int64_t)want / es;
  const int64_t t_min = (a.n + per_block - 1) / per_block;  // blocks whose shared memory holds a row
  const int64_t t_max = max((int64_t)1, (a.n + (int64_t)NT * V - 1) / ((int64_t)NT * V));  // a vector per thread
  int64_t teams = 1;
  double best = 0.0;
  for (int64_t k = 1; k <= min(a.rows, resident); ++k) {
    const int64_t t = min(resident / k, t_max);
    if (t < min(t_min, t_max)) break;
    const double rounds = (double)((a.rows + k - 1) / k), seg_bytes = (double)((a.n + t - 1) / t * es);
    const double cost = rounds * (seg_bytes + 32768.0);
    if (k == 1 || cost < best * (1.0 - 1e-9)) best = cost, teams = k;
  }
  const int64_t tsize = min(resident / teams, t_max);
  a.seg = ((a.n + tsize - 1) / tsize + V - 1) / V * V;
  const int64_t hold = min(a.seg, per_block / V * V);
  const size_t smem = (size_t)((hold * es + 15) / 16 * 16);
  cudaLaunchAttribute coop = {};
  coop.id = cudaLaunchAttributeCooperative;  // co-residency guaranteed, or the launch fails: never a hang
  coop.val.cooperative = 1;
  return launch_with(coop, team_kernel<V>, dim3((unsigned)(teams * tsize)), NT, smem, s, a, (int)tsize, (int)teams,
                     hold);
}

// ---- stream: the row cut into segments of k_seg_kb KiB; a statistics item per segment, then an apply item per
// segment trailing the statistics by `lag` segments (a row, the grid, plus k_lag_mb MiB), so the apply step reads x
// back from L2 and DRAM sees x once. Blocks take items in ticket order from one counter: statistics items never
// wait, an apply item waits only for its row's statistics, whose items all hold earlier tickets. A block holds its
// current ticket and the next one (fetched, and its segment's bulk copy started, while the current item runs); a
// held ticket is always later than its holder's current one, so the earliest current item never waits on an
// unfinished ticket: the launch cannot hang whatever the grid or the scheduler. The row's last statistics item
// finishes the row's (mean, rstd) for its apply items; the last block out resets the counters for the next launch.
__device__ float2 g_row_mr[k_part_cap];
__device__ unsigned g_row_done[k_part_cap];   // statistics items done, per row
__device__ unsigned g_row_ready[k_part_cap];  // 1 once g_row_mr holds the row's statistics
__device__ unsigned g_stream_ticket, g_stream_out;

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Ticket t -> (statistics?, segment): `lag` statistics items, then apply and statistics alternating, then the
// last `lag` apply items: the apply item of segment g comes right before the statistics item of segment g + lag.
__device__ __forceinline__ int64_t stream_item(int64_t t, int64_t total, int64_t lag, bool* stats) {
  if (t < lag) return *stats = true, t;
  const int64_t u = t - lag;
  if (u < 2 * (total - lag)) return *stats = (u & 1), (u & 1) ? lag + u / 2 : u / 2;
  return *stats = false, total - lag + (u - 2 * (total - lag));
}

// ---- publish=tagged: a statistics item stores its record as three 64-bit words, each (the launch's epoch, a
// float's bits) and single-copy atomic, so a record is complete once all three words carry the epoch. No fence, no
// counter and no last item finishing the row: each apply item sums its row's records itself (the same records in
// the same order, so every item of a row gets the same statistics). Records left by an earlier launch carry an
// earlier epoch (the last block out advances g_stream_epoch; zeroed memory is epoch 0, and launches count from 1),
// so nothing is reset between launches, and a CUDA graph replays with the epoch it finds in device memory.
__device__ unsigned long long g_stream_rec[k_part_cap][3];
__device__ unsigned g_stream_epoch;

__device__ __forceinline__ void st_relaxed_u64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void post_tagged(int64_t g, f3 p, unsigned epoch) {
  const unsigned long long e = (unsigned long long)epoch << 32;
  st_relaxed_u64(&g_stream_rec[g][0], e | __float_as_uint(p.a));
  st_relaxed_u64(&g_stream_rec[g][1], e | __float_as_uint(p.b));
  st_relaxed_u64(&g_stream_rec[g][2], e | __float_as_uint(p.c));
}

// The sum of the n tagged records from `first` on, for every lane of the calling warp, once each carries `epoch`:
// four records a lane in flight at a time (a poll is one round trip to L2, not one per record), added in the order
// warp_sum_records adds them.
__device__ __forceinline__ f3 warp_sum_tagged(int64_t first, int64_t n, unsigned epoch) {
  constexpr int R = 4;
  const int lane = threadIdx.x & 31;
  f3 p{0.f, 0.f, 0.f};
  for (int64_t j0 = 0; j0 < n; j0 += 32 * R) {
    unsigned long long w[R][3];
    for (;;) {
      bool ready = true;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = j0 + r * 32 + lane;
#pragma unroll
        for (int k = 0; k < 3; ++k) w[r][k] = j < n ? ld_relaxed_u64(&g_stream_rec[first + j][k]) : 0ull;
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int k = 0; k < 3; ++k) ready = ready && (j0 + r * 32 + lane >= n || (unsigned)(w[r][k] >> 32) == epoch);
      if (ready) break;
      __nanosleep(64);
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (j0 + r * 32 + lane < n)
        p = comb_add(p, f3{__uint_as_float((unsigned)w[r][0]), __uint_as_float((unsigned)w[r][1]),
                           __uint_as_float((unsigned)w[r][2])});
  }
  return warp_reduce(p, comb_add);
}

// A statistics item: segment [lo, hi) of `row` (segment g of the tensor), read through load(i, x), reduced into
// its partial record. publish=counter: the row's last item (`*last`, shared) sums the records into (mean, rstd) and
// publishes them; publish=tagged: the record is posted with the launch's epoch, and that is all.
template <int V, typename L>
__device__ __forceinline__ void segment_stats(const norm_args& a, int64_t g, int64_t row, int64_t lo, int64_t hi,
                                              int64_t segs, L load, f3* scratch, bool* last, unsigned epoch) {
  const int64_t base = row * a.n;
  moments mo;
  mo.shift = row_shift<V>(a, base);
#pragma unroll k_unroll
  for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
    float x[V];
    load(i, x);
    mo.add<V>(x);
  }
  const f3 p = block_reduce<NT>(mo.record(), comb_add, scratch);
  if constexpr (k_publish == pub_tagged) {
    if (threadIdx.x == 0) post_tagged(g, p, epoch);
    return;
  }
  if (threadIdx.x == 0) {
    g_part[g] = p;
    __threadfence();
    *last = atomicAdd(&g_row_done[row], 1u) == (unsigned)segs - 1;
  }
  __syncthreads();
  if (*last && threadIdx.x < 32) {  // the row's last statistics item: every record of the row is written
    __threadfence();
    const f3 q = warp_sum_records(&g_part[row * segs], segs);
    if (threadIdx.x == 0) {
      g_row_mr[row] = finish_stats(q, mo.shift, a.eps);
      __threadfence();
      st_release(&g_row_ready[row], 1u);
    }
  }
}

// One thread: waits for the row's statistics (published by its last statistics item) and returns them.
__device__ __forceinline__ float2 wait_row_stats(int64_t row) {
  while (ld_acquire(&g_row_ready[row]) == 0) __nanosleep(64);
  return __ldcg(&g_row_mr[row]);
}

// An apply item: y over segment [lo, hi) of `row` from x read through load(i, x), with the row's (mean, rstd).
template <int V, typename L>
__device__ __forceinline__ void segment_apply(const norm_args& a, int64_t row, int64_t lo, int64_t hi, float2 mr,
                                              L load) {
  const int64_t base = row * a.n;
  // One loop, instantiated twice: with the segment's affine hoisted, or per vector.
  auto each = [&](auto affine) {
#pragma unroll k_unroll
    for (int64_t i = lo + (int64_t)threadIdx.x * V; i < hi; i += (int64_t)NT * V) {
      float x[V];
      load(i, x);
      affine(i, x);
      store_vec<out_t, V, k_stream_store>(a.y + base + i, x);
    }
  };
  float sc, sh;
  if (uniform_affine(a, row, lo, hi, mr.x, mr.y, &sc, &sh))
    each([&](int64_t, float* x) { apply_uniform<V>(sc, sh, x); });
  else each([&](int64_t i, float* x) { apply<V>(a, row, i, mr.x, mr.y, x); });
}

// With 16-byte vectors each segment comes into shared memory in one bulk copy, into k_stages stages a block: the
// copies of the block's next k_stages - 1 tickets run while the current item is reduced or applied; otherwise the
// threads load x themselves.
template <int V>
__global__ void __launch_bounds__(NT) stream_kernel(norm_args a, int64_t lag) {
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  extern __shared__ __align__(128) unsigned char stream_smem[];
  __shared__ f3 scratch[NT / 32];
  __shared__ unsigned tickets[k_stages];
  __shared__ __align__(8) uint64_t bars[k_stages];
  __shared__ bool last;
  __shared__ float2 row_stats;
  __shared__ unsigned epoch;
  const int64_t segs = a.splits, total = a.rows * segs, end = 2 * total;
  in_t* const stages = reinterpret_cast<in_t*>(stream_smem);  // stage k at stages + k * a.seg
  // Thread 0: take a ticket into slot k and start the copy of its segment.
  auto take = [&](int k) {
    const unsigned t = atomicAdd(&g_stream_ticket, 1u);
    tickets[k] = t;
    if (!k_bulk || t >= end) return;
    bool st;
    const int64_t g = stream_item(t, total, lag, &st), lo = min(a.n, (g % segs) * a.seg);
    const unsigned bytes = (unsigned)((min(a.n, lo + a.seg) - lo) * (int64_t)sizeof(in_t));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // earlier reads of the stage come first
    mbar_expect(&bars[k], bytes);
    // k_l2_hint: the statistics read keeps the segment in L2 ahead of the output stream (evict last) until its
    // apply item, the last read, lets it go (evict first).
    if constexpr (k_l2_hint)
      bulk_load_hint(stages + k * a.seg, a.x + (g / segs) * a.n + lo, bytes, &bars[k],
                     st ? l2_evict_last() : l2_evict_first());
    else bulk_load(stages + k * a.seg, a.x + (g / segs) * a.n + lo, bytes, &bars[k]);
  };
  if (threadIdx.x == 0) {
    if (k_bulk) {
      for (int k = 0; k < k_stages; ++k) mbar_init(&bars[k]);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (k_publish == pub_tagged) {  // 0 is what never-written records carry: skipped when it wraps
      const unsigned e = *(volatile unsigned*)&g_stream_epoch + 1u;
      epoch = e == 0 ? 1u : e;
    }
    for (int k = 0; k + 1 < k_stages; ++k) take(k);
  }
  __syncthreads();
  for (unsigned it = 0;; ++it) {
    const int k = (int)(it % k_stages);
    const int64_t t = tickets[k];
    if (t >= end) break;  // the tickets this block took after t are later still: none has a copy in flight
    // The stage of the last item, released by the barrier that ended it (a later ticket than any the block holds).
    if (threadIdx.x == 0) take((int)((it + k_stages - 1) % k_stages));
    bool stats;
    const int64_t g = stream_item(t, total, lag, &stats);
    const int64_t row = g / segs, lo = min(a.n, (g % segs) * a.seg), hi = min(a.n, lo + a.seg), base = row * a.n;
    if (k_bulk) mbar_wait(&bars[k], (it / k_stages) & 1);
    // Element i of the segment, from the stage or from x.
    auto load = [&](int64_t i, float* x) {
      if constexpr (k_bulk) load_vec<in_t, V>(stages + k * a.seg + (i - lo), x), prologue_x<V>(x);
      else load_x<V>(a, base + i, x);
    };
    if (stats) {
      segment_stats<V>(a, g, row, lo, hi, segs, load, scratch, &last, epoch);
    } else {
      if constexpr (k_publish == pub_tagged) {
        if (threadIdx.x < 32) {
          const float shift = row_shift<V>(a, base);
          const f3 q = warp_sum_tagged(row * segs, segs, epoch);
          if (threadIdx.x == 0) row_stats = finish_stats(q, shift, a.eps);
        }
      } else {
        if (threadIdx.x == 0) row_stats = wait_row_stats(row);
      }
      __syncthreads();
      segment_apply<V>(a, row, lo, hi, row_stats, load);  // row_stats is rewritten only after two barriers
    }
    __syncthreads();  // the stage is free again, and the next ticket is in
  }
  if (threadIdx.x == 0) {  // every block took its last ticket before counting itself out
    __threadfence();
    last = atomicAdd(&g_stream_out, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    if constexpr (k_publish == pub_tagged) {
      if (threadIdx.x == 0) g_stream_epoch = epoch;  // every block read the old one when it started
    } else {
      for (int64_t r = threadIdx.x; r < a.rows; r += NT) g_row_done[r] = 0, g_row_ready[r] = 0;
    }
    if (threadIdx.x == 0) g_stream_ticket = 0, g_stream_out = 0;
    __threadfence();
  }
}

static grid_setup g_stream_setup[2];  // per vector width: k_stages stages of a segment a block

template <int V>
int launch_ring(norm_args a, cudaStream_t s);  // group_norm_cuda_ring.cuh: strategy=ring, over stream's segments

// As many blocks as run at once (more would only queue for tickets), at most k_sm_blocks an SM when set. -1 when the
// shape does not fit the counters or the device cannot run the kernel (the caller falls back to a block per row), 3 on
// a launch error.
template <int V>
int launch_stream(norm_args a, cudaStream_t s) {
  constexpr bool k_bulk = V * sizeof(in_t) == 16;
  if (a.rows > k_part_cap) return -1;
  const int64_t es = sizeof(in_t);
  int64_t seg = max((int64_t)V, (int64_t)k_seg_kb * 1024 / es / V * V);
  int64_t segs = (a.n + seg - 1) / seg;
  if (a.rows * segs > k_part_cap) {  // fewer, longer segments
    seg = ((a.n + k_part_cap / a.rows - 1) / (k_part_cap / a.rows) + V - 1) / V * V;
    segs = (a.n + seg - 1) / seg;
  }
  const size_t smem = k_bulk ? (size_t)(k_stages * seg * es) : 0;
  grid_setup& su = g_stream_setup[V == 1 ? 0 : 1];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 3;
  if (dev != su.dev || smem != su.smem) {
    if (cudaDeviceGetAttribute(&su.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&su.l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess ||
        cudaFuncSetAttribute(stream_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&su.per_sm, stream_kernel<V>, NT, smem) != cudaSuccess ||
        su.per_sm < 1) {
      cudaGetLastError();
      su.dev = -1;
      return -1;
    }
    su.dev = dev;
    su.smem = smem;
  }
  // A tensor that fits in k_team_l2 % of L2 goes to the team kernel instead: L2 keeps all of x between the two
  // passes anyway, and the team's shorter critical path wins where latency, not bandwidth, bounds the run.
  if (k_team_l2 > 0 && a.rows * a.n * es * 100 <= (int64_t)k_team_l2 * su.l2) {
    const int rc = launch_team<V>(a, s);
    if (rc >= 0) return rc;
  }
  a.seg = seg;
  a.splits = (int)segs;
  if constexpr (k_strategy == s_ring) {  // the segments held in shared memory where the device has room for them
    const int rc = launch_ring<V>(a, s);
    if (rc >= 0) return rc;
  }
  const int64_t total = a.rows * segs;
  const int per_sm = k_sm_blocks > 0 && k_sm_blocks < su.per_sm ? k_sm_blocks : su.per_sm;
  const int64_t blocks = min(2 * total, (int64_t)per_sm * su.sms);
  // The apply item of segment g is taken `lag` statistics tickets after segment g's: past a whole row, past the
  // statistics items still running or held (k_stages - 1 a block), plus k_lag_mb MiB of slack, so it rarely waits.
  const int64_t lag = min(total, segs + blocks * (k_stages - 1) + ((int64_t)k_lag_mb << 20) / (seg * es));
  stream_kernel<V><<<(unsigned)blocks, NT, smem, s>>>(a, lag);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace kfk
