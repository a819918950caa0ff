// The proposer table and the helpers proposers share.
#include "search/proposer.h"

#include <fmt/ranges.h>

#include "search/llm_proposer.h"
#include "search/template_proposer.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/suggest.h"

namespace kf {

const std::vector<proposer_entry>& proposers() {
  static const std::vector<proposer_entry> table = {
      {"template", "offline: moves one or two knobs of a kernel family (the default)",
       [](const proposer_options& o) { return std::make_unique<template_proposer>(o.seed); }},
      {"llm", "an OpenAI-compatible or Anthropic endpoint rewrites the kernel and repairs what fails (KFORGE_LLM_URL, "
              "KFORGE_LLM_MODEL; or --replay-llm FILE)",
       [](const proposer_options& o) -> std::unique_ptr<proposer> {
         llm::chat_options co;
         co.record = o.llm_record;
         co.record_append = o.llm_record_append;
         co.replay = o.llm_replay;
         if (o.llm_replay.empty()) {
           std::string why;
           co.live = llm::endpoint_from_env(&why);
           if (!co.live) throw user_error("--proposer llm: " + why + " (or answer from a record: --replay-llm FILE)");
         }
         auto p = std::make_unique<llm_proposer>(std::move(co), o.seed);
         if (!o.llm_replay_follow) p->follow_record(false);
         return p;
       }},
  };
  return table;
}

std::unique_ptr<proposer> make_proposer(const std::string& name, uint64_t seed) {
  proposer_options o;
  o.seed = seed;
  return make_proposer(name, o);
}

std::unique_ptr<proposer> make_proposer(const std::string& name, const proposer_options& options) {
  std::vector<std::string> names;
  for (auto& p : proposers()) {
    if (name == p.name) return p.make(options);
    names.emplace_back(p.name);
  }
  throw user_error(fmt::format("--proposer {}: unknown proposer{} (known: {})", name, did_you_mean(name, names),
                               fmt::join(names, ", ")));
}

candidate family_candidate(const family& f, const workload_spec& spec, const knob_values& v, std::string origin) {
  candidate c;
  c.family = f.name();
  c.knobs = v;
  c.source = f.emit(spec, v);
  c.source_hash = sha256_hex(c.source);
  c.origin = std::move(origin);
  return c;
}

}  // namespace kf
