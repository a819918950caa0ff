#include "verify/static_scan.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

namespace kf {
namespace {

enum class match_kind {
  name,       // the last component equals the pattern (printf, std::printf, ::printf)
  qualified,  // the qualified name ends with the pattern (std::thread, not a variable named thread)
  prefix,     // the last component starts with the pattern (cublasSgemm, cudnnCreate)
  ns,         // the qualified name starts with the pattern's namespace (torch::, at::)
};

struct pattern {
  std::string_view text;
  match_kind kind;
  bool call_only;            // only when followed by '(' (common words: exit, system, kill)
  std::string_view rule;
  std::string_view why;
  std::string_view library;  // for static.library_call: the name spec.allow_libraries uses
};

constexpr std::string_view k_stream = "static.stream_creation", k_thread = "static.thread_creation",
                           k_sync = "static.device_sync", k_io = "static.host_io", k_proc = "static.process",
                           k_l2 = "static.l2_persistence", k_dl = "static.dynamic_loading",
                           k_lib = "static.library_call", k_default = "static.default_stream",
                           k_load = "static.load_time_code", k_pdl = "static.pdl_wait",
                           k_include_path = "static.include_path", k_net = "static.network";

const std::vector<pattern>& patterns() {
  static const std::vector<pattern> table = {
      // streams: all work goes on the given stream
      {"cudaStreamCreate", match_kind::prefix, false, k_stream, "creates a stream; enqueue on the given stream", ""},
      {"cuStreamCreate", match_kind::prefix, false, k_stream, "creates a stream; enqueue on the given stream", ""},
      {"cudaStreamPerThread", match_kind::name, false, k_stream, "uses the per-thread default stream", ""},
      {"cudaStreamLegacy", match_kind::name, false, k_stream, "uses the legacy default stream", ""},
      // threads and host callbacks
      {"std::thread", match_kind::qualified, false, k_thread, "creates a thread", ""},
      {"std::jthread", match_kind::qualified, false, k_thread, "creates a thread", ""},
      {"std::async", match_kind::qualified, false, k_thread, "runs work on another thread", ""},
      {"pthread_create", match_kind::name, false, k_thread, "creates a thread", ""},
      {"thrd_create", match_kind::name, false, k_thread, "creates a thread", ""},
      {"clone", match_kind::name, true, k_thread, "creates a thread or process", ""},
      {"cudaLaunchHostFunc", match_kind::name, false, k_thread, "runs host code on a runtime thread", ""},
      {"cudaStreamAddCallback", match_kind::name, false, k_thread, "runs host code on a runtime thread", ""},
      // device-wide synchronization and synchronous (default-stream) memory calls
      {"cudaDeviceSynchronize", match_kind::name, false, k_sync, "synchronizes the whole device", ""},
      {"cudaThreadSynchronize", match_kind::name, false, k_sync, "synchronizes the whole device", ""},
      {"cuCtxSynchronize", match_kind::name, false, k_sync, "synchronizes the whole context", ""},
      {"cudaDeviceReset", match_kind::name, false, k_sync, "destroys the context", ""},
      {"cudaSetDevice", match_kind::name, false, k_sync, "changes the current device", ""},
      {"cudaDeviceSetLimit", match_kind::name, false, k_sync, "changes a device-wide limit", ""},
      {"cudaMalloc", match_kind::name, false, k_sync, "synchronous allocation; use cudaMallocAsync on the stream", ""},
      {"cudaMallocManaged", match_kind::name, false, k_sync, "synchronous allocation", ""},
      {"cudaMallocHost", match_kind::name, false, k_sync, "synchronous allocation", ""},
      {"cudaHostAlloc", match_kind::name, false, k_sync, "synchronous allocation", ""},
      {"cudaFree", match_kind::name, false, k_sync, "synchronizes the device; use cudaFreeAsync on the stream", ""},
      {"cudaFreeHost", match_kind::name, false, k_sync, "synchronizes the device", ""},
      {"cudaMemcpy", match_kind::name, false, k_sync, "synchronous copy on the default stream; use cudaMemcpyAsync", ""},
      {"cudaMemcpy2D", match_kind::name, false, k_sync, "synchronous copy on the default stream", ""},
      {"cudaMemcpyToSymbol", match_kind::name, false, k_sync, "synchronous copy on the default stream", ""},
      {"cudaMemcpyFromSymbol", match_kind::name, false, k_sync, "synchronous copy on the default stream", ""},
      {"cudaMemset", match_kind::name, false, k_sync, "runs on the default stream; use cudaMemsetAsync", ""},
      {"cuMemAlloc", match_kind::name, false, k_sync, "synchronous allocation", ""},
      {"cuMemFree", match_kind::name, false, k_sync, "synchronizes the device", ""},
      // I/O
      {"printf", match_kind::name, true, k_io, "prints", ""},
      {"fprintf", match_kind::name, true, k_io, "prints", ""},
      {"vprintf", match_kind::name, true, k_io, "prints", ""},
      {"vfprintf", match_kind::name, true, k_io, "prints", ""},
      {"puts", match_kind::name, true, k_io, "prints", ""},
      {"fputs", match_kind::name, true, k_io, "prints", ""},
      {"putchar", match_kind::name, true, k_io, "prints", ""},
      {"fputc", match_kind::name, true, k_io, "prints", ""},
      {"perror", match_kind::name, true, k_io, "prints", ""},
      {"fopen", match_kind::name, false, k_io, "opens a file", ""},
      {"freopen", match_kind::name, false, k_io, "opens a file", ""},
      {"fdopen", match_kind::name, false, k_io, "opens a file", ""},
      {"fwrite", match_kind::name, false, k_io, "writes a file", ""},
      {"fread", match_kind::name, false, k_io, "reads a file", ""},
      {"fgets", match_kind::name, false, k_io, "reads a file", ""},
      {"scanf", match_kind::name, true, k_io, "reads input", ""},
      {"fscanf", match_kind::name, true, k_io, "reads input", ""},
      {"cout", match_kind::name, false, k_io, "prints", ""},
      {"cerr", match_kind::name, false, k_io, "prints", ""},
      {"clog", match_kind::name, false, k_io, "prints", ""},
      {"cin", match_kind::name, false, k_io, "reads input", ""},
      {"ofstream", match_kind::name, false, k_io, "writes a file", ""},
      {"ifstream", match_kind::name, false, k_io, "reads a file", ""},
      {"fstream", match_kind::name, false, k_io, "opens a file", ""},
      {"std::filesystem", match_kind::ns, false, k_io, "touches the file system", ""},
      {"::open", match_kind::qualified, true, k_io, "opens a file", ""},
      {"::read", match_kind::qualified, true, k_io, "reads a file descriptor", ""},
      {"::write", match_kind::qualified, true, k_io, "writes a file descriptor", ""},
      {"mmap", match_kind::name, true, k_io, "maps memory or a file", ""},
      {"getenv", match_kind::name, true, k_io, "reads the environment", ""},
      {"secure_getenv", match_kind::name, true, k_io, "reads the environment", ""},
      {"setenv", match_kind::name, true, k_io, "changes the environment", ""},
      {"environ", match_kind::name, false, k_io, "reads the environment", ""},
      {"__environ", match_kind::name, false, k_io, "reads the environment", ""},
      // network
      {"socket", match_kind::name, true, k_net, "opens a socket", ""},
      {"socketpair", match_kind::name, true, k_net, "opens a socket", ""},
      {"connect", match_kind::name, true, k_net, "connects a socket", ""},
      {"bind", match_kind::name, true, k_net, "binds a socket", ""},
      {"listen", match_kind::name, true, k_net, "listens on a socket", ""},
      {"accept", match_kind::name, true, k_net, "accepts a connection", ""},
      {"accept4", match_kind::name, true, k_net, "accepts a connection", ""},
      {"sendto", match_kind::name, true, k_net, "sends on a socket", ""},
      {"sendmsg", match_kind::name, true, k_net, "sends on a socket", ""},
      {"recvfrom", match_kind::name, true, k_net, "receives on a socket", ""},
      {"getaddrinfo", match_kind::name, true, k_net, "resolves a host name", ""},
      {"gethostbyname", match_kind::name, true, k_net, "resolves a host name", ""},
      {"curl_", match_kind::prefix, false, k_net, "calls libcurl", ""},
      {"io_uring_", match_kind::prefix, false, k_net, "uses io_uring", ""},
      // processes
      {"system", match_kind::name, true, k_proc, "runs a shell command", ""},
      {"popen", match_kind::name, false, k_proc, "runs a shell command", ""},
      {"fork", match_kind::name, true, k_proc, "starts a process", ""},
      {"vfork", match_kind::name, true, k_proc, "starts a process", ""},
      {"execl", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execlp", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execle", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execv", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execvp", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execvpe", match_kind::name, true, k_proc, "replaces the process", ""},
      {"execve", match_kind::name, true, k_proc, "replaces the process", ""},
      {"posix_spawn", match_kind::prefix, true, k_proc, "starts a process", ""},
      {"kill", match_kind::name, true, k_proc, "sends a signal", ""},
      {"raise", match_kind::name, true, k_proc, "raises a signal", ""},
      {"signal", match_kind::name, true, k_proc, "installs a signal handler", ""},
      {"sigaction", match_kind::name, true, k_proc, "installs a signal handler", ""},
      {"exit", match_kind::name, true, k_proc, "ends the process", ""},
      {"_exit", match_kind::name, true, k_proc, "ends the process", ""},
      {"_Exit", match_kind::name, true, k_proc, "ends the process", ""},
      {"quick_exit", match_kind::name, true, k_proc, "ends the process", ""},
      {"abort", match_kind::name, true, k_proc, "ends the process", ""},
      {"terminate", match_kind::name, true, k_proc, "ends the process", ""},
      {"atexit", match_kind::name, true, k_proc, "registers process-exit code", ""},
      {"syscall", match_kind::name, true, k_proc, "makes a raw system call", ""},
      {"ptrace", match_kind::name, true, k_proc, "traces a process", ""},
      // L2 persistence
      {"cudaAccessPolicyWindow", match_kind::name, false, k_l2, "sets an L2 access policy window", ""},
      {"accessPolicyWindow", match_kind::name, false, k_l2, "sets an L2 access policy window", ""},
      {"cudaLimitPersistingL2CacheSize", match_kind::name, false, k_l2, "reserves persisting L2", ""},
      {"cudaStreamSetAttribute", match_kind::name, false, k_l2, "changes the stream's attributes", ""},
      {"cudaStreamAttrValue", match_kind::name, false, k_l2, "changes the stream's attributes", ""},
      {"cudaAccessPropertyPersisting", match_kind::name, false, k_l2, "marks accesses persisting in L2", ""},
      {"cudaLaunchAttributeAccessPolicyWindow", match_kind::name, false, k_l2, "sets an L2 access policy window", ""},
      {"cudaCtxResetPersistingL2Cache", match_kind::name, false, k_l2, "resets persisting L2", ""},
      // code loaded at run time
      {"dlopen", match_kind::name, false, k_dl, "loads a library at run time", ""},
      {"dlmopen", match_kind::name, false, k_dl, "loads a library at run time", ""},
      {"dlsym", match_kind::name, false, k_dl, "looks up a symbol at run time", ""},
      {"dlvsym", match_kind::name, false, k_dl, "looks up a symbol at run time", ""},
      {"cuModuleLoad", match_kind::prefix, false, k_dl, "loads a module at run time", ""},
      {"cuLibraryLoad", match_kind::prefix, false, k_dl, "loads a library at run time", ""},
      {"cudaLibraryLoad", match_kind::prefix, false, k_dl, "loads a library at run time", ""},
      {"nvrtc", match_kind::prefix, false, k_dl, "compiles code at run time", ""},
      // libraries
      {"torch", match_kind::ns, false, k_lib, "calls LibTorch", "torch"},
      {"at", match_kind::ns, false, k_lib, "calls ATen", "torch"},
      {"c10", match_kind::ns, false, k_lib, "calls c10 (LibTorch)", "torch"},
      {"cublas", match_kind::prefix, false, k_lib, "calls cuBLAS", "cublas"},
      {"cudnn", match_kind::prefix, false, k_lib, "calls cuDNN", "cudnn"},
      {"cufft", match_kind::prefix, false, k_lib, "calls cuFFT", "cufft"},
      {"cusparse", match_kind::prefix, false, k_lib, "calls cuSPARSE", "cusparse"},
      {"cusolver", match_kind::prefix, false, k_lib, "calls cuSOLVER", "cusolver"},
      {"cutensor", match_kind::prefix, false, k_lib, "calls cuTENSOR", "cutensor"},
  };
  return table;
}

// Headers that mean a library or a forbidden facility, whatever is called from them.
struct include_rule {
  std::string_view text;     // a path prefix ("torch/"), a file name prefix ("cublas"), or an exact file name
  std::string_view rule;
  std::string_view why;
  std::string_view library;
};

bool include_hit(const include_rule& r, const std::string& path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (r.text.ends_with("/")) return path.rfind(r.text, 0) == 0;
  if (r.rule == "static.library_call") return base.rfind(r.text, 0) == 0;  // cublas_v2.h, cudnn_frontend.h
  return base == r.text;
}
const std::vector<include_rule>& include_rules() {
  static const std::vector<include_rule> table = {
      {"torch/", k_lib, "includes LibTorch", "torch"},   {"ATen/", k_lib, "includes ATen", "torch"},
      {"c10/", k_lib, "includes c10 (LibTorch)", "torch"}, {"cublas", k_lib, "includes cuBLAS", "cublas"},
      {"cudnn", k_lib, "includes cuDNN", "cudnn"},        {"cufft", k_lib, "includes cuFFT", "cufft"},
      {"cusparse", k_lib, "includes cuSPARSE", "cusparse"}, {"cusolver", k_lib, "includes cuSOLVER", "cusolver"},
      {"cutensor", k_lib, "includes cuTENSOR", "cutensor"}, {"Python.h", k_lib, "includes Python", "python"},
      {"thread", k_thread, "includes <thread>", ""},      {"future", k_thread, "includes <future>", ""},
      {"pthread.h", k_thread, "includes pthreads", ""},   {"iostream", k_io, "includes <iostream>", ""},
      {"fstream", k_io, "includes <fstream>", ""},        {"filesystem", k_io, "includes <filesystem>", ""},
      {"dlfcn.h", k_dl, "includes the dynamic loader", ""}, {"nvrtc.h", k_dl, "includes NVRTC", ""},
      {"unistd.h", k_proc, "includes POSIX process calls", ""}, {"spawn.h", k_proc, "includes posix_spawn", ""},
      {"syscall.h", k_proc, "includes raw system call numbers", ""}, {"ptrace.h", k_proc, "includes ptrace", ""},
      {"socket.h", k_net, "includes sockets", ""},        {"netinet/", k_net, "includes internet protocols", ""},
      {"arpa/", k_net, "includes internet addresses", ""}, {"netdb.h", k_net, "includes host name lookups", ""},
      {"un.h", k_net, "includes local sockets", ""},
      {"liburing.h", k_net, "includes io_uring", ""},      {"curl/", k_net, "includes libcurl", ""},
  };
  return table;
}

bool allowed(std::string_view library, const scan_options& o) {
  return !library.empty() &&
         std::find(o.allow_libraries.begin(), o.allow_libraries.end(), std::string(library)) != o.allow_libraries.end();
}

int line_of(std::string_view text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
  return i;
}

// The top-level comma-separated pieces of t[open+1 .. matching close), or empty when unbalanced.
std::vector<std::string> split_args(std::string_view t, size_t open, std::string_view close_text, size_t* end) {
  std::vector<std::string> args(1);
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (depth == 0 && t.substr(i, close_text.size()) == close_text) {
      *end = i;
      return args;
    }
    char c = t[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth < 0) break;
    if (c == ',' && depth == 0) args.emplace_back();
    else args.back().push_back(c);
  }
  return {};
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

bool is_default_stream_text(const std::string& arg) {
  std::string a;
  for (char c : arg)
    if (!std::isspace(static_cast<unsigned char>(c))) a.push_back(c);
  return a == "0" || a == "nullptr" || a == "NULL" || a == "(cudaStream_t)0" || a == "cudaStreamDefault" ||
         a == "cudaStream_t(0)" || a == "(cudaStream_t)nullptr";
}

void scan_launches(std::string_view t, std::vector<scan_finding>& out) {
  // kernel<<<grid, block[, smem[, stream]]>>>: without the fourth argument (or with a literal null) the launch
  // goes to the default stream, not the one kf_launch was given.
  for (size_t pos = t.find("<<<"); pos != std::string_view::npos; pos = t.find("<<<", pos + 3)) {
    size_t end = 0;
    auto args = split_args(t, pos + 3, ">>>", &end);
    if (args.empty()) continue;
    if (args.size() < 4 || is_default_stream_text(args[3]))
      out.push_back({std::string(k_default), line_of(t, pos), "<<<" + trim(std::string(t.substr(pos + 3, end - pos - 3))) + ">>>",
                     "launches on the default stream; pass the given stream as the fourth launch argument"});
  }
  struct async_call {
    std::string_view name;
    size_t stream_arg;  // 0-based index of the stream argument
  };
  for (auto [name, idx] : {async_call{"cudaMemcpyAsync", 4}, async_call{"cudaMemsetAsync", 3},
                           async_call{"cudaMemcpy2DAsync", 7}, async_call{"cudaMallocAsync", 2},
                           async_call{"cudaFreeAsync", 1}}) {
    for (size_t pos = t.find(name); pos != std::string_view::npos; pos = t.find(name, pos + 1)) {
      if ((pos > 0 && is_ident(t[pos - 1])) || is_ident(t[pos + name.size()])) continue;
      size_t open = skip_space(t, pos + name.size());
      if (open >= t.size() || t[open] != '(') continue;
      size_t end = 0;
      auto args = split_args(t, open + 1, ")", &end);
      if (args.empty()) continue;
      if (args.size() <= idx || is_default_stream_text(args[idx]))
        out.push_back({std::string(k_default), line_of(t, pos), std::string(name),
                       "runs on the default stream; pass the given stream"});
    }
  }
}

// A launch with programmatic dependent launch may start before the kernel ahead of it on the stream has finished
// writing: the source must wait for it (griddepcontrol.wait, in an asm string, or cudaGridDependencySynchronize)
// somewhere, or its kernels may read inputs that are not written yet. `code` keeps string contents (asm text).
void scan_pdl(std::string_view text, std::string_view code, std::vector<scan_finding>& out) {
  size_t first = std::string_view::npos;
  for (std::string_view id : {"cudaLaunchAttributeProgrammaticStreamSerialization",
                              "programmaticStreamSerializationAllowed", "cudaLaunchAttributeProgrammaticEvent",
                              "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION",
                              "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT"})
    first = std::min(first, text.find(id));
  if (first == std::string_view::npos) return;
  if (code.find("griddepcontrol.wait") != std::string_view::npos ||
      text.find("cudaGridDependencySynchronize") != std::string_view::npos)
    return;
  out.push_back({std::string(k_pdl), line_of(text, first), "programmatic dependent launch",
                 "launches with PDL but never waits for the previous grid (griddepcontrol.wait or "
                 "cudaGridDependencySynchronize): its kernels may read inputs before they are written"});
}

}  // namespace

std::string blank_comments(std::string_view src, bool also_strings) {
  std::string out(src);
  size_t i = 0, n = src.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < n) {
    char c = src[i];
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      size_t e = src.find('\n', i);
      if (e == std::string_view::npos) e = n;
      blank(i, e);
      i = e;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      size_t e = src.find("*/", i + 2);
      e = e == std::string_view::npos ? n : e + 2;
      blank(i, e);
      i = e;
    } else if (c == 'R' && i + 1 < n && src[i + 1] == '"' && (i == 0 || !is_ident(src[i - 1]))) {
      size_t paren = src.find('(', i + 2);
      if (paren == std::string_view::npos) break;
      std::string close = ")" + std::string(src.substr(i + 2, paren - i - 2)) + "\"";
      size_t e = src.find(close, paren);
      e = e == std::string_view::npos ? n : e + close.size();
      if (also_strings) blank(i + 1, e);
      i = e;
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isxdigit(static_cast<unsigned char>(src[i - 1]))))) {
      // a string or character literal ('\'' after a hex digit is a digit separator: 1'000)
      size_t e = i + 1;
      while (e < n && src[e] != c && src[e] != '\n') e += src[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, n);
      if (also_strings) blank(i + 1, e - 1);
      i = e;
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<scan_finding> static_scan(std::string_view source, const scan_options& options) {
  std::vector<scan_finding> out;
  std::string no_comments = blank_comments(source, false);
  std::string text = blank_comments(source, true);

  // #include lines (read before strings are blanked: "..." is a path here)
  static const std::regex include_re(R"(^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"])", std::regex::multiline);
  for (auto it = std::sregex_iterator(no_comments.begin(), no_comments.end(), include_re); it != std::sregex_iterator(); ++it) {
    std::string path = (*it)[1];
    // A path of its own (absolute, or climbing out with ..) reads a file of the host into the compile, and its
    // text into the compile log and the reports: the kernel's includes are the compiler's, kf_abi.h and the toolkit.
    if (path.starts_with("/") || path.starts_with("~") || path == ".." || path.starts_with("../") ||
        path.find("/../") != std::string::npos) {
      out.push_back({std::string(k_include_path), line_of(no_comments, static_cast<size_t>(it->position())), "#include \"" + path + "\"",
                     "includes a file by its own path (absolute or outside the kernel's folder)"});
      continue;
    }
    for (auto& r : include_rules()) {
      if (!include_hit(r, path) || allowed(r.library, options)) continue;
      out.push_back({std::string(r.rule), line_of(no_comments, static_cast<size_t>(it->position())),
                     "#include <" + path + ">", std::string(r.why)});
      break;
    }
  }
  // code that runs when the shared object is loaded
  static const std::regex ctor_re(R"(__attribute__\s*\(\(\s*(constructor|destructor)|gnu::(constructor|destructor)|\.init_array|\.ctors)");
  for (auto it = std::sregex_iterator(no_comments.begin(), no_comments.end(), ctor_re); it != std::sregex_iterator(); ++it)
    out.push_back({std::string(k_load), line_of(no_comments, static_cast<size_t>(it->position())), it->str(),
                   "runs code when the shared object is loaded"});

  // raw system calls in inline assembly, and /proc paths (other processes' environment and memory)
  static const std::regex asm_re(R"("[^"\n]*\b(syscall|sysenter|int\s*\$?0x80|svc\s+#?0)\b[^"\n]*")");
  for (auto it = std::sregex_iterator(no_comments.begin(), no_comments.end(), asm_re); it != std::sregex_iterator(); ++it)
    out.push_back({std::string(k_proc), line_of(no_comments, static_cast<size_t>(it->position())), it->str(),
                   "makes a raw system call in inline assembly"});
  static const std::regex proc_re(R"("/proc/[^"\n]*")");
  for (auto it = std::sregex_iterator(no_comments.begin(), no_comments.end(), proc_re); it != std::sregex_iterator(); ++it)
    out.push_back({std::string(k_io), line_of(no_comments, static_cast<size_t>(it->position())), it->str(),
                   "names a /proc path (a process's environment, memory or files)"});

  // identifiers, with their :: qualification
  std::string chain;
  bool after_scope = false;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == ':' && i + 1 < text.size() && text[i + 1] == ':') {
      after_scope = true;
      chain += "::";  // chain is empty for a leading :: (global scope)
      i += 2;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = i;
      while (e < text.size() && is_ident(text[e])) ++e;
      std::string ident(text.substr(i, e - i));
      if (!after_scope) chain.clear();
      chain += ident;
      after_scope = false;
      size_t next = skip_space(text, e);
      bool call = next < text.size() && text[next] == '(';
      bool scoped_further = next + 1 < text.size() && text[next] == ':' && text[next + 1] == ':';
      for (auto& p : patterns()) {
        bool hit = false;
        switch (p.kind) {
          case match_kind::name: hit = ident == p.text; break;
          case match_kind::qualified: hit = chain.size() >= p.text.size() && chain.ends_with(p.text) &&
                                            (chain.size() == p.text.size() || p.text.starts_with("::") ||
                                             chain[chain.size() - p.text.size() - 1] == ':'); break;
          case match_kind::prefix: hit = ident.rfind(p.text, 0) == 0; break;
          case match_kind::ns:  // at the namespace's own name, once per qualified use: torch::Tensor, ::at::
            hit = (chain == p.text || chain == "::" + std::string(p.text)) &&
                  (scoped_further || p.text.find("::") != std::string_view::npos);
            break;
        }
        if (!hit || (p.call_only && !call) || allowed(p.library, options)) continue;
        out.push_back({std::string(p.rule), line_of(text, i), chain, std::string(p.why)});
        break;
      }
      i = e;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) {
      chain.clear();
      after_scope = false;
    }
    ++i;
  }
  if (options.device == device_kind::cuda) {
    scan_launches(text, out);
    scan_pdl(text, no_comments, out);
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.line < b.line; });
  return out;
}

void add_scan_checks(verdict& v, const std::vector<scan_finding>& findings) {
  for (auto& rule : verify_rules()) {
    if (rule.stage != rule_stage::static_scan) continue;
    std::vector<const scan_finding*> mine;
    for (auto& f : findings)
      if (f.rule == rule.name) mine.push_back(&f);
    if (mine.empty()) {
      v.pass(std::string(rule.name), "", -1);
      continue;
    }
    std::string detail = fmt::format("line {}: {} ({})", mine[0]->line, mine[0]->token, mine[0]->detail);
    if (mine.size() > 1) detail += fmt::format(", and {} more", mine.size() - 1);
    nlohmann::json lines = nlohmann::json::array();
    for (auto* f : mine) lines.push_back(f->line);
    v.fail(std::string(rule.name), "", -1, detail, {{"findings", mine.size()}, {"lines", lines}});
  }
}

}  // namespace kf
