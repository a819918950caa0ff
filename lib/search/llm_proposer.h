// The LLM proposer (docs/design.md "Search": llm): an OpenAI-compatible or Anthropic endpoint rewrites the node's
// kernel, told the spec, the eager semantics, the kernel ABI, the node's time against the fastest baseline, the
// rewrites of it tried so far and those that failed (with why). A node gets several answers, each a child (the
// hint and the temperature vary from one request to the next). A candidate of its own that does not compile or
// fails verification goes back to the model in the same conversation with the compiler's or the verifier's
// message, up to three times (repair). Its children have no family or knobs, and the node it starts from needs
// none: it reads only the node's source. The prompt texts are prompts/*.md (llm/prompt_files.h); requests go
// through llm::chat_service, which records them or answers them from a record (--record-llm, --replay-llm).
#pragma once
#include <optional>
#include <vector>

#include "llm/chat_service.h"
#include "search/proposer.h"

namespace kf {

class llm_proposer final : public proposer {
 public:
  llm_proposer(llm::chat_options options, uint64_t seed);
  llm_proposer(llm::endpoint endpoint, uint64_t seed);  // live, nothing recorded
  std::string name() const override { return "llm"; }
  // One child per call. Throws infra_error when the endpoint fails (after the client's retries): a search
  // with a broken endpoint stops and says why instead of closing every node; a replay without the answer throws
  // user_error (llm/chat_service.h). An answer without usable code (no fenced block, no kf_launch, a source the
  // tree already holds) is asked again with another hint and a higher temperature, three requests in all, then
  // gives nothing (the driver then closes the node).
  std::vector<candidate> propose(const proposer_context& ctx) override;
  int max_repairs() const override { return 3; }
  // Replaying (--replay-llm): the node the recorded search expanded at this point (each request records the
  // node it was for and which expansion of the search it belonged to).
  std::optional<int64_t> next_node(const mcts_tree& tree) override;
  // Whether next_node follows the record (a search replayed from its start); a resumed one matches keys only.
  void follow_record(bool on) { m_follow = on; }
  // The failed node's conversation (candidate::conversation) goes on with prompts/repair.md and `why`; nullopt
  // for a node the model did not write, or when two answers bring no new code.
  std::optional<candidate> repair(const proposer_context& ctx, const failure_report& why, int number) override;
  const llm::chat_service& service() const { return m_chat; }

 private:
  // Asks `q`; the candidate from its answer, or nullopt with `why` (no code, or code the tree holds).
  std::optional<candidate> answer(const proposer_context& ctx, const llm::chat_request& q, std::string* why,
                                  std::string* text);

  llm::chat_service m_chat;
  std::string m_abi_header;  // kf_abi.h, read once
  uint64_t m_seed;
  int m_expansions = 0;                // propose() calls so far
  bool m_follow = true;
  std::vector<int64_t> m_replay_nodes;  // replay: the node of each recorded expansion, in order
};

}  // namespace kf
