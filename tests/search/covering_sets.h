// Knob sets that cover a family's knob space, for the families' compile tests (cpu and cuda).
#pragma once
#include <algorithm>
#include <vector>

#include "search/family.h"

namespace kf::test {

// Knob sets where knob k takes values[i % n_k] in set i, so every value of every knob appears once. A set the
// family rejects is repaired by resetting one knob to the default (the last knobs first: the first ones, the
// strategies, are kept longest), else knobs from the last on until it is valid. A value lost to a repair comes
// back as the default with that value alone, when the family accepts it.
inline std::vector<knob_values> covering_sets(const family& f, const workload_spec& spec) {
  auto ks = f.knobs();
  size_t most = 0;
  for (auto& k : ks) most = std::max(most, k.values.size());
  const auto def = f.default_variant(spec);
  std::vector<knob_values> out;
  for (size_t i = 0; i < most; ++i) {
    knob_values v;
    for (auto& k : ks) v[k.name] = k.values[i % k.values.size()];
    for (auto k = ks.rbegin(); k != ks.rend() && !f.valid(v, spec, nullptr); ++k) {
      auto one = v;
      one[k->name] = def.at(k->name);
      if (f.valid(one, spec, nullptr)) v = one;
    }
    for (auto k = ks.rbegin(); k != ks.rend() && !f.valid(v, spec, nullptr); ++k) v[k->name] = def.at(k->name);
    if (f.valid(v, spec, nullptr)) out.push_back(v);
  }
  for (auto& k : ks)
    for (auto& val : k.values) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](auto& s) { return s.at(k.name) == val; });
      auto v = def;
      v[k.name] = val;
      if (!seen && f.valid(v, spec, nullptr)) out.push_back(v);
    }
  return out;
}

}  // namespace kf::test
