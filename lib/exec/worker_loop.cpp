// kforge-worker's request loop (core side: framing, dispatch, failure conversion); see worker_command.h.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "exec/protocol.h"
#include "exec/sandbox.h"
#include "exec/worker_command.h"
#include "util/error.h"

extern char** environ;

namespace kf {
namespace {

// The parent owns us: when it goes away (even by SIGKILL) we go too, even while a candidate hangs.
void start_parent_watchdog() {
  pid_t parent = ::getppid();
  std::thread([parent] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (::getppid() != parent) _exit(0);
    }
  }).detach();
}

// The environment protection as the worker sees it: the parent passes an allowlist (sandbox_env.cpp); a worker
// started some other way may hold more.
protection environment_protection() {
  int count = 0;
  std::string leaked;
  for (char** e = environ; *e; ++e, ++count) {
    std::string_view kv = *e;
    std::string_view name = kv.substr(0, kv.find('='));
    if (!worker_env_allowed(name) && name != "HOME" && name != "TMPDIR") leaked += (leaked.empty() ? "" : ", ") + std::string(name);
  }
  if (!leaked.empty()) return {"environment", false, "variables outside the allowlist: " + leaked};
  return {"environment", true, fmt::format("{} allowlisted variables; HOME and TMPDIR are the scratch folder", count)};
}

nlohmann::json debug_command(const nlohmann::json& req, worker_context&) {
  const char* enabled = std::getenv("KFORGE_WORKER_TEST");
  if (!enabled || std::string(enabled) != "1") throw user_error("debug commands need KFORGE_WORKER_TEST=1");
  std::string action = req.value("action", "");
  std::fprintf(stderr, "kforge-worker: debug action '%s'\n", action.c_str());
  std::fflush(stderr);
  if (action == "segfault") ::raise(SIGSEGV);
  if (action == "abort") std::abort();
  if (action == "exit") std::exit(req.value("code", 7));
  if (action == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (action == "stdout") {  // a candidate printing to stdout must not corrupt the protocol
    std::printf("stray output on stdout\n");
    std::fflush(stdout);
    return {{"ok", true}};
  }
  if (action == "echo") return {{"ok", true}, {"echo", req.value("payload", nlohmann::json())}};
  throw user_error(fmt::format("unknown debug action '{}'", action));
}

}  // namespace

std::vector<worker_command> core_worker_commands() {
  return {
      {"hello", "protocol handshake",
       [](const nlohmann::json&, worker_context& ctx) -> nlohmann::json {
         return {{"ok", true}, {"protocol", protocol::k_version}, {"device", ctx.device.str()}, {"pid", ::getpid()},
                 {"sandbox", ctx.sandbox}};
       }},
      {"shutdown", "exit after replying",
       [](const nlohmann::json&, worker_context& ctx) -> nlohmann::json {
         ctx.shutdown = true;
         return {{"ok", true}};
       }},
      {"debug", "failure injection for tests (KFORGE_WORKER_TEST=1)", debug_command},
  };
}

int run_worker(int argc, char** argv, const std::vector<worker_command>& table,
               const std::function<void(worker_context&)>& setup) {
  worker_context ctx;
  std::string device = "cpu", scratch, mode_text = "off";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (a.rfind("--device=", 0) == 0) device = a.substr(9);
    else if (a == "--sandbox" && i + 1 < argc) mode_text = argv[++i];
    else if (a == "--scratch" && i + 1 < argc) scratch = argv[++i];
    else {
      std::fprintf(stderr, "usage: kforge-worker --device cpu|cuda:N [--sandbox on|strict|off --scratch DIR]  "
                           "(started by kforge; speaks on stdin/stdout)\n");
      return 2;
    }
  }
  sandbox_mode mode = sandbox_mode::off;
  try {
    ctx.device = parse_device(device);
    mode = parse_sandbox_mode(mode_text, "--sandbox");
    if (mode != sandbox_mode::off && scratch.empty()) throw user_error("--sandbox " + mode_text + " needs --scratch DIR");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforge-worker: %s\n", e.what());
    return 2;
  }
  // The protocol gets private copies of stdin/stdout; fd 1 becomes stderr and fd 0 /dev/null, so whatever a
  // candidate or a library prints or reads cannot corrupt the stream.
  int proto_in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  int proto_out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  ::dup2(2, 1);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::close(devnull);
  }
  // The sandbox's first step binds this thread and every thread started after it: take it before any.
  std::vector<protection> protections;
  std::vector<std::string> writable;
  if (mode != sandbox_mode::off) {
    protections.push_back(environment_protection());
    writable = enter_sandbox_early(scratch, protections);
  }
  start_parent_watchdog();
  if (setup) setup(ctx);
  // The filter comes after the device's set-up (driver and context) and before any request: no candidate
  // library is loaded outside it.
  if (mode != sandbox_mode::off) enter_sandbox_filter(writable, protections);
  ctx.sandbox = protections_to_json(mode, protections);

  for (;;) {
    std::optional<nlohmann::json> request;
    try {
      request = protocol::read_message(proto_in);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kforge-worker: %s\n", e.what());
      return 2;
    }
    if (!request) return 0;  // the parent closed the pipe
    nlohmann::json response;
    std::string cmd = request->value("cmd", "");
    const worker_command* found = nullptr;
    for (auto& c : table)
      if (c.name == cmd) found = &c;
    int version = request->value("protocol", protocol::k_version);
    if (version != protocol::k_version) {
      response = protocol::error_response(
          "bad_request", fmt::format("protocol version {} requested; this worker speaks {}", version, protocol::k_version));
    } else if (!found) {
      std::string names;
      for (auto& c : table) names += (names.empty() ? "" : ", ") + c.name;
      response = protocol::error_response("bad_request", fmt::format("unknown command '{}' (known: {})", cmd, names));
    } else {
      try {
        response = found->run(*request, ctx);
      } catch (const user_error& e) {
        response = protocol::error_response("bad_request", e.what());
      } catch (const std::exception& e) {
        response = protocol::error_response("infra", e.what());
      }
    }
    // A call the sandbox denied: the parent names it in the verdict, and the worker does not serve another
    // candidate after one that tried to leave.
    if (auto denied = take_sandbox_denials(); !denied.empty()) {
      response["sandbox_denied"] = denials_to_json(denied);
      if (response.value("kind", "") != "cuda_poisoned") {
        response["kind"] = "tainted";
        response["error"] = "a candidate tried to leave the sandbox: " + denied.front().detail;
      }
    }
    std::string poisoned = ctx.device_health ? ctx.device_health() : "";
    if (!poisoned.empty() && response.value("kind", "") != "cuda_poisoned") {
      nlohmann::json inner = response;
      response = protocol::error_response("cuda_poisoned", poisoned);
      response["partial"] = inner;
    }
    std::string err;
    if (!protocol::write_message(proto_out, response, &err)) {
      std::fprintf(stderr, "kforge-worker: cannot write a response: %s\n", err.c_str());
      return 2;
    }
    // A poisoned context (or memory a candidate may have written) cannot be trusted for anything, not even
    // LibTorch's teardown: leave at once.
    if (const std::string kind = response.value("kind", ""); kind == "cuda_poisoned" || kind == "tainted") {
      std::fflush(stderr);
      _exit(kind == "tainted" ? k_worker_exit_tainted : k_worker_exit_poisoned);
    }
    if (ctx.shutdown) {
      std::fflush(stderr);
      _exit(0);
    }
  }
}

}  // namespace kf
