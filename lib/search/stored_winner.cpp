#include "search/stored_winner.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/dispatch.h"
#include "store/kernel_header.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

knob_values knobs_of(const nlohmann::json& meta) {
  knob_values out;
  if (meta.contains("knobs") && meta["knobs"].is_object())
    for (auto& [k, v] : meta["knobs"].items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

int version_of(const nlohmann::json& meta) {
  auto it = meta.find("family_version");
  return it != meta.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::string version_text(int v) {
  return v == 0 ? "version 0 (none recorded: stored before families had versions)" : fmt::format("version {}", v);
}

std::string knobs_text(const knob_values& v) {
  std::vector<std::string> parts;
  for (auto& [k, x] : v) parts.push_back(k + "=" + x);
  return fmt::format("{}", fmt::join(parts, " "));
}

// The first line where `a` and `b` differ: "line N: `...` against `...`".
std::string first_difference(const std::string& a, const std::string& b) {
  size_t at = 0, line = 1;
  while (at < a.size() && at < b.size() && a[at] == b[at]) {
    if (a[at] == '\n') ++line;
    ++at;
  }
  auto line_of = [&](const std::string& s) {
    const size_t begin = s.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t from = at == 0 || begin == std::string::npos ? 0 : begin + 1;
    return s.substr(from, std::min(s.find('\n', from), s.size()) - from).substr(0, 160);
  };
  return fmt::format("line {}: `{}` against `{}`", line, line_of(a), line_of(b));
}

// A winner stored before families had versions opened with "kforge winner: W on KEY", "kforge winner for W on KEY,
// found by ...", "family: F", "knobs: ...", lineage and measured lines, a blank line, then the candidate's own header:
// its provenance in today's lines (the family and knobs now live in the kernel header).
std::vector<std::string> legacy_provenance(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size() && text.compare(at, 2, "//") == 0;) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at + 2, nl - at - 2);
    if (!line.empty() && line[0] == ' ') line.erase(0, 1);
    at = nl + 1;
    if (line.starts_with("family: ") || line.starts_with("knobs: ")) continue;
    if (line.starts_with("kforge winner for ")) {
      constexpr std::string_view sep = ", found ";  // "..., found by `kforge search` (...) on DATE"
      const size_t found = line.find(sep);
      if (found != std::string::npos) line = "found: " + line.substr(found + sep.size());
    }
    out.push_back(line);
  }
  return out;
}

std::string reemit_how(const workload_spec& spec, const stored_kernel& k) {
  return fmt::format("re-emit it with `kforge reemit {}` (its knobs, the family's code of today), then time it with "
                     "`kforge run {}` on {}",
                     spec.name, spec.name, k.gpu_key);
}

// A dispatch kernel (search/dispatch.h) is current when its .json and header name the same parts and re-emitting
// every part at its family's version today gives its source.
winner_check check_dispatch(const workload_spec& spec, const stored_kernel& k, const std::string& text,
                            winner_check out) {
  auto fail = [&](std::string why) {
    out.why = fmt::format("{}: {}", k.metadata.string(), why);
    return out;
  };
  const knob_values knobs = knobs_of(k.meta);
  std::string why;
  const auto header = parse_kernel_header(text, &why);
  if (!header) return fail(fmt::format("{}'s source has no kernel header: {}", k.source.filename().string(), why));
  if (version_of(k.meta) != k_dispatch_version || header->family != k_dispatch_family ||
      header->version != k_dispatch_version || header->knobs != knobs)
    return fail(fmt::format("its .json and its source's header do not name the same dispatch version {} and parts: {}",
                            k_dispatch_version, reemit_how(spec, k)));
  auto parts = parse_dispatch_knobs(knobs, &why);
  if (!parts) return fail("its parts do not parse: " + why);
  auto emitted = emit_dispatch(spec, device_of_key(k.gpu_key), *parts, &why);
  if (!emitted) return fail(why + ": " + reemit_how(spec, k));
  if (*emitted != without_provenance(text))
    return fail(fmt::format("its parts emit another source ({}, stored against emitted): a family's code changed "
                            "without a new version, or the file was edited by hand",
                            first_difference(without_provenance(text), *emitted)));
  out.current = true;
  return out;
}

}  // namespace

