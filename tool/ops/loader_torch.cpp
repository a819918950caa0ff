// Loading workloads as operators (loader_torch.h).
#include "loader_torch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <ATen/Context.h>
#if KFORGE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "call_binding.h"
#include "exec/compile.h"
#include "exec/device.h"
#include "exec/impl_torch.h"
#include "op_registry_torch.h"
#include "search/family.h"
#include "spec/spec_parse.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"
#include "verify/check.h"

namespace kf::ops {
namespace fs = std::filesystem;

namespace {

// A device whose kernels to load: its kind, the key winners are stored under and, for a GPU, the arch to compile for.
struct target {
  device_kind kind = device_kind::cpu;
  std::string key;
  std::string arch;
  std::string str;  // "cpu", "cuda:0"
};

target cuda_target(int index) {
#if KFORGE_WITH_CUDA
  if (!at::hasCUDA()) throw user_error(fmt::format("kforge.load: device cuda:{} asked for, but there is no GPU", index));
  if (index < 0) index = c10::cuda::current_device();
  TORCH_CHECK(index < c10::cuda::device_count(), "kforge.load: no device cuda:", index);
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  nlohmann::json env = {{"device", "cuda"}, {"arch", fmt::format("sm_{}{}", p->major, p->minor)}, {"gpu_name", p->name}};
  return {device_kind::cuda, gpu_key(env), compile_arch(env), fmt::format("cuda:{}", index)};
#else
  throw user_error(fmt::format("kforge.load: device cuda:{} asked for, but kforge_ops was built without CUDA", index));
#endif
}

// "cpu, cuda" -> {"cpu", "cuda"}.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out(1);
  for (char ch : text) {
    if (ch == ',') out.emplace_back();
    else if (ch != ' ') out.back().push_back(ch);
  }
  return out;
}

std::vector<target> targets(const std::string& device) {
  std::vector<target> out;
  for (const std::string& t : comma_list(device)) {
    if (t == "auto") {
      if (at::hasCUDA()) out.push_back(cuda_target(-1));
      else out.push_back({device_kind::cpu, cpu_key(), "", "cpu"});
    } else if (t == "cpu") {
      out.push_back({device_kind::cpu, cpu_key(), "", "cpu"});
    } else if (t == "cuda" || t.starts_with("cuda:")) {
      out.push_back(cuda_target(t == "cuda" ? -1 : parse_device(t).index));
    } else {
      throw user_error(fmt::format("kforge.load: device `{}`: expected auto, cpu, cuda or cuda:N (several joined by commas)", t));
    }
  }
  auto same_kind = [](const target& a, const target& b) { return a.kind == b.kind; };
  for (size_t i = 1; i < out.size(); ++i)
    if (std::any_of(out.begin(), out.begin() + static_cast<long>(i), [&](auto& o) { return same_kind(o, out[i]); }))
      throw user_error(fmt::format("kforge.load: `{}` names two devices of one kind; an operator holds one kernel per kind", device));
  return out;
}

bool writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return fs::is_directory(dir, ec) && ::access(dir.c_str(), W_OK) == 0;
}

fs::path cache_dir(const load_options& o) {
  if (!o.cache_dir.empty()) return fs::absolute(o.cache_dir);
  if (const char* env = std::getenv("KFORGE_CACHE_DIR"); env && *env) return fs::absolute(env);
  fs::path beside = fs::absolute(o.workloads_dir).lexically_normal().parent_path() / ".kforge" / "cache";
  if (writable_dir(beside)) return beside;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return fs::path(xdg) / "kforge";
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "kforge";
}

std::vector<std::string> spec_files(const load_options& o) {
  std::vector<std::string> all = find_specs(o.workloads_dir);
  if (o.names.empty()) return all;
  std::vector<std::string> picked;
  for (const std::string& name : o.names) {
    auto it = std::find_if(all.begin(), all.end(), [&](const std::string& f) { return fs::path(f).stem() == name; });
    if (it == all.end()) throw user_error(fmt::format("kforge.load: no workload `{}` in {}", name, o.workloads_dir));
    picked.push_back(*it);
  }
  return picked;
}

std::string first_lines(const std::string& text, size_t n) {
  size_t end = 0;
  for (size_t i = 0; i < n; ++i) {
    end = text.find('\n', end);
    if (end == std::string::npos) return text;
    ++end;
  }
  return text.substr(0, end);
}

