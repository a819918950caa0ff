#include "exec/compile.h"

#include <unistd.h>

#include <atomic>
#include <map>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/subprocess.h"

namespace kf {
namespace fs = std::filesystem;

nlohmann::json resource_usage::to_json() const {
  return {{"registers", registers}, {"smem_bytes", smem_bytes}, {"spill_stores", spill_stores},
          {"spill_loads", spill_loads}, {"stack_bytes", stack_bytes}, {"kernels", kernels}};
}

resource_usage resource_usage::from_json(const nlohmann::json& j) {
  resource_usage r;
  r.registers = j.value("registers", -1);
  r.smem_bytes = j.value("smem_bytes", int64_t(-1));
  r.spill_stores = j.value("spill_stores", int64_t(-1));
  r.spill_loads = j.value("spill_loads", int64_t(-1));
  r.stack_bytes = j.value("stack_bytes", int64_t(-1));
  r.kernels = j.value("kernels", 0);
  return r;
}

resource_usage parse_ptxas_resources(std::string_view log) {
  // ptxas -v prints, per entry function:
  //   ptxas info    : Function properties for _Z6kernelPf
  //       16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
  //   ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
  // The unit's usage is the worst kernel's (what limits occupancy and shows spills).
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  resource_usage r;
  std::string text(log);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    std::smatch m;
    if (std::regex_search(line, m, frame)) {
      r.stack_bytes = std::max<int64_t>(r.stack_bytes, std::stoll(m[1]));
      r.spill_stores = std::max<int64_t>(r.spill_stores, std::stoll(m[2]));
      r.spill_loads = std::max<int64_t>(r.spill_loads, std::stoll(m[3]));
    }
    if (std::regex_search(line, m, used)) {
      ++r.kernels;
      r.registers = std::max(r.registers, std::stoi(m[1]));
      r.smem_bytes = std::max<int64_t>(r.smem_bytes, 0);
      if (std::regex_search(line, m, smem)) r.smem_bytes = std::max<int64_t>(r.smem_bytes, std::stoll(m[1]));
    }
  }
  return r;
}

nlohmann::json compile_result::to_json() const {
  return {{"ok", ok}, {"so_path", so_path}, {"log", log}, {"error", error}, {"resource", resource.to_json()},
          {"seconds", seconds}, {"cached", cached}, {"key", key}};
}

std::string abi_include_dir() {
  std::vector<fs::path> tries;
  if (const char* env = std::getenv("KFORGE_INCLUDE_DIR")) tries.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tries.push_back(exe.parent_path().parent_path() / "include" / "kforge");
  tries.push_back(fs::path(KFORGE_SOURCE_DIR) / "lib" / "exec");
  for (auto& t : tries)
    if (fs::exists(t / "kf_abi.h", ec)) return fs::absolute(t).string();
  std::string where;
  for (auto& t : tries) where += " " + t.string();
  throw infra_error(fmt::format("cannot find kf_abi.h (looked in:{}); set KFORGE_INCLUDE_DIR", where));
}

