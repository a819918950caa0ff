#include "store/kernel_header.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "report/text_escape.h"
#include "util/error.h"

namespace kf {
namespace {

constexpr std::string_view k_kernel_prefix = "// kforge kernel: family ", k_version_sep = ", version ";
constexpr std::string_view k_knobs_prefix = "// knobs:", k_computes_prefix = "// computes:";

// The line of `s` that starts at `at` (without its newline), and where the next one starts (npos at the end).
std::string_view line_at(std::string_view s, size_t at, size_t* next) {
  const size_t nl = s.find('\n', at);
  *next = nl == std::string_view::npos ? std::string_view::npos : nl + 1;
  return s.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
}

std::string trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

// Where the kernel header's three lines end (the start of the line after them), or npos when `s` does not open
// with them.
size_t header_end(std::string_view s) {
  size_t at = 0;
  for (std::string_view prefix : {k_kernel_prefix, k_knobs_prefix, k_computes_prefix}) {
    if (at == std::string_view::npos || !s.substr(at).starts_with(prefix)) return std::string_view::npos;
    size_t next;
    line_at(s, at, &next);
    at = next;
  }
  return at == std::string_view::npos ? s.size() : at;
}

// The range [begin, end) of the provenance lines in `s`, or begin == end when there are none; `blank`: a blank
// line after them belongs to them (a source without a header gets one).
void provenance_range(std::string_view s, size_t* begin, size_t* end) {
  size_t at = header_end(s);
  const bool headed = at != std::string_view::npos;
  if (!headed) at = s.starts_with(k_winner_line) ? 0 : s.size();
  *begin = at;
  while (at < s.size() && s.substr(at).starts_with("//")) {
    size_t next;
    line_at(s, at, &next);
    at = next == std::string_view::npos ? s.size() : next;
  }
  if (!headed && at > *begin && at < s.size() && s[at] == '\n') ++at;  // the blank line with_provenance added
  *end = at;
}

}  // namespace

std::string format_kernel_header(const kernel_header& h) {
  std::string knobs;
  for (auto& [k, v] : h.knobs) {
    KF_ASSERT(!k.empty() && k.find_first_of(" =\n") == std::string::npos && v.find_first_of(" \n") == std::string::npos,
              "knob {}={} cannot be written on the knobs line", k, v);
    knobs += fmt::format(" {}={}", k, v);
  }
  std::string computes = h.computes;
  std::replace(computes.begin(), computes.end(), '\n', ' ');
  return fmt::format("{}{}{}{}\n{}{}\n{} {}\n", k_kernel_prefix, h.family, k_version_sep, h.version, k_knobs_prefix,
                     knobs, k_computes_prefix, computes);
}

std::optional<kernel_header> parse_kernel_header(std::string_view source, std::string* why_not) {
  auto fail = [&](std::string m) -> std::optional<kernel_header> {
    if (why_not) *why_not = std::move(m);
    return std::nullopt;
  };
  size_t next;
  const std::string_view first = line_at(source, 0, &next);
  if (header_end(source) == std::string_view::npos)
    return fail(fmt::format("it opens with `{}`, not with the three lines `// kforge kernel: family F, version N`, "
                            "`// knobs: ...`, `// computes: ...`",
                            first.substr(0, 100)));
  kernel_header h;
  const std::string_view rest = first.substr(k_kernel_prefix.size());
  const size_t sep = rest.find(k_version_sep);
  if (sep == std::string_view::npos) return fail(fmt::format("`{}` names no version", first));
  h.family = std::string(rest.substr(0, sep));
  const std::string_view num = rest.substr(sep + k_version_sep.size());
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), h.version);
  if (ec != std::errc() || end != num.data() + num.size() || h.family.empty())
    return fail(fmt::format("`{}` is not `// kforge kernel: family F, version N`", first));
  const std::string_view knobs = line_at(source, next, &next).substr(k_knobs_prefix.size());
  for (size_t at = 0; at < knobs.size();) {
    const size_t space = std::min(knobs.find(' ', at), knobs.size());
    const std::string_view item = knobs.substr(at, space - at);
    at = space + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return fail(fmt::format("knobs line: `{}` is not knob=value", item));
    h.knobs[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
  }
  h.computes = trimmed(line_at(source, next, &next).substr(k_computes_prefix.size()));
  return h;
}

std::string with_provenance(std::string_view source, const std::vector<std::string>& lines) {
  std::string block;
  for (auto& line : lines) {
    std::string clean = valid_utf8(line);
    std::replace(clean.begin(), clean.end(), '\n', ' ');
    std::replace(clean.begin(), clean.end(), '\r', ' ');
    block += "// " + clean + "\n";
  }
  const size_t at = header_end(source);
  if (at == std::string_view::npos) return block + (block.empty() ? "" : "\n") + std::string(source);
  std::string out(source.substr(0, at));
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + block + std::string(source.substr(at));
}

std::vector<std::string> provenance_lines(std::string_view stored) {
  size_t begin, end;
  provenance_range(stored, &begin, &end);
  std::vector<std::string> out;
  for (size_t at = begin; at < end;) {
    size_t next;
    std::string_view line = line_at(stored, at, &next);
    if (line.starts_with("//")) out.push_back(trimmed(line.substr(2)));
    at = next == std::string_view::npos ? end : next;
  }
  return out;
}

std::string without_provenance(std::string_view stored) {
  size_t begin, end;
  provenance_range(stored, &begin, &end);
  return std::string(stored.substr(0, begin)) + std::string(stored.substr(end));
}

std::string without_kernel_header(std::string_view source) {
  const size_t end = header_end(source);
  if (end == std::string_view::npos) return std::string(source);
  return std::string(source.substr(end));
}

}  // namespace kf
