#include "search/llm_proposer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/compile.h"
#include "llm/prompt.h"
#include "llm/prompt_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

// Directions that vary one answer from the next for the same node (taken in turn; empty leaves the model free).
const char* const k_hints[] = {
    "",
    "Keep the algorithm; change how the work is split (threads per row, rows per block, blocks per row).",
    "Cut the instructions executed per element (cheaper math, fewer conversions, no repeated rounding).",
    "Keep more bytes in flight: wider or more independent loads per thread.",
    "Read each input byte once: fuse passes, keep the row on chip (or in cache) between them.",
};
constexpr double k_temperature = 0.7, k_temperature_step = 0.15;
constexpr int k_tries = 3, k_repair_tries = 2;

std::string device_text(device_kind d) {
  return d == device_kind::cuda
             ? "an NVIDIA GPU (a CUDA C++17 translation unit, compiled with nvcc -O3 for sm_90a)"
             : "the CPU (a C++ translation unit, compiled with -O3 -march=native -fopenmp)";
}

std::string spec_text(const workload_spec& spec) {
  std::error_code ec;
  if (!spec.path.empty() && std::filesystem::exists(spec.path, ec)) return read_file(spec.path);
  return to_json(spec).dump(2);
}

std::string reference_text(const workload_spec& spec) {
  std::string s;
  for (auto& call : spec.graph) s += fmt::format("- {}: {}\n", call.op, call.args.dump());
  return s;
}

std::string timing_text(const node& n) {
  if (!n.time_us) return "not timed yet";
  std::string s = fmt::format("{:.2f} us (geometric mean over the gated cases)", *n.time_us);
  if (n.reward) s += fmt::format("; {:.2f}x the fastest baseline", std::exp(*n.reward));
  return s;
}

// The last attempt of the chain that starts at `id`: a failed node's repairs are its children.
const node& last_attempt(const mcts_tree& tree, int64_t id) {
  const node* n = &tree.at(id);
  while (is_failure(n->status) && !n->children.empty()) n = &tree.at(n->children.back());
  return *n;
}

nlohmann::json messages_json(const std::vector<llm::message>& messages) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

}  // namespace

llm_proposer::llm_proposer(llm::chat_options options, uint64_t seed)
    : m_chat(std::move(options)),
      m_abi_header(read_file(std::filesystem::path(abi_include_dir()) / "kf_abi.h")),
      m_seed(seed) {
  int last = 0;
  for (const auto& line : m_chat.recorded()) {
    const auto about = line.value("about", nlohmann::json::object());
    if (about.value("kind", "") != "rewrite" || !about.contains("node")) continue;
    const int expansion = about.value("expansion", 0);
    if (expansion != last) m_replay_nodes.push_back(about["node"].get<int64_t>());
    last = expansion;
  }
}

std::optional<int64_t> llm_proposer::next_node(const mcts_tree& tree) {
  if (!m_follow || m_expansions >= static_cast<int>(m_replay_nodes.size())) return std::nullopt;
  const int64_t id = m_replay_nodes[static_cast<size_t>(m_expansions)];
  if (id < 1 || id > static_cast<int64_t>(tree.size())) return std::nullopt;  // the replay went another way
  const node& n = tree.at(id);
  if (n.status == node_status::pending || is_failure(n.status)) return std::nullopt;
  return id;
}

llm_proposer::llm_proposer(llm::endpoint endpoint, uint64_t seed)
    : llm_proposer(llm::chat_options{std::move(endpoint), {}, false, {}}, seed) {}

std::optional<candidate> llm_proposer::answer(const proposer_context& ctx, const llm::chat_request& q, std::string* why,
                                              std::string* text) {
  llm::reply r = m_chat.ask(q);
  if (!r.ok) throw infra_error(fmt::format("the LLM endpoint ({}) failed: {}", m_chat.describe(), r.error));
  *text = r.text;
  auto source = llm::extract_source(r.text, why);
  if (!source) return std::nullopt;
  candidate c;
  c.source = *source;
  c.source_hash = sha256_hex(c.source);
  // The same source as any node's (a family's kernel handed back unchanged has another key than its source's).
  const auto& nodes = ctx.tree.nodes();
  if (std::any_of(nodes.begin() + 1, nodes.end(), [&](const node& n) { return n.cand.source_hash == c.source_hash; })) {
    *why = "the answer repeats a kernel the tree already holds";
    return std::nullopt;
  }
  return c;
}

