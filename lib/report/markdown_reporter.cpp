// Markdown for a PR comment and $GITHUB_STEP_SUMMARY: a headline, one table (a row per workload and gated
// case, failures first), then the sentences behind every failed or skipped check. Stays under `max_bytes`
// (GitHub rejects comments over 65536 characters) by dropping rows and saying how many.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/reporter.h"
#include "report/run_summary.h"
#include "report/text_escape.h"
#include "spec/baseline_registry.h"

namespace kf {
namespace {

constexpr std::string_view k_marker = "<!-- kforge-report -->";

// The table's time columns: the kernel, then each registered baseline.
std::vector<std::string> time_columns() {
  std::vector<std::string> out = {"kernel"};
  for (const auto& b : registered_baselines()) out.push_back(b.name);
  return out;
}

std::string_view icon(check_outcome o) {
  switch (o) {
    case check_outcome::passed: return "✅";
    case check_outcome::failed: return "❌";
    case check_outcome::skipped: return "⚠️";
    case check_outcome::error: return "💥";
    case check_outcome::inconclusive: return "❔";
  }
  return "?";
}

int rank(check_outcome o) {  // failures first in the table
  switch (o) {
    case check_outcome::failed: return 0;
    case check_outcome::error: return 1;
    case check_outcome::inconclusive: return 2;
    case check_outcome::skipped: return 3;
    case check_outcome::passed: return 4;
  }
  return 5;
}

std::string time_cell(const case_result& c, const impl_result* i) {
  if (!i) return "—";
  if (i->status == impl_status::skipped) return "skipped";
  if (i->status == impl_status::failed) return "failed";
  const auto& s = i->series(c.metric).stats;
  if (s.count == 0) return "—";
  return fmt::format("{} µs ±{:.1f}%", format_us(s.median_us), s.noise * 100);
}

// Every check of that outcome, not only the first (#19): a case that lost to two baselines says both. any_case:
// the workload has no timed case (its verification failed, no kernel, ...): its checks whichever case they are about.
std::string verdict_cell(const workload_result& w, const std::string& case_name, check_outcome o, bool any_case = false) {
  std::vector<std::string> what;
  if (o != check_outcome::passed)
    for (auto& k : w.checks)
      if (!k.advisory && !is_missing_history(k) && k.outcome == o &&
          (any_case || k.case_name.empty() || k.case_name == case_name))
        what.push_back(md_cell(k.test_name()));
  if (what.empty() && !w.error.empty()) what.push_back("error");
  return what.empty() ? std::string(icon(o)) : fmt::format("{} {}", icon(o), fmt::join(what, ", "));
}

struct row {
  int order;
  size_t index;
  std::string text;
};

std::vector<row> table_rows(const run_result& r) {
  std::vector<row> rows;
  for (size_t wi = 0; wi < r.workloads.size(); ++wi) {
    const auto& w = r.workloads[wi];
    int order = rank(headline_outcome(w));
    // Several devices (--devices): each workload's row says which one ran it.
    std::string name = md_cell(w.name);
    if (r.env.devices.size() > 1 && !w.device.empty()) name += fmt::format(" <sub>{}</sub>", md_cell(w.device));
    std::string kernel_cell = w.kernel_path.empty() ? md_cell(w.kernel_note.empty() ? "no kernel" : w.kernel_note) : "";
    if (w.cases.empty()) {
      check_outcome o = headline_outcome(w);  // every check counts: a verify failure is about a case that was never timed
      std::string dashes;  // the baselines' columns, speedup and of floor
      for (size_t k = 0; k < registered_baselines().size() + 2; ++k) dashes += "— | ";
      rows.push_back({order, rows.size(),
                      fmt::format("| {} | — | {} | {}{} |\n", name, kernel_cell.empty() ? "—" : kernel_cell,
                                  dashes, verdict_cell(w, "", o, true))});
      continue;
    }
    for (auto& c : w.cases) {
      check_outcome o = headline_outcome(w, c.name);
      std::string cells;
      for (const auto& impl : time_columns()) {
        const impl_result* i = c.find(impl);
        bool no_kernel = impl == "kernel" && !i && !kernel_cell.empty();
        cells += (no_kernel ? kernel_cell : time_cell(c, i)) + " | ";
      }
      std::string speedups;
      for (auto& [b, s] : c.speedups) speedups += fmt::format("{}×{:.2f} {}", speedups.empty() ? "" : ", ", s, b);
      std::string floor = c.floor.fraction > 0 ? fmt::format("{:.0f}%", c.floor.fraction * 100) : "—";
      rows.push_back({order, rows.size(),
                      fmt::format("| {} | {} | {}{} | {} | {} |\n", name, md_cell(c.name), cells,
                                  speedups.empty() ? "—" : speedups, floor, verdict_cell(w, c.name, o))});
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.order < b.order; });
  return rows;
}

std::string_view status_icon(const run_summary& s) {
  if (s.status == "passed") return icon(check_outcome::passed);
  if (s.status == "failed") return icon(check_outcome::failed);
  if (s.status == "error") return icon(check_outcome::error);
  if (s.status == "inconclusive") return icon(check_outcome::inconclusive);
  return icon(check_outcome::skipped);  // nothing verified, skipped checks
}

// "**6 passed**, **0 failed**, 1 inconclusive, 2 not verified (no kernel for `cpu-x86-64`)": zero counts beyond
// passed and failed are left out.
std::string counts_line(const run_summary& s, const run_result& r) {
  std::string out = fmt::format("**{} passed**, **{} failed**", s.passed, s.failed);
  if (s.errors) out += fmt::format(", {} error{}", s.errors, s.errors == 1 ? "" : "s");
  if (s.inconclusive) out += fmt::format(", {} inconclusive", s.inconclusive);
  if (s.skipped) out += fmt::format(", {} with skipped checks", s.skipped);
  if (s.no_kernel) out += fmt::format(", {} not verified (no kernel for `{}`)", s.no_kernel, md_cell(r.env.gpu_key));
  return out;
}

std::string headline(const run_result& r) {
  run_summary s = summarize_run(r);
  std::string gpu = r.env.gpu_name.empty() ? r.env.gpu_key : fmt::format("{} (`{}`)", md_cell(r.env.gpu_name), md_cell(r.env.gpu_key));
  std::string out = fmt::format("{}\n### {} kforge: {} — {} workload{} on {}\n\n", k_marker, status_icon(s), s.status,
                                r.workloads.size(), r.workloads.size() == 1 ? "" : "s", gpu.empty() ? "an unknown device" : gpu);
  out += counts_line(s, r);
  if (!r.base_ref.empty()) out += fmt::format(" · compared with `{}` ({})", md_cell(r.base_ref), md_cell(r.base_commit.substr(0, 12)));
  out += "\n\n";
  if (!r.complete) out += fmt::format("> **Incomplete run**: {}. The results below are what finished.\n\n", md_cell(r.incomplete_reason));
  if (s.verified == 0 && !r.workloads.empty())
    out += fmt::format("> **Nothing was verified**: no workload has a kernel for `{}` (`kforge retune` searches for "
                       "one; `gate.require_kernel: true` makes this a failure).\n\n", md_cell(r.env.gpu_key));
  if (s.history_missing > 0)
    out += fmt::format("> No history to compare with: {} ({} regression check{} skipped).\n\n", md_cell(s.history_why),
                       s.history_missing, s.history_missing == 1 ? "" : "s");
  for (const auto& d : r.env.devices)  // kforge run --devices: a device taken out, its work done by the others
    if (!d.lost.empty())
      out += fmt::format("> **Device lost**: `{}` was taken out of the run: {}\n\n", md_cell(d.name), md_cell(d.lost));
  std::vector<std::string> env;
  if (r.env.devices.size() > 1) {
    std::vector<std::string> names;
    for (const auto& d : r.env.devices)
      names.push_back(fmt::format("{} ({} workload{}{})", d.name, d.workloads, d.workloads == 1 ? "" : "s",
                                  d.lost.empty() ? "" : ", lost"));
    env.push_back(fmt::format("devices {}", fmt::join(names, ", ")));
  }
  if (!r.env.driver.empty()) env.push_back("driver " + r.env.driver);
  if (!r.env.cuda_runtime.empty()) env.push_back("CUDA " + r.env.cuda_runtime);
  if (!r.env.cudnn.empty()) env.push_back("cuDNN " + r.env.cudnn);
  if (!r.env.torch.empty()) env.push_back("torch " + r.env.torch);
  if (!r.env.git_commit.empty()) env.push_back("commit " + r.env.git_commit.substr(0, 12));
  if (r.env.sandbox.contains("mode")) {  // docs/sandbox.md: which protections the kernels ran under
    std::vector<std::string> on, off;
    for (auto& p : r.env.sandbox.value("protections", nlohmann::json::array()))
      (p.value("active", false) ? on : off).push_back(p.value("name", "?"));
    std::string line = "sandbox " + r.env.sandbox.value("mode", "?");
    if (!on.empty()) line += fmt::format(": {}", fmt::join(on, ", "));
    if (!off.empty()) line += fmt::format(" (not active: {})", fmt::join(off, ", "));
    env.push_back(line);
  }
  if (!env.empty()) out += fmt::format("<sub>{}</sub>\n\n", md_cell(fmt::format("{}", fmt::join(env, " · "))));
  return out;
}

std::vector<std::string> notes(const run_result& r) {
  std::vector<std::pair<int, std::string>> items;
  for (auto& w : r.workloads) {
    if (!w.error.empty()) items.push_back({1, fmt::format("- 💥 **{}**: {}\n", md_cell(w.name), md_cell(w.error))});
    for (auto& k : w.checks)
      if (k.outcome != check_outcome::passed && !k.advisory && !is_missing_history(k))  // said once, in the headline
        items.push_back({rank(k.outcome), fmt::format("- {} **{}** `{}`: {}\n", icon(k.outcome), md_cell(w.name),
                                                      md_cell(k.test_name()), md_cell(k.sentence))});
  }
  std::stable_sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [_, s] : items) out.push_back(s);
  return out;
}

// Baselines that were not measured, once per reason: "vendor skipped on 12 cases: cuDNN has no ...".
std::string unmeasured(const run_result& r) {
  std::vector<std::pair<std::string, int>> seen;
  for (auto& w : r.workloads)
    for (auto& c : w.cases)
      for (auto& i : c.impls) {
        if (i.status == impl_status::ok || i.impl == "kernel") continue;
        std::string key = fmt::format("{} {}: {}", i.impl, impl_status_name(i.status), i.why.empty() ? "no reason given" : i.why);
        auto it = std::find_if(seen.begin(), seen.end(), [&](auto& p) { return p.first == key; });
        if (it == seen.end()) seen.push_back({key, 1});
        else ++it->second;
      }
  std::string out;
  for (size_t k = 0; k < seen.size() && k < 20; ++k)
    out += fmt::format("- {} ({} case{})\n", md_cell(seen[k].first), seen[k].second, seen[k].second == 1 ? "" : "s");
  if (seen.size() > 20) out += fmt::format("- _… and {} more_\n", seen.size() - 20);
  return out.empty() ? out : "\n<details><summary>Baselines not measured</summary>\n\n" + out + "\n</details>\n";
}

// What a baseline says of its results' details, a line per case where it has something to say (compile: each
// mode's median where a case timed more than one), under the baseline's heading.
std::string baseline_details(const run_result& r, const baseline& b) {
  std::string out;
  int listed = 0, more = 0;
  for (auto& w : r.workloads)
    for (auto& c : w.cases)
      for (auto& i : c.impls) {
        if (i.impl != b.name || !i.details.is_object()) continue;
        std::string line = b.details(i.details);
        if (line.empty()) continue;
        if (listed == 20) {
          ++more;
          continue;
        }
        out += fmt::format("- {} {}: {}\n", md_cell(w.name), md_cell(c.name), md_cell(line));
        ++listed;
      }
  if (more > 0) out += fmt::format("- _… and {} more_\n", more);
  return out.empty() ? out : fmt::format("\n<details><summary>{}</summary>\n\n{}\n</details>\n", b.details_title, out);
}

std::string baselines_details(const run_result& r) {
  std::string out;
  for (const auto& b : registered_baselines())
    if (b.details) out += baseline_details(r, b);
  return out;
}

}  // namespace

