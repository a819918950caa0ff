// A kernel family: a template that emits one candidate translation unit (kf_abi.h) from knob values.
// The template proposer moves through a family's knob space; the emitted source must handle every
// shape the spec allows (it reads shapes and strides from kf_tensor at run time). The fixed code of a family lives
// in files beside it (lib/search/families/*.cuh, *.h), embedded at build time (families/embedded.h).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/device.h"
#include "spec/spec.h"

namespace kf {

struct knob {
  std::string name;
  std::vector<std::string> values;  // in a meaningful order (a move goes to a neighbouring value)
  std::string help;
  // The value whose code is what the family emitted before it had this knob; `kforge reemit` gives it to a stored
  // winner recorded without the knob. Empty when no value is (the knob came with code that did not exist before).
  std::string before = "";
};

using knob_values = std::map<std::string, std::string>;

class family {
 public:
  virtual ~family() = default;
  virtual std::string name() const = 0;
  virtual device_kind device() const = 0;
  // Bumped whenever emit's output changes for some knob values (CONTRIBUTING.md "Adding a kernel family"): a stored
  // winner records the version that emitted it, and tests/search/stored_winners_test.cpp re-emits it at this one.
  virtual int version() const = 0;
  // A fallback family (the generic code generator) covers what no other family does: covering_families offers it
  // only when no other family of the device covers the spec, or when the spec's search.families names it.
  virtual bool fallback() const { return false; }
  // Further names in a spec's search.families that select this family besides its own and its base name (one family
  // of a kind split by layout: `group_norm` selects group_norm_nhwc_cuda too).
  virtual std::vector<std::string> selected_by() const { return {}; }
  // Whether this family implements the spec's graph; when not, `why_not` says what it lacks.
  virtual bool covers(const workload_spec& spec, std::string* why_not) const = 0;
  virtual std::vector<knob> knobs() const = 0;
  // A safe, reasonable starting point for this spec.
  virtual knob_values default_variant(const workload_spec& spec) const = 0;
  // Constraints between knobs (and with the spec); `why_not` explains a rejection.
  virtual bool valid(const knob_values& v, const workload_spec& spec, std::string* why_not) const = 0;
  // The knob values the emitted code reads: `v` with each knob this variant does not read (another strategy's,
  // another layout's) set to the one value emit uses for it, so that variants differing only there emit one source
  // (the template proposer does not propose it twice). emit(spec, v) == emit(spec, canonical_knobs(spec, v)).
  virtual knob_values canonical_knobs(const workload_spec& spec, const knob_values& v) const { (void)spec; return v; }
  // Pairs of knobs whose product a variant keeps while it changes how that product is split (threads a row =
  // cluster x threads; values a thread = chunks x vec): the template proposer tries each pair with one knob a value
  // up and the other a value down, a move that two single moves reach only through a variant that halves or doubles
  // the product between them (Llama-3's vocabulary, H100: a cluster of 4 x 512 threads 159.7 us, 8 x 256 174.2).
  virtual std::vector<std::pair<std::string, std::string>> trades() const { return {}; }
  // The candidate source. Opens with the kernel header (store/kernel_header.h): family, version, every knob at its
  // canonical value, what it computes.
  virtual std::string emit(const workload_spec& spec, const knob_values& v) const = 0;
};

// The family table (lib/search/families.cpp): every family for every device.
const std::vector<std::unique_ptr<family>>& families();
const family* find_family(std::string_view name, device_kind device);
// Every family of a device that covers the spec and that the spec's `search.families` selects; the fallback
// families (generic) only when none of the others does, or when search.families names them.
std::vector<const family*> covering_families(const workload_spec& spec, device_kind device);
// Whether the spec's search.families selects `f`: by its full or base name (family_selected), or a name of its
// selected_by().
bool selects(const workload_spec& spec, const family& f);

// Whether the code emitted for `v` reads `name`: false when canonical_knobs fixes it (every value of the knob gives
// one source).
bool knob_read(const family& f, const workload_spec& spec, const knob_values& v, const std::string& name);
// The header a family's kernel opens with, for the knob values it was emitted from (canonical_knobs applied).
std::string family_kernel_header(const family& f, const workload_spec& spec, const knob_values& v,
                                 const std::string& computes);

// For families' `valid`: every knob is set, to one of its listed values, and no unknown knob is set.
bool knobs_in_range(const family& f, const knob_values& v, std::string* why_not);
// The integer value of a knob (asserts on a non-number; knobs_in_range runs first).
int knob_int(const knob_values& v, const std::string& name);
// For families' emitters: the index of an input in the spec's order (candidates receive inputs in that order);
// asserts when the spec has no such input (the graph matcher checked it).
int input_index(const workload_spec& spec, const std::string& name);

}  // namespace kf
