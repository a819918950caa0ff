// The offline proposer: moves through a kernel family's knob space. A move changes one knob to a neighbouring
// value, trades a value between a pair of knobs the family names (family::trades: one up, the other down), changes
// one knob to any other value, or two knobs each to a neighbouring value; near moves and trades come first, in a
// seeded random order. Moves the family rejects (`family::valid`) or that the tree already holds are skipped.
#pragma once
#include <random>

#include "search/proposer.h"

namespace kf {

class template_proposer final : public proposer {
 public:
  explicit template_proposer(uint64_t seed) : m_rng(seed) {}
  std::string name() const override { return "template"; }
  std::vector<candidate> propose(const proposer_context& ctx) override;

 private:
  std::mt19937_64 m_rng;
};

}  // namespace kf