device_kind device_of_key(const std::string& gpu_key) {
  return arch_prefix(gpu_key) == "cpu" ? device_kind::cpu : device_kind::cuda;
}

winner_check check_winner(const workload_spec& spec, const stored_kernel& k) {
  winner_check out;
  auto fail = [&](std::string why) {
    out.why = fmt::format("{}: {}", k.metadata.string(), why);
    return out;
  };
  const std::string text = read_file(k.source);
  const std::string fam = k.meta.value("family", "");
  std::string why_header;
  const auto header = parse_kernel_header(text, &why_header);
  if (fam.empty()) {  // a proposer's rewrite: nothing emitted it (a header in it is its parent's)
    out.current = true;
    return out;
  }
  if (fam == k_dispatch_family) return check_dispatch(spec, k, text, out);
  const family* f = find_family(fam, device_of_key(k.gpu_key));
  if (!f) return fail(fmt::format("names family {}, which the family table does not have for the {} device", fam,
                                  device_kind_name(device_of_key(k.gpu_key))));
  const std::string how = reemit_how(spec, k);
  const int version = version_of(k.meta);
  if (version != f->version())
    return fail(fmt::format("emitted by {} {}, and the family is at version {}: {}", fam, version_text(version),
                            f->version(), how));
  if (!header) return fail(fmt::format("{}'s source has no kernel header: {}; {}", k.source.filename().string(),
                                       why_header, how));
  const knob_values knobs = knobs_of(k.meta);
  if (header->family != fam || header->version != version || header->knobs != knobs)
    return fail(fmt::format("its .json says {} version {} with knobs {}, its source's header {} version {} with knobs "
                            "{}: {}",
                            fam, version, knobs_text(knobs), header->family, header->version,
                            knobs_text(header->knobs), how));
  std::string why;
  if (!f->valid(knobs, spec, &why)) return fail(fmt::format("{} rejects its knobs ({}): {}", fam, why, how));
  if (f->canonical_knobs(spec, knobs) != knobs)
    return fail(fmt::format("its knobs are not the ones its code reads ({} emits with {}): {}", fam,
                            knobs_text(f->canonical_knobs(spec, knobs)), how));
  const std::string emitted = f->emit(spec, knobs), stored = without_provenance(text);
  if (emitted != stored)
    return fail(fmt::format("{} version {} emits another source from its knobs ({}, stored against emitted): the "
                            "family's code changed without a new version (bump its version() and {}), or the file was "
                            "edited by hand",
                            fam, version, first_difference(stored, emitted), how.substr(0, how.find(" (its knobs"))));
  out.current = true;
  return out;
}

namespace {

// The knobs of `recorded` as `f` reads them today (reemit_winner's rules), the ones filled in `filled`; throws
// user_error (through `fail`) where the code path is gone.
template <typename Fail>
knob_values knobs_today(const family& f, const workload_spec& spec, const knob_values& recorded,
                        std::map<std::string, std::string>& filled, const Fail& fail) {
  knob_values knobs = recorded;
  const auto ks = f.knobs();
  for (auto& [name, _] : recorded)
    if (std::none_of(ks.begin(), ks.end(), [&](const knob& x) { return x.name == name; }))
      throw fail(fmt::format("sets knob {}, which {} no longer has: its code path is gone; search again (`kforge "
                             "search {}`)", name, f.name(), spec.name));
  const knob_values defaults = f.default_variant(spec);
  std::vector<std::string> unread;  // filled with the default: the variant must not read them
  for (auto& x : ks) {
    if (knobs.count(x.name)) continue;
    if (!x.before.empty()) {
      knobs[x.name] = x.before;
      filled[x.name] = x.before + " (the code before the knob)";
    } else {
      knobs[x.name] = defaults.at(x.name);
      unread.push_back(x.name);
    }
  }
  std::string why;
  if (!f.valid(knobs, spec, &why)) throw fail(fmt::format("{} rejects its knobs {}: {}", f.name(), knobs_text(knobs), why));
  for (auto& name : unread) {
    if (knob_read(f, spec, knobs, name))
      throw fail(fmt::format("lacks knob {}, which this variant of {} reads, and the family does not say which value "
                             "gives the code from before the knob (knob::before in its knobs()): set it in the .json "
                             "by hand, or search again",
                             name, f.name()));
    filled[name] = f.canonical_knobs(spec, knobs).at(name) + " (not read by this variant)";
  }
  return f.canonical_knobs(spec, knobs);
}

}  // namespace

