// A kernel family: a template that emits one candidate translation unit (kf_abi.h) from knob values.
// The template proposer moves through a family's knob space; the emitted source must handle every
// shape the spec allows (it reads shapes and strides from kf_tensor at run time).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/device.h"
#include "spec/spec.h"

namespace kf {

struct knob {
  std::string name;
  std::vector<std::string> values;  // in a meaningful order (a move goes to a neighbouring value)
  std::string help;
};

using knob_values = std::map<std::string, std::string>;

class family {
 public:
  virtual ~family() = default;
  virtual std::string name() const = 0;
  virtual device_kind device() const = 0;
  // Whether this family implements the spec's graph; when not, `why_not` says what it lacks.
  virtual bool covers(const workload_spec& spec, std::string* why_not) const = 0;
  virtual std::vector<knob> knobs() const = 0;
  // A safe, reasonable starting point for this spec.
  virtual knob_values default_variant(const workload_spec& spec) const = 0;
  // Constraints between knobs (and with the spec); `why_not` explains a rejection.
  virtual bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const = 0;
  // The candidate source. Opens with a comment naming the family and knob values.
  virtual std::string emit(const workload_spec& spec, const knob_values& v) const = 0;
};

// The family table (lib/search/families.cpp): every family for every device.
const std::vector<std::unique_ptr<family>>& families();
const family* find_family(std::string_view name, device_kind device);
// Every family of a device that covers the spec and that the spec's `search.families` selects.
std::vector<const family*> covering_families(const workload_spec& spec, device_kind device);

// For families' `valid`: every knob is set, to one of its listed values, and no unknown knob is set.
bool knobs_in_range(const family& f, const knob_values& v, std::string* why_not);
// The integer value of a knob (asserts on a non-number; knobs_in_range runs first).
int knob_int(const knob_values& v, const std::string& name);
// For families' emitters: the index of an input in the spec's order (candidates receive inputs in that order);
// asserts when the spec has no such input (the graph matcher checked it).
int input_index(const workload_spec& spec, const std::string& name);

}  // namespace kf
