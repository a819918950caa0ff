// The parent's side of a kforge-worker: starts `kforge-worker --device D --sandbox MODE --scratch DIR` lazily
// (an allowlisted environment, a fresh scratch folder per worker, removed when it ends), sends one request at a time
// with a timeout, and turns every way a worker can fail (hang, signal, exit, poisoned CUDA context, garbage on
// the pipe) into an outcome. After any failure the worker's process group is killed; the next request starts a
// fresh worker, so a bad candidate costs one worker, never the run.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/device.h"
#include "exec/sandbox.h"

namespace kf {

enum class worker_status {
  ok,             // a response arrived (it may still say ok:false for a candidate or bad request)
  timeout,        // no response within the request's timeout: killed
  crashed,        // the worker died of a signal (SIGSEGV, SIGABRT, ...)
  exited,         // the worker exited (a candidate called exit(), or the worker gave up)
  cuda_poisoned,  // the worker said its CUDA context is unusable (and exited); `response` holds what it said
  tainted,        // the worker said a candidate may have corrupted it (and exited); `response` holds what it said
  protocol_error, // the worker wrote something that is not a protocol frame
  start_failed,   // the worker could not be started or did not answer hello
};
std::string_view worker_status_name(worker_status s);

struct worker_outcome {
  worker_status status = worker_status::ok;
  nlohmann::json response;  // for ok, cuda_poisoned and tainted
  std::string signal;       // crashed: "SIGSEGV"
  int exit_code = 0;        // exited
  std::string message;      // what went wrong, in words
  std::string stderr_tail;  // the last lines the worker wrote to stderr
  double seconds = 0;
  bool ok() const { return status == worker_status::ok; }
  std::string describe() const;  // "crashed (SIGSEGV)", "timed out after 30 s", ...
};

struct worker_options {
  device_id device;
  std::string program;  // empty: find_worker_binary()
  std::chrono::milliseconds start_timeout{std::chrono::seconds(120)};  // includes loading LibTorch and CUDA
  size_t stderr_tail_bytes = 8192;
  std::map<std::string, std::string> env_set;        // set in the worker's environment (the rest is allowlisted)
  sandbox_mode sandbox = default_sandbox_mode();    // docs/sandbox.md; strict: start_failed unless all are active
  // The lock every request that runs kernels (measure, verify) holds while the worker answers it: unset, the
  // device's gpu_timing_lock (none on the cpu); an empty path: none. The request's timeout starts once it is held.
  std::optional<std::filesystem::path> timing_lock;
};

// kforge-worker's path: $KFORGE_WORKER, else beside the running binary (/proc/self/exe), else KFORGE_BINARY_DIR
// (tests run from the build tree). Throws infra_error when none exists.
std::string find_worker_binary();

class worker_client {
 public:
  explicit worker_client(worker_options options);
  ~worker_client();  // asks the worker to shut down, kills it if it does not
  worker_client(const worker_client&) = delete;
  worker_client& operator=(const worker_client&) = delete;

  // Sends `request` (a "protocol" field is added) and waits up to `timeout` for the response. Starts the
  // worker first when none is running (the start has its own timeout).
  worker_outcome request(nlohmann::json request, std::chrono::milliseconds timeout);

  void stop();                         // graceful shutdown, then kill
  bool running() const { return m_pid > 0; }
  pid_t pid() const { return m_pid; }
  int starts() const { return m_starts; }          // how many workers were started (restarts + 1)
  const nlohmann::json& hello() const { return m_hello; }  // the last hello response
  const device_id& device() const { return m_options.device; }

 private:
  worker_outcome start();
  worker_outcome exchange(const nlohmann::json& request, std::chrono::milliseconds timeout);
  worker_outcome reap(worker_outcome o, bool kill_first);
  void drain_stderr(bool blocking_until_eof);
  void kill_group();
  void close_fds();
  void remove_scratch();

  worker_options m_options;
  pid_t m_pid = -1;
  int m_in = -1, m_out = -1, m_err = -1;  // worker's stdin (we write), stdout and stderr (we read)
  std::string m_stderr;                    // rolling tail
  std::string m_scratch;                   // the running worker's scratch folder
  nlohmann::json m_hello;
  int m_starts = 0;
};

// One worker per device, started on first use.
class worker_pool {
 public:
  explicit worker_pool(worker_options defaults = {}) : m_defaults(std::move(defaults)) {}
  worker_client& get(const device_id& device);

 private:
  worker_options m_defaults;
  std::mutex m_mutex;
  std::map<std::string, std::unique_ptr<worker_client>> m_workers;
};

}  // namespace kf
