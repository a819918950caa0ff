// What `kforge search` and `kforge retune` share: one search of one workload on one device, with the progress
// line, Ctrl-C handling, the final summary and the winner written beside the spec.
#pragma once
#include <string>
#include <vector>

#include "exec/device.h"
#include "search/interrupt.h"
#include "search/search_driver.h"
#include "spec/spec.h"

namespace kf {

struct session_settings {
  device_id device;
  // --devices: several devices, one worker each (search/multi_evaluator.h); empty: `device` alone (the same code
  // path as before --devices). The first is the reference the times are scaled to.
  std::vector<device_id> devices;
  std::vector<std::string> device_names;  // "cuda:1", "cpu#2" (pipeline/device_list.h)
  search_options search;
  std::string db_path = ".kforge/search.db";
  std::string cache_root = ".kforge/cache";
  std::vector<std::string> baselines;  // empty: the spec's
  bool write = true;                   // write the winner to workloads/<name>/kernels
  double min_gain = 0.02;              // ... only when it beats the stored kernel by this fraction (replaces_stored)
  std::string tree_path;               // non-empty: write the tree there (tree_export.h)
  std::vector<candidate> tried;        // --try: variants to seed the search with, after the stored winners
};

struct session_result {
  std::string gpu_key;
  std::vector<std::string> lost_devices;  // --devices: "cuda:1: why"
  search_outcome outcome;
  std::string written;  // the kernel file written, or "" (with `why_not_written`)
  std::string why_not_written;
};

class args;
// --min-gain as a fraction: "2%" and "2" both mean 2 % (0.02, the default when absent); user_error outside 0-99 %.
double min_gain_flag(const args& a);

// Throws user_error when no family covers the spec on the device.
session_result run_search_session(const workload_spec& spec, const session_settings& settings);

}  // namespace kf
