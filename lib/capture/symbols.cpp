// Shape symbols for the sizes a pattern was seen at: see symbols.h.
#include "capture/symbols.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "util/error.h"

namespace kf::capture {
namespace {

// A symbol's name by its place in a tensor of `rank` dims.
std::string place_name(size_t rank, size_t d) {
  static const std::vector<std::vector<const char*>> names = {
      {}, {"D"}, {"T", "D"}, {"B", "T", "D"}, {"N", "C", "H", "W"}, {"N", "C", "D", "H", "W"}};
  if (rank < names.size()) return names[rank][d];
  return fmt::format("S{}", d);
}

}  // namespace

symbolized_shapes infer_symbols(const std::vector<case_shapes>& cases) {
  KF_ASSERT(!cases.empty(), "infer_symbols needs a case");
  const case_shapes& first = cases.front();
  for (const auto& c : cases) {
    KF_ASSERT(c.size() == first.size(), "cases of one pattern have {} and {} inputs", c.size(), first.size());
    for (size_t i = 0; i < c.size(); ++i)
      KF_ASSERT(c[i].size() == first[i].size(), "input {} has rank {} in one case and {} in another", i, c[i].size(), first[i].size());
  }
  symbolized_shapes out;
  // A symbol is a (sizes in every case, which repeat of those sizes within one tensor) pair.
  std::map<std::pair<std::vector<int64_t>, int>, std::string> symbols;
  std::vector<std::vector<int64_t>> symbol_sizes;
  std::vector<std::string> order;
  std::set<std::string> used;
  for (size_t i = 0; i < first.size(); ++i) {
    std::vector<dim> shape;
    std::map<std::vector<int64_t>, int> repeats;
    for (size_t d = 0; d < first[i].size(); ++d) {
      std::vector<int64_t> sizes;
      for (const auto& c : cases) sizes.push_back(c[i][d]);
      if (std::set<int64_t>(sizes.begin(), sizes.end()).size() == 1) {
        shape.push_back({"", sizes[0]});
        continue;
      }
      auto key = std::make_pair(sizes, repeats[sizes]++);
      auto it = symbols.find(key);
      if (it == symbols.end()) {
        std::string base = place_name(first[i].size(), d), name = base;
        for (int n = 2; used.count(name); ++n) name = fmt::format("{}{}", base, n);
        used.insert(name);
        order.push_back(name);
        symbol_sizes.push_back(sizes);
        it = symbols.emplace(key, name).first;
      }
      shape.push_back({it->second, 0});
    }
    out.inputs.push_back(std::move(shape));
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<std::pair<std::string, int64_t>> bindings;
    for (size_t s = 0; s < order.size(); ++s) bindings.emplace_back(order[s], symbol_sizes[s][c]);
    out.cases.push_back(std::move(bindings));
  }
  return out;
}

}  // namespace kf::capture
