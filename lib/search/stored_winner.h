// A stored winner held against the family table: whether it is exactly what its family emits today from its
// recorded knobs (tests/search/stored_winners_test.cpp checks every winner in workloads/), and re-emitting it at the
// family's current version after the family's code changed (`kforge reemit`). docs/design.md "Stores".
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "search/family.h"
#include "spec/spec.h"
#include "store/winners.h"

namespace kf {

// The device whose families emit for a GPU key: cpu for "cpu-...", cuda otherwise.
device_kind device_of_key(const std::string& gpu_key);

struct winner_check {
  bool current = false;  // its .json and header agree, at the family's version, and re-emitting gives its source
  std::string why;       // when not: what differs, and how to bring it up to date
};
// A winner whose .json names no family (a proposer's rewrite) is always current: nothing emitted it.
winner_check check_winner(const workload_spec& spec, const stored_kernel& k);

struct reemitted_winner {
  std::string family;
  int from_version = 0, to_version = 0;  // 0: the .json recorded no version (stored before families had versions)
  knob_values knobs;                     // every knob, at the value the code reads
  std::map<std::string, std::string> filled;  // knobs the .json lacked: "value (why)"
  std::string text;                      // the new source file: kernel header, the old provenance and a re-emitted line
  nlohmann::json metadata;               // the new .json: family_version, knobs, source_sha256 and a `reemitted` entry
};
// The winner re-emitted from its recorded family and knobs at the family's current version, keeping its provenance
// (who found it, lineage, what it measured) and saying it was re-emitted, on `date`, from which version. A knob the
// .json lacks takes the value whose code the family emitted before it had the knob (knob::before), or, where the
// variant does not read it, the family's default. Throws user_error where it cannot keep the winner's code path: a
// family the table lacks, a knob the family dropped, a missing knob the variant reads that says no `before`, knobs
// the family rejects.
reemitted_winner reemit_winner(const workload_spec& spec, const stored_kernel& k, const std::string& date);

}  // namespace kf
