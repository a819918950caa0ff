#include "search/roots.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "search/dispatch.h"
#include "search/proposer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {

std::string family_kind(const std::string& name) {
  for (const char* suffix : {"_cpu", "_cuda"}) {
    std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
      return name.substr(0, name.size() - s.size());
  }
  return name;
}

namespace {

// A stored winner's knobs for the family as it is now: a knob the family gained since is set to the value whose
// code the winner already had (knob::before, as `kforge reemit` does), or to the family's default for this spec
// when the knob came with new code; knobs it dropped are removed. `changes` says which, for the root's origin. Knobs that share
// no name with the family's are returned unchanged (nothing of the winner would be left).
knob_values current_knobs(const family& f, const workload_spec& spec, knob_values knobs, std::string* changes) {
  changes->clear();
  const auto ks = f.knobs();
  if (std::none_of(ks.begin(), ks.end(), [&](const knob& k) { return knobs.count(k.name) > 0; })) return knobs;
  const auto defaults = f.default_variant(spec);
  std::vector<std::string> said;
  for (auto& k : f.knobs())
    if (!knobs.count(k.name)) {
      knobs[k.name] = k.before.empty() ? defaults.at(k.name) : k.before;
      said.push_back(k.name + "=" + knobs[k.name]);
    }
  for (auto it = knobs.begin(); it != knobs.end();) {
    bool known = std::any_of(ks.begin(), ks.end(), [&](const knob& k) { return k.name == it->first; });
    if (!known) said.push_back("-" + it->first);
    it = known ? std::next(it) : knobs.erase(it);
  }
  *changes = fmt::format("{}", fmt::join(said, " "));
  return knobs;
}

std::string trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_on(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(trimmed(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at)));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

candidate tried_root(const workload_spec& spec, device_kind device, const std::string& text) {
  auto bad = [&](const std::string& what) { return user_error(fmt::format("--try \"{}\": {}", text, what)); };
  const auto fams = covering_families(spec, device);
  std::string body = text;
  const family* f = nullptr;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::string name = trimmed(std::string_view(text).substr(0, colon));
    body = text.substr(colon + 1);
    for (auto* c : fams)
      if (c->name() == name) f = c;
    if (!f) {
      std::vector<std::string> names;
      for (auto* c : fams) names.push_back(c->name());
      throw bad(fmt::format("no family {} covers {} on the {} device (covering: {})", name, spec.name,
                            device_kind_name(device), names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
  } else if (fams.size() == 1) {
    f = fams.front();
  } else {
    throw bad(fmt::format("{} families cover {} on the {} device: name one (FAMILY:knob=value ...)", fams.size(),
                          spec.name, device_kind_name(device)));
  }
  knob_values v = f->default_variant(spec);
  for (const std::string& item : split_on(body, ' ')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw bad(fmt::format("\"{}\" is not knob=value", item));
    v[item.substr(0, eq)] = item.substr(eq + 1);
  }
  // valid() names an unknown knob or a value not among the knob's (knobs_in_range), with the choices.
  std::string why;
  if (!f->valid(v, spec, &why)) throw bad(fmt::format("{} rejects the variant: {}", f->name(), why));
  return family_candidate(*f, spec, v, "tried: " + trimmed(body));
}

}  // namespace

std::vector<candidate> tried_roots(const workload_spec& spec, device_kind device, const std::string& text) {
  std::vector<candidate> out;
  for (const std::string& one : split_on(text, ';'))
    if (!one.empty()) out.push_back(tried_root(spec, device, one));
  return out;
}

root_set search_roots(const workload_spec& spec, device_kind device, const std::string& gpu_key,
                      const std::filesystem::path& kernels_dir) {
  root_set out;
  std::set<std::string> keys;
  auto add = [&](candidate c) {
    if (keys.insert(candidate_key(c)).second) out.roots.push_back(std::move(c));
  };
  std::vector<std::filesystem::path> metas;
  std::error_code ec;
  if (std::filesystem::is_directory(kernels_dir, ec))
    for (auto& e : std::filesystem::directory_iterator(kernels_dir, ec))
      if (e.path().extension() == ".json") metas.push_back(e.path());
  // This key's winner first, then the others in name order (deterministic roots).
  std::sort(metas.begin(), metas.end(), [&](auto& a, auto& b) {
    bool ma = a.stem() == gpu_key, mb = b.stem() == gpu_key;
    return ma != mb ? ma : a < b;
  });
  for (auto& path : metas) {
    std::string key = path.stem().string();
    nlohmann::json meta = nlohmann::json::parse(read_file(path), nullptr, false);
    if (!meta.is_object()) {
      out.notes.push_back(fmt::format("{}: not JSON, skipped", path.string()));
      continue;
    }
    std::string fam = meta.value("family", "");
    knob_values knobs;
    if (meta.contains("knobs") && meta["knobs"].is_object())
      for (auto& [k, v] : meta["knobs"].items()) knobs[k] = v.is_string() ? v.get<std::string>() : v.dump();
    // A dispatch kernel's parts are family variants of their own: each is a root the proposer moves from.
    std::vector<std::pair<std::string, knob_values>> variants;  // (family, knobs), with the origin's suffix below
    std::vector<std::string> suffixes;
    if (fam == k_dispatch_family) {
      std::string why;
      auto parts = parse_dispatch_knobs(knobs, &why);
      if (!parts) out.notes.push_back(fmt::format("{}: its dispatch parts do not parse ({}), skipped", path.string(), why));
      for (size_t i = 0; parts && i < parts->size(); ++i) {
        variants.emplace_back((*parts)[i].family, (*parts)[i].knobs);
        suffixes.push_back(fmt::format(" part {}", i));
      }
    } else {
      variants.emplace_back(fam, knobs);
      suffixes.push_back("");
    }
    if (key == gpu_key) {
      // This GPU's own winner, exactly as stored (its family and knobs let the proposer move from it).
      auto src = path.parent_path() / (key + (device == device_kind::cpu ? ".cpp" : ".cu"));
      if (!std::filesystem::exists(src)) {
        out.notes.push_back(fmt::format("{}: no {} beside it, skipped", path.string(), src.filename().string()));
        continue;
      }
      candidate c;
      c.source = read_file(src);
      c.source_hash = sha256_hex(c.source);
      c.origin = "stored:" + key;
      const family* f = fam.empty() ? nullptr : find_family(fam, device);
      const bool current = f && f->valid(knobs, spec, nullptr);
      if (current || fam == k_dispatch_family) {  // a dispatch kernel: keyed by its parts, moved from through them
        c.family = fam;
        c.knobs = knobs;
      }
      add(std::move(c));
      // The family changed knobs since: the same knobs re-emitted, completed with today's defaults, so that
      // the proposer can move from the stored winner.
      for (size_t i = 0; i < variants.size(); ++i) {
        const family* vf = find_family(variants[i].first, device);
        if (!vf || (fam != k_dispatch_family && current)) continue;
        std::string changes;
        auto now = current_knobs(*vf, spec, variants[i].second, &changes);
        if (!vf->valid(now, spec, nullptr)) continue;
        add(family_candidate(*vf, spec, now, "stored:" + key + suffixes[i] +
                                                 (changes.empty() ? "" : " (knobs now: " + changes + ")")));
        if (!changes.empty())
          out.notes.push_back(fmt::format("{}: {} changed its knobs since; also re-emitted with {}", path.string(),
                                          vf->name(), changes));
      }
      continue;
    }
    if (fam.empty()) {
      out.notes.push_back(fmt::format("{}: names no family, cannot be re-emitted for {}", path.string(), gpu_key));
      continue;
    }
    for (size_t i = 0; i < variants.size(); ++i) {
      std::string mine = family_kind(variants[i].first) + "_" + std::string(device_kind_name(device));
      const family* f = find_family(mine, device);
      std::string why;
      if (!f) {
        out.notes.push_back(fmt::format("{}: no family {} for this device", path.string(), mine));
        continue;
      }
      std::string changes;
      knob_values k = current_knobs(*f, spec, variants[i].second, &changes);
      if (!f->valid(k, spec, &why)) {
        out.notes.push_back(fmt::format("{}: knobs of {} do not fit {} ({})", path.string(), variants[i].first, mine, why));
        continue;
      }
      add(family_candidate(*f, spec, k, "stored:" + key + suffixes[i] +
                                            (changes.empty() ? "" : " (knobs now: " + changes + ")")));
    }
  }
  // Each covering family's default for the whole spec, then for each case it is tuned on alone: a family picks its
  // strategy by shape class (a decode step's one long row and a prefill's many want different kernels), and the
  // search's dispatch can keep a winner per class.
  const bool any_gated = std::any_of(spec.cases.begin(), spec.cases.end(), [](auto& c) { return c.gate; });
  for (auto* f : covering_families(spec, device)) {
    add(family_candidate(*f, spec, f->default_variant(spec), "default"));
    if (spec.cases.size() < 2) continue;
    for (const auto& c : spec.cases) {
      if ((any_gated && !c.gate) || !c.runs_on(device_kind_name(device))) continue;
      workload_spec one = spec;
      one.cases = {c};
      const knob_values k = f->default_variant(one);
      if (f->valid(k, spec, nullptr)) add(family_candidate(*f, spec, k, "default for " + c.name));
    }
  }
  return out;
}

}  // namespace kf
