#include "search/llm_proposer.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "exec/compile.h"
#include "llm/prompt.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

// Directions that vary one expansion from the next (one is picked per request; empty leaves the model free).
const char* const k_hints[] = {
    "",
    "Keep the algorithm; change how the work is split (threads per row, rows per block, blocks per row).",
    "Cut the instructions executed per element (cheaper math, fewer conversions, no repeated rounding).",
    "Keep more bytes in flight per SM: wider or more independent loads per thread.",
    "Read each input byte once: fuse passes, keep the row on chip between them.",
};

std::string device_text(device_kind d) {
  return d == device_kind::cuda
             ? "an NVIDIA GPU (a CUDA C++17 translation unit, compiled with nvcc -O3 for sm_90a)"
             : "the CPU (a C++17 translation unit, compiled with -O3 -march=native -fopenmp)";
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

}  // namespace

llm_proposer::llm_proposer(llm::endpoint endpoint, uint64_t seed)
    : m_endpoint(std::move(endpoint)),
      m_abi_header(read_file(std::filesystem::path(abi_include_dir()) / "kf_abi.h")),
      m_rng(seed) {}

std::vector<candidate> llm_proposer::propose(const proposer_context& ctx) {
  const node& parent = ctx.tree.at(ctx.node_id);
  llm::rewrite_request r;
  r.device = device_text(ctx.device);
  r.spec_yaml = spec_text(ctx.spec);
  r.reference = reference_text(ctx.spec);
  r.abi_header = m_abi_header;
  r.parent_source = parent.cand.source;
  r.parent_timing = timing_text(parent);
  for (int64_t c : parent.children) {
    const node& child = ctx.tree.at(c);
    if (!is_failure(child.status) || r.failed_siblings.size() >= 4) continue;
    r.failed_siblings.push_back({fmt::format("{}: {}", node_status_name(child.status), child.detail),
                                 child.cand.source.substr(0, 1500)});
  }
  r.hint = k_hints[m_rng() % std::size(k_hints)];
  const auto messages = llm::build_messages(r);
  std::string why;
  for (int attempt = 0; attempt < 2; ++attempt) {
    llm::reply answer = llm::chat(m_endpoint, messages);
    if (!answer.ok)
      throw infra_error(fmt::format("the LLM endpoint ({}) failed: {}", m_endpoint.describe(), answer.error));
    auto source = llm::extract_source(answer.text, &why);
    if (!source) continue;
    candidate c;
    c.source = *source;
    c.source_hash = sha256_hex(c.source);
    c.origin = "llm:" + m_endpoint.model;
    c.prompt = messages.back().content;
    if (ctx.tree.contains(candidate_key(c))) {
      why = "the answer repeats a kernel the tree already holds";
      continue;
    }
    return {c};
  }
  return {};
}

}  // namespace kf
