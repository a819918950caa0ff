// The speed-of-light floor of a case (docs/design.md "Measure"): the larger of the bandwidth floor (unavoidable
// bytes over the copy bandwidth measured in the same run) and the launch floor (an empty kernel timed by the
// same protocol: cold, and inside a graph for hot).
#pragma once
#include <nlohmann/json.hpp>

namespace kf::measure {

struct floor_info {
  double bytes = 0;                // input bytes * input_reads + output bytes
  double copy_bandwidth_gbs = 0;
  double bandwidth_floor_us = 0;
  double launch_floor_us = 0;      // empty kernel, cold protocol
  double launch_floor_hot_us = 0;  // empty kernel, hot loop (0 when not measured)
  double floor_us = 0;             // max(bandwidth, launch cold): compare with cold medians
  double floor_hot_us = 0;         // max(bandwidth, launch hot): compare with hot medians
  // The time below which a kernel cannot have done its work (physical_floor_us below); 0 when not measured.
  double physical_floor_us = 0;
};

// Unavoidable bytes: every input read `input_reads` times (spec.input_reads), every output written once.
double unavoidable_bytes(double input_bytes, double output_bytes, double input_reads);

floor_info make_floor(double bytes, double copy_bandwidth_gbs, double launch_floor_us, double launch_floor_hot_us);

// The least time in which the inputs can come from DRAM: after the L2 flush every input byte is read from it once,
// but outputs up to `cache_bytes` can stay in the cache when the kernel ends, and a stream of reads alone can run
// above the copy bandwidth (reads and writes mixed; the H200's peak is ~1.15x its measured copy bandwidth), so 1.25x.
// A median below it skips work; the bandwidth floor is not that bound (BERT's LayerNorm, whose 25 MB output fits an
// H200's L2, ran at 118 % of it, correct).
double physical_floor_us(double input_bytes, double output_bytes, double cache_bytes, double copy_bandwidth_gbs);

// The fraction of the floor reached by a median time: floor / median (1 = at the floor); 0 for no median.
double floor_fraction(double floor_us, double median_us);

nlohmann::json to_json(const floor_info& f);
floor_info floor_info_from_json(const nlohmann::json& j);

}  // namespace kf::measure