std::string render_markdown(const run_result& r, size_t max_bytes) {
  std::string out = headline(r);
  std::string header = "| workload | case | kernel | ", rule = "|---|---|--:|";
  for (const auto& b : registered_baselines()) {
    header += md_cell(b.column_or_name()) + " | ";
    rule += "--:|";
  }
  header += "speedup | of floor | verdict |\n";
  header += rule + "---|--:|---|\n";
  auto rows = table_rows(r);
  auto items = notes(r);
  std::string skipped_text = unmeasured(r);
  if (skipped_text.size() > max_bytes / 8) skipped_text.clear();
  std::string modes_text = baselines_details(r);
  if (modes_text.size() > max_bytes / 8) modes_text.clear();
  // Room kept for the truncation notes and the footer.
  const size_t reserve = 400;
  size_t fixed = out.size() + header.size() + skipped_text.size() + modes_text.size() + reserve;
  size_t budget = max_bytes > fixed ? max_bytes - fixed : 0;
  // Failure notes get at most half the room; the table the rest.
  std::string note_text;
  size_t notes_used = 0;
  for (auto& s : items) {
    if (note_text.size() + s.size() > budget / 2) break;
    note_text += s;
    ++notes_used;
  }
  std::string table;
  size_t rows_used = 0;
  for (auto& rw : rows) {
    if (table.size() + rw.text.size() > budget - note_text.size()) break;
    table += rw.text;
    ++rows_used;
  }
  if (!rows.empty()) {
    out += header + table;
    if (rows_used < rows.size())
      out += fmt::format("\n_… {} more row{} left out to stay under {} KB; the JSON and HTML reports have everything._\n",
                         rows.size() - rows_used, rows.size() - rows_used == 1 ? "" : "s", max_bytes / 1024);
  } else {
    out += "_No workloads ran._\n";
  }
  if (!items.empty()) {
    out += "\n<details open><summary>Checks that did not pass</summary>\n\n" + note_text;
    if (notes_used < items.size()) out += fmt::format("- _… and {} more_\n", items.size() - notes_used);
    out += "\n</details>\n";
  }
  out += skipped_text;
  out += modes_text;
  out += "\n<sub>speedup = baseline median / kernel median; of floor = floor / kernel median. Times are medians "
         "(± relative noise, stddev / mean).</sub>\n";
  return out;
}

}  // namespace kf