std::vector<candidate> llm_proposer::propose(const proposer_context& ctx) {
  const node& parent = ctx.tree.at(ctx.node_id);
  llm::rewrite_request r;
  r.device = device_text(ctx.device);
  r.cuda = ctx.device == device_kind::cuda;
  r.spec_yaml = spec_text(ctx.spec);
  r.reference = reference_text(ctx.spec);
  r.abi_header = m_abi_header;
  r.parent_source = parent.cand.source;
  r.parent_timing = timing_text(parent);
  for (int64_t c : parent.children) {  // each rewrite of this node by how its last attempt did
    const node& last = last_attempt(ctx.tree, c);
    if (is_failure(last.status)) {
      if (r.failed_siblings.size() < 4)
        r.failed_siblings.push_back({fmt::format("{}: {}", node_status_name(last.status), last.detail),
                                     last.cand.source.substr(0, 1500)});
    } else {
      r.tried.push_back({last.cand.origin, last.status == node_status::pending ? "not evaluated yet" : timing_text(last)});
    }
  }
  const size_t asked = parent.children.size();
  ++m_expansions;
  std::string why;
  for (int t = 0; t < k_tries; ++t) {
    r.hint = k_hints[(m_seed + asked + static_cast<size_t>(t)) % std::size(k_hints)];
    const auto built = llm::build_messages(r);
    llm::chat_request q;
    q.messages = built.messages;
    q.temperature = k_temperature + k_temperature_step * t;
    q.key = llm::request_key("", built.masked, q.temperature);
    q.prompt_version = built.prompt_version;
    q.about = {{"kind", "rewrite"}, {"node", ctx.node_id}, {"expansion", m_expansions}, {"try", t + 1}};
    std::string text;
    auto c = answer(ctx, q, &why, &text);
    if (!c) continue;
    c->origin = "llm:" + m_chat.model();
    c->prompt = q.messages.back().content;
    c->prompt_version = built.prompt_version;
    auto messages = messages_json(q.messages);
    messages.push_back({{"role", "assistant"}, {"content", text}});
    c->conversation = nlohmann::json({{"messages", messages}, {"key", q.key}, {"temperature", q.temperature},
                                      {"hint", r.hint}, {"repair", 0}})
                          .dump();
    return {*c};
  }
  return {};
}

std::optional<candidate> llm_proposer::repair(const proposer_context& ctx, const failure_report& why, int number) {
  const node& failed = ctx.tree.at(ctx.node_id);
  if (failed.cand.conversation.empty()) return std::nullopt;  // not the model's: nothing to go on with
  auto conv = nlohmann::json::parse(failed.cand.conversation, nullptr, false);
  if (conv.is_discarded() || !conv.contains("messages") || !conv["messages"].is_array() || conv["messages"].empty())
    return std::nullopt;
  std::vector<llm::message> messages;
  for (auto& m : conv["messages"]) messages.push_back({m.value("role", ""), m.value("content", "")});
  const llm::message request = llm::build_repair({why.what, why.message, number, max_repairs()});
  const std::vector<llm::message> added = {messages.back(), request};  // its answer and the repair request
  messages.push_back(request);
  std::string prompt_version = failed.cand.prompt_version;
  if (prompt_version.find("repair:") == std::string::npos)
    prompt_version += (prompt_version.empty() ? "" : " ") + llm::prompt_versions({"repair"});
  const double base = conv.value("temperature", k_temperature);
  std::string reason;
  for (int t = 0; t < k_repair_tries; ++t) {
    llm::chat_request q;
    q.messages = messages;
    q.temperature = base + k_temperature_step * t;
    q.key = llm::request_key(conv.value("key", ""), added, q.temperature);
    q.prompt_version = prompt_version;
    q.about = {{"kind", "repair"}, {"node", ctx.node_id}, {"repair", number}, {"try", t + 1}};
    std::string text;
    auto c = answer(ctx, q, &reason, &text);
    if (!c) continue;
    c->origin = fmt::format("llm-repair:{}:{}", number, m_chat.model());
    c->prompt = request.content;
    c->prompt_version = prompt_version;
    auto all = messages_json(q.messages);
    all.push_back({{"role", "assistant"}, {"content", text}});
    c->conversation = nlohmann::json({{"messages", all}, {"key", q.key}, {"temperature", q.temperature},
                                      {"hint", conv.value("hint", "")}, {"repair", number}})
                          .dump();
    return c;
  }
  return std::nullopt;
}

}  // namespace kf
