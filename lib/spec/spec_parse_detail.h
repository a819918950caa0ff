// Internal to the spec parser: the parts of a file, each read by its own function, and the source locations
// the cross-field checks need once the whole file is read.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "spec/yaml_reader.h"

namespace kf::detail {

struct parse_locs {
  std::map<std::string, source_loc> input_shapes;                // input name -> its `shape` node
  std::map<std::string, source_loc> inputs;                      // input name -> its key
  std::vector<std::map<std::string, source_loc>> op_args;        // per op: argument -> its value ("" the op)
  std::vector<std::map<std::string, source_loc>> case_keys;      // per case: symbol -> its key
  std::vector<std::map<std::string, source_loc>> case_values;    // per case: symbol -> its value
  std::vector<size_t> case_index;                                // per case: its index in the YAML list
  std::vector<bool> case_clean;                                  // per case: read without errors
  bool inputs_ok = true, graph_ok = true, cases_ok = true;       // no errors in that part
  bool shapes_ok = true;                                         // every input's shape was read
};

void parse_inputs(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs);
void parse_cases(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs);
void parse_graph(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs);
// `outputs`, after the graph: each name is the last op's result or an op's `as`, and the last op's are all listed.
void parse_outputs(yaml_reader& r, const YAML::Node& n, workload_spec* out);
// Checks that need the whole spec: symbols bound by every case, unused inputs, shapes along the graph per case.
void check_spec(yaml_reader& r, const workload_spec& s, const parse_locs& locs);

}  // namespace kf::detail
