// The comment a kernel source opens with. A family's kernel opens with its header: the family and its version,
// every knob in one list, what the kernel computes. A stored winner adds its provenance right after those lines
// (write_winner): which workload and GPU key, how and when it was found, its lineage, what it measured, and each
// re-emission. The .json beside a winner holds the same family, version and knobs (docs/design.md "Stores").
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kf {

struct kernel_header {
  std::string family;
  int version = 0;
  std::map<std::string, std::string> knobs;  // every knob of the family, at the value the code reads
  std::string computes;                      // the graph it implements, in words
};

// "// kforge kernel: family F, version N\n// knobs: a=1 b=2\n// computes: ...\n". Asserts on a knob name or value
// with a space or '=' (knob values are single words).
std::string format_kernel_header(const kernel_header& h);

// The header a source opens with (provenance lines after it are not read); nullopt, with the reason, when the
// source does not open with one (a proposer's rewrite, a winner stored before families had versions).
std::optional<kernel_header> parse_kernel_header(std::string_view source, std::string* why_not = nullptr);

// `source` without the kernel header it opens with (unchanged when it opens with none): a proposer's rewrite that
// kept its parent's header would claim the parent's family and knobs.
std::string without_kernel_header(std::string_view source);

// The first line of a stored winner's provenance starts with this ("// kforge winner: W on KEY").
inline constexpr std::string_view k_winner_line = "// kforge winner: ";

// `source` with `lines` as its provenance, each folded onto one comment line (so none can turn into code): after
// the kernel header, or at the top, followed by a blank line, for a source that has no header.
std::string with_provenance(std::string_view source, const std::vector<std::string>& lines);
// A stored winner's provenance lines (without the "// "), as with_provenance placed them; empty when it has none.
std::vector<std::string> provenance_lines(std::string_view stored);
// A stored winner's source without its provenance: what the family (or the proposer) emitted.
std::string without_provenance(std::string_view stored);

}  // namespace kf
