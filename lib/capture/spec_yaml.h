// Writing a workload spec as YAML in the bundled specs' style (one input, op or case a line, flow mappings,
// `- silu` for an op without arguments), with comment lines above it and a comment after each case, such that
// parse_spec reads back the same spec.
#pragma once
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kf::capture {

struct spec_comments {
  std::vector<std::string> header;  // each becomes a "# " line before `version`
  std::vector<std::string> cases;   // parallel to spec.cases (missing or empty: none)
};

std::string spec_yaml(const workload_spec& s, const spec_comments& comments = {});

// A number as YAML that reads back as the same double: the shortest form, of the float32 value where the double
// is one (an eps a model stored as float32 prints as 1e-06, not 9.999999974752427e-07), with ".0" on integers.
std::string yaml_number(double v);

}  // namespace kf::capture
