#include "store/winners.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/text_escape.h"
#include "store/kernel_header.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace fs = std::filesystem;

fs::path kernels_dir(const fs::path& spec_path, std::string_view workload_name) {
  return spec_path.parent_path() / std::string(workload_name) / "kernels";
}

std::string arch_prefix(std::string_view gpu_key) {
  auto dash = gpu_key.find('-');
  return std::string(dash == std::string_view::npos ? gpu_key : gpu_key.substr(0, dash));
}

std::string kernel_extension(std::string_view gpu_key) { return arch_prefix(gpu_key) == "cpu" ? ".cpp" : ".cu"; }

namespace {

stored_kernel load(const fs::path& source, std::string_view key) {
  stored_kernel k;
  k.source = source;
  k.gpu_key = std::string(key);
  k.metadata = fs::path(source).replace_extension(".json");
  if (fs::exists(k.metadata)) {
    auto j = nlohmann::json::parse(read_file(k.metadata), nullptr, false);
    if (j.is_discarded() || !j.is_object()) k.note = fmt::format("metadata {} is not a JSON object; ignored", k.metadata.string());
    else k.meta = std::move(j);
  }
  return k;
}

}  // namespace

winner_lookup find_winner(const fs::path& dir, std::string_view gpu_key) {
  winner_lookup out;
  std::string ext = kernel_extension(gpu_key);
  fs::path exact = dir / (std::string(gpu_key) + ext);
  if (fs::is_regular_file(exact)) {
    out.kernel = load(exact, gpu_key);
    return out;
  }
  // Same architecture, another product: the code runs, the tuning may not fit. Sorted for a stable choice.
  std::string arch = arch_prefix(gpu_key);
  std::vector<std::string> same_arch, others;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ext) continue;
      std::string key = e.path().stem().string();
      (arch_prefix(key) == arch ? same_arch : others).push_back(key);
    }
  std::sort(same_arch.begin(), same_arch.end());
  std::sort(others.begin(), others.end());
  if (!same_arch.empty()) {
    stored_kernel k = load(dir / (same_arch.front() + ext), same_arch.front());
    k.fallback = true;
    std::string meta_note = k.note;
    k.note = fmt::format("fallback: no kernel for {}, using the one stored for {} (same architecture {})", gpu_key,
                         same_arch.front(), arch);
    if (!meta_note.empty()) k.note += "; " + meta_note;
    out.kernel = std::move(k);
    return out;
  }
  out.why = fmt::format("no kernel for {} in {}{}", gpu_key, dir.string(),
                        others.empty() ? "" : fmt::format(" (it has: {})", fmt::join(others, ", ")));
  return out;
}

stored_kernel write_winner(const fs::path& dir, std::string_view gpu_key, const winner_write& w) {
  KF_ASSERT(!gpu_key.empty(), "a winner needs a GPU key");
  fs::path source = dir / (std::string(gpu_key) + kernel_extension(gpu_key));
  std::vector<std::string> lines{fmt::format("{}{} on {}", k_winner_line.substr(3), w.workload, gpu_key)};
  lines.insert(lines.end(), w.provenance.begin(), w.provenance.end());
  // A winner whose metadata says it has no family (a proposer's rewrite) keeps no family header: a header its parent had would claim
  // the parent's family and knobs, which the .json does not.
  std::string source_text = w.source;
  if (w.metadata.contains("family") && w.metadata.value("family", std::string()).empty())
    if (auto h = parse_kernel_header(source_text)) {
      source_text = without_kernel_header(source_text);
      lines.push_back(fmt::format("rewritten from: a {} version {} kernel (its header removed: this one has no family)",
                                  h->family, h->version));
    }
  std::string text = with_provenance(source_text, lines);
  if (!text.empty() && text.back() != '\n') text += '\n';
  write_file_atomic(source, text);
  nlohmann::json meta = w.metadata;
  meta["workload"] = w.workload;
  meta["gpu_key"] = std::string(gpu_key);
  meta["source"] = source.filename().string();
  write_file_atomic(fs::path(source).replace_extension(".json"), safe_dump(meta, 2) + "\n");
  return load(source, gpu_key);
}

}  // namespace kf
