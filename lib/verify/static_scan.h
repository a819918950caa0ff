// The static scan of a candidate's source (docs/design.md "Verify", the first stage): no stream or thread creation, no
// device-wide sync, no host I/O, no process calls, no L2 persistence, no run-time code loading, no calls into
// torch/ATen/cuDNN/cuBLAS unless the spec allows the library. Comments and string literals are blanked first, so
// a rule named in a comment or a message is not a finding. The dynamic checks stay the backstop: a scan of text
// cannot see through every macro.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "exec/device.h"
#include "verify/verdict.h"

namespace kf {

struct scan_finding {
  std::string rule;    // "static.host_io", ... (verdict.h's table)
  int line = 0;        // 1-based
  std::string token;   // what matched: "std::cout", "<<<grid, block>>>", "#include <torch/torch.h>"
  std::string detail;  // why it is not allowed
};

struct scan_options {
  device_kind device = device_kind::cuda;
  std::vector<std::string> allow_libraries;  // spec.allow_libraries: "cublas", "cudnn", "torch"
};

std::vector<scan_finding> static_scan(std::string_view source, const scan_options& options);

// The source with comments (and, when asked, the contents of string and character literals) replaced by
// spaces; newlines and length are kept, so positions still map to lines.
std::string blank_comments(std::string_view source, bool also_strings);

// One check per static rule into `v`: passed when the rule found nothing, else failed with the first finding's
// line and token (and how many findings there were).
void add_scan_checks(verdict& v, const std::vector<scan_finding>& findings);

}  // namespace kf
