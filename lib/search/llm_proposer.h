// The LLM proposer (docs/design.md "Search": llm): an OpenAI-compatible or Anthropic endpoint rewrites the node's
// kernel, told the spec, the eager semantics, the kernel ABI, the node's time against the fastest baseline and
// the siblings that failed (with why). Its children have no family or knobs; expanding them asks again.
#pragma once
#include <random>

#include "llm/client.h"
#include "search/proposer.h"

namespace kf {

class llm_proposer final : public proposer {
 public:
  llm_proposer(llm::endpoint endpoint, uint64_t seed);
  std::string name() const override { return "llm"; }
  // One child per call. Throws infra_error when the endpoint fails (after the client's retries): a search
  // with a broken endpoint stops and says why instead of closing every node. An answer without usable code
  // (no fenced block, no kf_launch, a source the tree already holds) is asked once more, then gives nothing.
  std::vector<candidate> propose(const proposer_context& ctx) override;

 private:
  llm::endpoint m_endpoint;
  std::string m_abi_header;  // kf_abi.h, read once
  std::mt19937_64 m_rng;
};

}  // namespace kf
