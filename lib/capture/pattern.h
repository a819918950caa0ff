// One call of a pattern written as the spec graph it is: the steps folded (fold.h), the tensors it takes from
// outside named as spec inputs (x, then w, b, mask, z by the argument they fill), this call's input shapes, and
// a signature of everything but the sizes, by which the merge groups the calls of one pattern.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capture/group.h"
#include "capture/trace.h"
#include "spec/spec.h"

namespace kf::capture {

struct pattern_input {
  std::string name;                          // x, w, b, mask, z, ...
  int64_t value = -1;                        // the trace value it stands for
  std::vector<int64_t> shape;                // in this call
  kf::dtype type = kf::dtype::float32;
  std::string memory_format = "contiguous";  // or channels_last
  init_spec init;                            // by its part: a norm's weight near 1, a mask causal, ...
};

struct pattern_call {
  std::vector<op_call> graph;          // the spec graph (the first op's args hold "input"); no `as` yet
  std::vector<pattern_input> inputs;   // in the order the graph first names them
  std::vector<bool> escapes;           // per step: its result is read outside the pattern (returned with `as`)
  std::string signature;               // the graph and the inputs' dtypes, ranks and layouts: all but the sizes
  std::string where;                   // its operators' modules, in order: "layers.0 + layers.1.input_layernorm"
  double time_us = 0;
  int64_t bytes = 0;                   // what it reads (inputs) and writes (results)
};

pattern_call make_pattern(const trace& t, const group& g);

// "add -> rms_norm", with the argument that tells calls apart where one does ("softmax(float32)").
std::string pattern_text(const std::vector<op_call>& graph);

}  // namespace kf::capture