reemitted_winner reemit_winner(const workload_spec& spec, const stored_kernel& k, const std::string& date) {
  auto fail = [&](std::string why) { return user_error(fmt::format("{}: {}", k.metadata.string(), why)); };
  reemitted_winner out;
  out.family = k.meta.value("family", "");
  if (out.family.empty()) throw fail("names no family (a proposer's rewrite): there is nothing to re-emit it from");
  const device_kind device = device_of_key(k.gpu_key);
  out.from_version = version_of(k.meta);
  const knob_values recorded = knobs_of(k.meta);
  std::string source;
  if (out.family == k_dispatch_family) {  // each part re-emitted by its family
    std::string why;
    auto parts = parse_dispatch_knobs(recorded, &why);
    if (!parts) throw fail("its dispatch parts do not parse: " + why);
    for (size_t i = 0; i < parts->size(); ++i) {
      auto& p = (*parts)[i];
      const family* f = find_family(p.family, device);
      if (!f) throw fail(fmt::format("part {} names family {}, which the family table does not have for the {} device",
                                     i, p.family, device_kind_name(device)));
      std::map<std::string, std::string> filled;
      p.knobs = knobs_today(*f, spec, p.knobs, filled, fail);
      p.version = f->version();
      for (auto& [name, value] : filled) out.filled[fmt::format("p{}.{}", i, name)] = value;
    }
    auto emitted = emit_dispatch(spec, device, *parts, &why);
    if (!emitted) throw fail(why);
    source = std::move(*emitted);
    out.to_version = k_dispatch_version;
    out.knobs = dispatch_knobs(*parts);
  } else {
    const family* f = find_family(out.family, device);
    if (!f) throw fail(fmt::format("names family {}, which the family table does not have for the {} device",
                                   out.family, device_kind_name(device)));
    out.to_version = f->version();
    out.knobs = knobs_today(*f, spec, recorded, out.filled, fail);
    source = f->emit(spec, out.knobs);
  }

  const std::string old_text = read_file(k.source);
  std::vector<std::string> lines = parse_kernel_header(old_text) ? provenance_lines(old_text) : legacy_provenance(old_text);
  std::vector<std::string> filled;
  for (auto& [name, value] : out.filled) filled.push_back(name + "=" + value);
  lines.push_back(fmt::format("re-emitted: by `kforge reemit` on {}, {} version {} from {}{}; measured above is the "
                              "earlier kernel's",
                              date, out.family, out.to_version, version_text(out.from_version),
                              filled.empty() ? "" : fmt::format("; knobs filled: {}", fmt::join(filled, ", "))));
  out.text = with_provenance(source, lines);

  out.metadata = k.meta;
  out.metadata["family_version"] = out.to_version;
  out.metadata["knobs"] = out.knobs;
  out.metadata["source_sha256"] = sha256_hex(source);
  nlohmann::json entry = {{"date", date},
                          {"from_version", out.from_version},
                          {"to_version", out.to_version},
                          {"knobs_recorded", recorded},
                          {"filled", out.filled}};
  if (!out.metadata.contains("reemitted") || !out.metadata["reemitted"].is_array())
    out.metadata["reemitted"] = nlohmann::json::array();
  out.metadata["reemitted"].push_back(entry);
  return out;
}

}  // namespace kf
