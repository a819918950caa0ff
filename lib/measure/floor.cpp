// Floors: see floor.h.
#include "measure/floor.h"

#include <algorithm>

#include "util/error.h"

namespace kf::measure {

double unavoidable_bytes(double input_bytes, double output_bytes, double input_reads) {
  KF_ASSERT(input_bytes >= 0 && output_bytes >= 0 && input_reads >= 0, "negative bytes ({}, {}, reads {})",
            input_bytes, output_bytes, input_reads);
  return input_bytes * input_reads + output_bytes;
}

floor_info make_floor(double bytes, double copy_bandwidth_gbs, double launch_floor_us, double launch_floor_hot_us) {
  KF_ASSERT(copy_bandwidth_gbs > 0, "copy bandwidth {} GB/s", copy_bandwidth_gbs);
  floor_info f;
  f.bytes = bytes;
  f.copy_bandwidth_gbs = copy_bandwidth_gbs;
  f.bandwidth_floor_us = bytes / (copy_bandwidth_gbs * 1e9) * 1e6;
  f.launch_floor_us = launch_floor_us;
  f.launch_floor_hot_us = launch_floor_hot_us;
  f.floor_us = std::max(f.bandwidth_floor_us, launch_floor_us);
  f.floor_hot_us = std::max(f.bandwidth_floor_us, launch_floor_hot_us);
  return f;
}

double physical_floor_us(double input_bytes, double output_bytes, double cache_bytes, double copy_bandwidth_gbs) {
  KF_ASSERT(copy_bandwidth_gbs > 0, "copy bandwidth {} GB/s", copy_bandwidth_gbs);
  const double dram = input_bytes + std::max(0.0, output_bytes - std::max(0.0, cache_bytes));
  return dram / (copy_bandwidth_gbs * 1.25 * 1e9) * 1e6;
}

double floor_fraction(double floor_us, double median_us) { return median_us > 0 ? floor_us / median_us : 0; }

nlohmann::json to_json(const floor_info& f) {
  return {{"bytes", f.bytes},
          {"copy_bandwidth_gbs", f.copy_bandwidth_gbs},
          {"bandwidth_floor_us", f.bandwidth_floor_us},
          {"launch_floor_us", f.launch_floor_us},
          {"launch_floor_hot_us", f.launch_floor_hot_us},
          {"floor_us", f.floor_us},
          {"floor_hot_us", f.floor_hot_us},
          {"physical_floor_us", f.physical_floor_us}};
}

floor_info floor_info_from_json(const nlohmann::json& j) {
  floor_info f;
  f.bytes = j.at("bytes").get<double>();
  f.copy_bandwidth_gbs = j.value("copy_bandwidth_gbs", 0.0);
  f.bandwidth_floor_us = j.at("bandwidth_floor_us").get<double>();
  f.launch_floor_us = j.at("launch_floor_us").get<double>();
  f.launch_floor_hot_us = j.value("launch_floor_hot_us", 0.0);
  f.floor_us = j.at("floor_us").get<double>();
  f.floor_hot_us = j.value("floor_hot_us", f.floor_us);
  f.physical_floor_us = j.value("physical_floor_us", 0.0);
  return f;
}

}  // namespace kf::measure