// One spec's kernel for one target, on its way from the store to a loaded kf_launch.
struct pending {
  size_t entry = 0;
  const target* t = nullptr;
};

}  // namespace

nlohmann::json load(const load_options& o) {
  static std::mutex one_load_at_a_time;
  std::lock_guard lock(one_load_at_a_time);
  (void)families();  // the spec parser checks search.families against the family table (spec_parse.h)

  std::vector<target> devices = targets(o.device);
  nlohmann::json report = {{"workloads_dir", fs::absolute(o.workloads_dir).lexically_normal().string()},
                           {"loaded", nlohmann::json::array()}, {"skipped", nlohmann::json::array()}};
  for (auto& t : devices) report["devices"].push_back({{"device", t.str}, {"key", t.key}});

  std::vector<op_entry> entries;
  std::vector<pending> work;
  for (const std::string& file : spec_files(o)) {
    op_entry e;
    std::vector<spec_diagnostic> diags = parse_spec(file, &e.spec);
    if (!diags.empty()) {
      report["skipped"].push_back({{"spec", file}, {"why", fmt::format("{} error(s), the first: {}", diags.size(), diags.front().str())}});
      continue;
    }
    e.name = op_name(e.spec.name);
    e.schema = op_schema(e.spec);
    if (auto prev = find_entry(e.name)) {  // kinds not asked for keep what an earlier load gave them
      e.cpu = prev->cpu;
      e.cuda = prev->cuda;
    }
    for (const target& t : devices) {
      device_kernel& k = t.kind == device_kind::cuda ? e.cuda : e.cpu;
      k = device_kernel{};
      winner_lookup w = find_winner(kernels_dir(file, e.spec.name), t.key);
      if (!w.kernel) {
        k.why = w.why;
        continue;
      }
      k.source = w.kernel->source.string();
      k.key = w.kernel->gpu_key;
      k.note = w.kernel->note;
      k.arch = t.arch;
      work.push_back({entries.size(), &t});
    }
    entries.push_back(std::move(e));
  }

  // Every kernel compiled at once (one compiler per core), each a cache hit after the first load.
  std::vector<compile_request> requests;
  for (pending& p : work) {
    device_kernel& k = p.t->kind == device_kind::cuda ? entries[p.entry].cuda : entries[p.entry].cpu;
    compile_request r;
    r.device = p.t->kind;
    if (!p.t->arch.empty()) r.arch = p.t->arch;
    r.name = entries[p.entry].spec.name;
    try {
      r.source = read_file(k.source);
    } catch (const std::exception& ex) {
      k.why = ex.what();
    }
    requests.push_back(std::move(r));
  }
  fs::path cache = cache_dir(o);
  report["cache_dir"] = cache.string();
  std::vector<compile_result> results;
  std::string compile_failure;
  try {
    compile_options co;
    co.cache_root = cache;
    compiler c(co);
    results = c.compile_batch(requests);
  } catch (const std::exception& ex) {
    compile_failure = ex.what();
  }
  for (size_t i = 0; i < work.size(); ++i) {
    device_kernel& k = work[i].t->kind == device_kind::cuda ? entries[work[i].entry].cuda : entries[work[i].entry].cpu;
    if (!k.why.empty()) {
      k.launch = nullptr;
      continue;
    }
    if (!compile_failure.empty()) {
      k.why = "cannot compile " + k.source + ": " + compile_failure;
      continue;
    }
    const compile_result& r = results.at(i);
    if (!r.ok) {
      k.why = fmt::format("{} does not compile ({}): {}", k.source, r.error, first_lines(r.log, 8));
      continue;
    }
    try {
      k.launch = load_candidate(r.so_path);
    } catch (const std::exception& ex) {
      k.why = ex.what();
    }
  }

  for (op_entry& e : entries) {
    std::string path = e.spec.path;
    try {
      auto shared = std::make_shared<const op_entry>(std::move(e));
      install(shared);
      report["loaded"].push_back(shared->to_json());
    } catch (const user_error& ex) {
      report["skipped"].push_back({{"spec", path}, {"why", ex.what()}});
    }
  }
  return report;
}

}  // namespace kf::ops
