// A kernel made of several of one search's candidates, each launched for the problem sizes where it was fastest:
// the knob set that wins a workload's large cases is rarely the one that wins its launch-bound small ones (a
// GroupNorm's streaming strategy against a block per group, a pointwise kernel's full grid against a few warps).
// After a search, plan_dispatch splits the gated cases, ordered by the bytes of their inputs, into at most a few
// runs, each given the candidate fastest over it; the composite's kf_launch picks its part from the bytes of the
// inputs it receives, with thresholds halfway (geometrically) between the cases either side, so that a shape no
// case has goes to the part of the nearest sizes. The composite is an ordinary candidate: verified on every case
// and timed with the full protocol before it can win (search_driver::try_dispatch). docs/design.md "Dispatch".
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/device.h"
#include "search/family.h"
#include "search/mcts.h"
#include "spec/spec.h"

namespace kf {

// The name a dispatch kernel's header and .json give as its family (it is in no family table).
inline constexpr const char* k_dispatch_family = "dispatch";
inline constexpr int k_dispatch_version = 1;

// The bytes of a case's inputs at their declared shapes: the key a dispatch kernel's parts are chosen by (its
// kf_launch sums the same over the tensors it receives).
int64_t input_bytes(const workload_spec& spec, const case_spec& c);

struct dispatch_options {
  int max_parts = 3;        // 1: no dispatch
  double min_gain = 0.02;   // the plan's geometric mean must beat the best single candidate's by this fraction
  double part_gain = 0.05;  // and each part must beat, over its own cases, what the part before it would give there
  // Plans are also tried during the search, once this many evaluations are done and again each time the count has
  // doubled (16, 32, 64, ...), not only at its end: a time-boxed search then has its composite early, and a later
  // plan is tried only when it is a new one. 0: only at the end.
  int first_check = 16;
};

struct dispatch_plan {
  std::vector<int64_t> parts;      // candidate ids (the caller's), smallest inputs first
  std::vector<int64_t> up_to;      // parts.size() - 1 thresholds: part i takes inputs of at most up_to[i] bytes
  std::map<std::string, size_t> case_part;  // each case's part
  double single_us = 0;            // the best single candidate's geometric mean over the cases
  double planned_us = 0;           // the plan's, from the same per-case times
  int64_t single = 0;              // that candidate
};

// The best plan of at most `o.max_parts` runs of cases (ordered by `case_bytes`, runs never splitting equal
// sizes) from candidates' per-case times (`times`: id -> case -> us; candidates lacking a case are not used);
// nullopt when one candidate is as good (within the gains) or fewer than two sizes are timed.
std::optional<dispatch_plan> plan_dispatch(const std::map<int64_t, std::map<std::string, double>>& times,
                                           const std::map<std::string, int64_t>& case_bytes,
                                           const dispatch_options& o = {});

struct dispatch_part {
  std::string family;
  int version = 0;
  knob_values knobs;
  std::optional<int64_t> up_to;  // none for the last part
};

// The knobs of a dispatch kernel's header and .json: parts=N, p<i>=<family>@<version>/<knob>:<value>/...,
// upto<i>=<bytes>; and back (nullopt, with why, for knobs that do not parse).
knob_values dispatch_knobs(const std::vector<dispatch_part>& parts);
std::optional<std::vector<dispatch_part>> parse_dispatch_knobs(const knob_values& knobs, std::string* why = nullptr);

// The composite translation unit from the parts' sources (each a whole candidate that exports kf_launch): each
// part's names are moved into a namespace and kf_launch of its own by the preprocessor, and its macros undefined
// after it; a kf_launch of the composite's own picks the part.
std::string compose_dispatch(const std::vector<std::string>& sources, const std::vector<int64_t>& up_to);

// The dispatch kernel of `parts` for `spec`, each part emitted by its family of `device` at the family's current
// version (nullopt, with why, when a family is missing, rejects its knobs, or is at another version than a part
// names): the source opens with the dispatch header.
std::optional<std::string> emit_dispatch(const workload_spec& spec, device_kind device,
                                         const std::vector<dispatch_part>& parts, std::string* why = nullptr);

// The candidate of a plan whose parts are family candidates (their family and knobs); origin names the parts.
std::optional<candidate> dispatch_candidate(const workload_spec& spec, device_kind device,
                                            const std::vector<const candidate*>& parts,
                                            const std::vector<int64_t>& up_to, const std::string& origin,
                                            std::string* why = nullptr);

}  // namespace kf