namespace {

std::string default_nvcc() {
  std::string built = KFORGE_NVCC;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  if (auto p = find_program("nvcc")) return *p;
  if (::access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return "nvcc";
}

std::string default_cxx() {
  if (const char* env = std::getenv("CXX"); env && *env) return env;
  std::string built = KFORGE_CXX_COMPILER;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  return "g++";
}

std::string arch_number(const std::string& arch) {  // "sm_90a" -> "90a"
  auto pos = arch.find('_');
  return pos == std::string::npos ? arch : arch.substr(pos + 1);
}

}  // namespace

compiler::compiler(compile_options options) : m_options(std::move(options)) {
  m_nvcc = m_options.nvcc.empty() ? default_nvcc() : m_options.nvcc;
  m_cxx = m_options.cxx.empty() ? default_cxx() : m_options.cxx;
  if (m_options.include_dir.empty()) m_options.include_dir = abi_include_dir();
}

// Candidates share one worker process (dlopen RTLD_LOCAL). GCC makes the function-local statics of templates and
// inline functions STB_GNU_UNIQUE symbols, which the dynamic linker unifies across every loaded library whatever
// the flags: a second candidate saw the first one's cached state (found on an H200: a launch cache in
// group_norm_cuda's team launch skipped the second library's shared-memory opt-in, and its launch failed).
// -fno-gnu-unique makes them plain weak symbols, and -Bsymbolic binds a candidate's references to its own.
std::vector<std::string> compiler::command(const compile_request& req, const std::string& src,
                                           const std::string& out) const {
  std::vector<std::string> cmd;
  if (req.device == device_kind::cuda) {
    std::string n = arch_number(req.arch);
    // -cudart shared: the candidate binds to the libcudart the worker (LibTorch) already loaded, so streams and
    // the context are shared with the harness.
    cmd = {m_nvcc, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fno-gnu-unique", "-Xlinker", "-Bsymbolic",
           "-cudart", "shared", fmt::format("-gencode=arch=compute_{},code=sm_{}", n, n), "-Xptxas", "-v",
           "-I" + m_options.include_dir};
  } else {
    // -z defs: a call to anything not in libc/libm/libgomp (torch, a BLAS) fails at link time, not at load.
    cmd = {m_cxx, "-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC", "-Wl,-z,defs",
           "-fno-gnu-unique", "-Wl,-Bsymbolic", "-I" + m_options.include_dir};
  }
  cmd.insert(cmd.end(), req.extra_flags.begin(), req.extra_flags.end());
  cmd.insert(cmd.end(), {"-o", out, src});
  return cmd;
}

std::string compiler::compiler_identity(device_kind device) {
  std::lock_guard lock(m_mutex);
  std::string& id = device == device_kind::cuda ? m_nvcc_identity : m_cxx_identity;
  if (id.empty()) {
    const std::string& prog = device == device_kind::cuda ? m_nvcc : m_cxx;
    process_options opt;
    opt.timeout = std::chrono::seconds(60);
    opt.merge_stderr = true;
    auto r = run_process({prog, "--version"}, opt);
    if (!r.started) throw infra_error(fmt::format("compiler {} not found ({})", prog, r.err));
    if (!r.ok()) throw infra_error(fmt::format("{} --version failed ({}): {}", prog, r.describe(), r.out));
    id = prog + "\n" + r.out;
  }
  return id;
}

std::string compiler::cache_key(const compile_request& req) {
  std::string abi = read_file(fs::path(m_options.include_dir) / "kf_abi.h");
  std::string flags;
  for (auto& f : command(req, "SRC", "OUT")) flags += f + "\n";
  return sha256_hex(fmt::format("kforge-compile-v1\n{}\n{}\n{}\n{}\n{}\n{}", device_kind_name(req.device),
                                req.device == device_kind::cuda ? req.arch : "", flags, compiler_identity(req.device),
                                abi, req.source));
}

namespace {

// A folder beside the entries that only this process and thread use: `kind` (tmp, stale) and the key's start.
fs::path private_folder(const fs::path& entries, const char* kind, const std::string& key) {
  return entries / fmt::format(".{}-{}-{}-{}", kind, key.substr(0, 16), ::getpid(),
                               std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

// The entry's library is the one its compile wrote: present and, where the entry records its hash, unchanged.
bool intact_library(const fs::path& dir, const nlohmann::json& entry) {
  std::error_code ec;
  const fs::path so = dir / "kernel.so";
  if (!fs::is_regular_file(so, ec) || fs::file_size(so, ec) == 0 || ec) return false;
  if (!entry.contains("so_sha256")) return true;  // written before hashes were kept
  try {
    return sha256_hex(read_file(so)) == entry.value("so_sha256", "");
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

compile_result compiler::compile(const compile_request& req) {
  compile_result result;
  result.key = cache_key(req);
  fs::path dir = fs::absolute(m_options.cache_root) / "compile" / result.key;
  std::error_code ec;
  if (fs::exists(dir / "result.json", ec)) {
    nlohmann::json j = nlohmann::json::parse(read_file(dir / "result.json"), nullptr, false);
    if (j.is_object() && (!j.value("ok", false) || intact_library(dir, j))) {
      result.ok = j.value("ok", false);
      result.log = j.value("log", "");
      result.error = j.value("error", "");
      result.resource = resource_usage::from_json(j.value("resource", nlohmann::json::object()));
      result.so_path = result.ok ? (dir / "kernel.so").string() : "";
      result.cached = true;
      return result;
    }
    // A damaged entry (truncated, deleted or rewritten library, unreadable result) is a miss: set aside, rebuilt.
    const fs::path stale = private_folder(dir.parent_path(), "stale", result.key);
    fs::rename(dir, stale, ec);
    if (!ec) remove_tree(stale.string());
  }

  // Build in a private folder and rename it into place, so a reader never sees half an entry and two
  // processes compiling the same source both end up with a complete one. Folders go with remove_tree, never
  // std::filesystem::remove_all: in a process with LibTorch loaded (libkforge_ops.so in Python) the latter binds to
  // torch's copy and crashed the loser of two processes racing for one entry (kforge e2e's tests, run in parallel).
  fs::create_directories(dir.parent_path());
  fs::path tmp = private_folder(dir.parent_path(), "tmp", result.key);
  remove_tree(tmp.string());
  fs::create_directories(tmp);
  std::string src = (tmp / (req.device == device_kind::cuda ? "kernel.cu" : "kernel.cpp")).string();
  write_file_atomic(src, req.source);
  process_options opt;
  opt.timeout = m_options.timeout;
  opt.merge_stderr = true;
  opt.cwd = tmp.string();
  auto r = run_process(command(req, src, (tmp / "kernel.so").string()), opt);
  result.seconds = r.seconds;
  // The private folder's path means nothing to a reader (and changes every time): the log names kernel.cpp /
  // kernel.cu alone, which check_candidate turns into the candidate's own name.
  result.log = r.out;
  for (const std::string dir_prefix = tmp.string() + "/";;) {
    const auto at = result.log.find(dir_prefix);
    if (at == std::string::npos) break;
    result.log.erase(at, dir_prefix.size());
  }
  if (!r.started) throw infra_error(fmt::format("cannot run the compiler: {}", r.err));
  result.ok = r.ok();
  if (r.timed_out) result.error = fmt::format("compile timed out after {} s", m_options.timeout.count());
  else if (!result.ok) result.error = fmt::format("compile error ({})", r.describe());
  if (req.device == device_kind::cuda) result.resource = parse_ptxas_resources(result.log);
  if (r.timed_out) {  // not a property of the source: don't cache it
    remove_tree(tmp.string());
    return result;
  }
  nlohmann::json entry = {{"ok", result.ok}, {"log", result.log}, {"error", result.error},
                          {"resource", result.resource.to_json()}, {"seconds", result.seconds}, {"name", req.name}};
  if (result.ok && fs::exists(tmp / "kernel.so", ec)) entry["so_sha256"] = sha256_hex(read_file(tmp / "kernel.so"));
  write_file_atomic(tmp / "result.json", entry.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  fs::rename(tmp, dir, ec);
  if (ec) remove_tree(tmp.string());  // another compile of the same key won the race; its entry is equivalent
  if (result.ok) result.so_path = (dir / "kernel.so").string();
  return result;
}

std::vector<compile_result> compiler::compile_batch(const std::vector<compile_request>& requests) {
  std::vector<compile_result> results(requests.size());
  // One compile per key: two threads building the same entry race for its folder, and the loser's cleanup
  // removed a folder that the other had just filled (in a process with LibTorch loaded, whose own
  // std::filesystem::remove_all binds first, that crashed: the device tests on the GPU runner).
  std::vector<size_t> unique, first_of(requests.size());
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto [it, fresh] = seen.emplace(cache_key(requests[i]), i);
    first_of[i] = it->second;
    if (fresh) unique.push_back(i);
  }
  int jobs = m_options.jobs > 0 ? m_options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(unique.size()));
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t u; (u = next++) < unique.size();) {
      try {
        results[unique[u]] = compile(requests[unique[u]]);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < jobs; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);  // infrastructure only: compile errors are results
  for (size_t i = 0; i < requests.size(); ++i)
    if (first_of[i] != i) results[i] = results[first_of[i]];
  return results;
}

}  // namespace kf
