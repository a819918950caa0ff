#include "exec/worker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "exec/protocol.h"
#include "util/error.h"
#include "util/file_lock.h"
#include "util/fs.h"
#include "util/subprocess.h"

extern char** environ;

namespace kf {
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::string_view worker_status_name(worker_status s) {
  switch (s) {
    case worker_status::ok: return "ok";
    case worker_status::timeout: return "timeout";
    case worker_status::crashed: return "crashed";
    case worker_status::exited: return "exited";
    case worker_status::cuda_poisoned: return "cuda_poisoned";
    case worker_status::tainted: return "tainted";
    case worker_status::protocol_error: return "protocol_error";
    case worker_status::start_failed: return "start_failed";
  }
  return "?";
}

std::string worker_outcome::describe() const {
  switch (status) {
    case worker_status::ok: return "ok";
    case worker_status::timeout: return fmt::format("timed out after {:.1f} s (worker killed)", seconds);
    case worker_status::crashed: return fmt::format("crashed ({})", signal);
    case worker_status::exited: return fmt::format("exited with code {}", exit_code);
    case worker_status::cuda_poisoned: return fmt::format("CUDA context poisoned: {}", message);
    case worker_status::tainted: return fmt::format("was restarted after a candidate may have corrupted it: {}", message);
    case worker_status::protocol_error: return fmt::format("protocol error: {}", message);
    case worker_status::start_failed: return fmt::format("did not start: {}", message);
  }
  return message;
}

std::string find_worker_binary() {
  if (const char* env = std::getenv("KFORGE_WORKER"); env && *env) {
    if (::access(env, X_OK) == 0) return env;
    throw infra_error(fmt::format("KFORGE_WORKER={} is not an executable file", env));
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = exe.parent_path() / "kforge-worker";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  fs::path built = fs::path(KFORGE_BINARY_DIR) / "kforge-worker";
  if (::access(built.c_str(), X_OK) == 0) return built.string();
  throw infra_error(fmt::format("cannot find kforge-worker beside {} or in {}; set KFORGE_WORKER",
                                exe.parent_path().string(), KFORGE_BINARY_DIR));
}

worker_client::worker_client(worker_options options) : m_options(std::move(options)) {
  // A worker that dies while we write to it must give EPIPE, not kill us.
  ::signal(SIGPIPE, SIG_IGN);
}

worker_client::~worker_client() {
  try {
    stop();
  } catch (...) {
  }
}

void worker_client::close_fds() {
  for (int* fd : {&m_in, &m_out, &m_err})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

void worker_client::kill_group() {
  if (m_pid > 0) {
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);  // also when it left its group
  }
}

void worker_client::remove_scratch() {
  if (m_scratch.empty()) return;
  remove_tree(m_scratch);
  m_scratch.clear();
}

void worker_client::drain_stderr(bool until_eof) {
  if (m_err < 0) return;
  char buf[8192];
  auto give_up = clock_type::now() + std::chrono::seconds(2);
  for (;;) {
    ssize_t n = ::read(m_err, buf, sizeof buf);
    if (n > 0) {
      m_stderr.append(buf, static_cast<size_t>(n));
      if (m_stderr.size() > 2 * m_options.stderr_tail_bytes)
        m_stderr.erase(0, m_stderr.size() - m_options.stderr_tail_bytes);
      continue;
    }
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || !until_eof || clock_type::now() > give_up) return;
    pollfd p{m_err, POLLIN, 0};
    ::poll(&p, 1, 50);
  }
}

// Waits for the worker to end (killing it first when asked, or when it does not end by itself soon) and fills
// in how it ended, unless `o` already says (timeout, protocol error).
worker_outcome worker_client::reap(worker_outcome o, bool kill_first) {
  if (kill_first) kill_group();
  int status = 0;
  auto grace = clock_type::now() + std::chrono::seconds(5);
  for (;;) {
    pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid) break;
    if (r < 0 && errno != EINTR) break;
    if (clock_type::now() > grace) {
      kill_group();
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill_group();  // helpers the worker left in its group
  drain_stderr(true);
  if (o.status == worker_status::ok) {
    if (WIFSIGNALED(status)) {
      o.status = worker_status::crashed;
      o.signal = signal_name(WTERMSIG(status));
      o.message = "killed by " + o.signal;
    } else {
      o.status = worker_status::exited;
      o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      o.message = fmt::format("exited with code {}", o.exit_code);
    }
  }
  m_pid = -1;
  close_fds();
  remove_scratch();
  o.stderr_tail = m_stderr.size() > m_options.stderr_tail_bytes
                      ? m_stderr.substr(m_stderr.size() - m_options.stderr_tail_bytes)
                      : m_stderr;
  return o;
}

worker_outcome worker_client::start() {
  std::string program = m_options.program.empty() ? find_worker_binary() : m_options.program;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC))
    throw infra_error(fmt::format("pipe: {}", std::strerror(errno)));
  // The worker's own folder for whatever it writes (the sandbox allows writes nowhere else).
  remove_scratch();
  m_scratch = make_private_dir("kforge-worker");
  const bool sandboxed = m_options.sandbox != sandbox_mode::off;
  std::map<std::string, std::string> set = m_options.env_set;  // the caller's settings win
  if (sandboxed) set.insert({{"HOME", m_scratch}, {"TMPDIR", m_scratch}, {"CUDA_CACHE_PATH", m_scratch + "/cuda-cache"}});
  std::vector<std::string> env_strings = worker_environment(environ, set, sandboxed);
  std::vector<std::string> argv_strings = {program, "--device", m_options.device.str(), "--sandbox",
                                           std::string(sandbox_mode_name(m_options.sandbox)), "--scratch", m_scratch};
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw infra_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  m_pid = pid;
  m_in = in_pipe[1];
  m_out = out_pipe[0];
  m_err = err_pipe[0];
  for (int fd : {m_in, m_out, m_err}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  m_stderr.clear();
  ++m_starts;

  worker_outcome o = exchange({{"cmd", "hello"}, {"protocol", protocol::k_version}}, m_options.start_timeout);
  if (!o.ok() || !o.response.value("ok", false) || o.response.value("protocol", -1) != protocol::k_version) {
    std::string why = o.ok() ? fmt::format("hello answered {}", o.response.dump()) : o.describe();
    if (running()) o = reap(o, true);
    o.status = worker_status::start_failed;
    o.message = fmt::format("{} --device {}: {}", program, m_options.device.str(), why);
    return o;
  }
  m_hello = o.response;
  if (m_options.sandbox == sandbox_mode::strict) {
    if (auto missing = inactive_protections(o.response.value("sandbox", nlohmann::json())); !missing.empty()) {
      std::string list;
      for (auto& m : missing) list += (list.empty() ? "" : "; ") + m;
      o = reap(o, true);
      o.status = worker_status::start_failed;
      o.message = fmt::format("--sandbox strict: the worker on {} lacks protections: {}", m_options.device.str(), list);
    }
  }
  return o;
}

worker_outcome worker_client::exchange(const nlohmann::json& request, std::chrono::milliseconds timeout) {
  auto t0 = clock_type::now();
  auto deadline = t0 + timeout;
  auto elapsed = [&] { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
  std::string bytes = protocol::encode(request);
  size_t written = 0;
  protocol::frame_decoder decoder;
  worker_outcome o;
  for (;;) {
    auto now = clock_type::now();
    if (now >= deadline) {
      o.status = worker_status::timeout;
      o.message = fmt::format("no response to '{}' within {:.1f} s", request.value("cmd", "?"), elapsed());
      o.seconds = elapsed();
      return reap(o, true);
    }
    pollfd fds[3] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}, {written < bytes.size() ? m_in : -1, POLLOUT, 0}};
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    int r = ::poll(fds, 3, std::clamp(wait_ms, 1, 1000));
    if (r < 0 && errno != EINTR) throw infra_error(fmt::format("poll: {}", std::strerror(errno)));
    if (fds[1].revents) drain_stderr(false);
    if (fds[2].revents) {
      ssize_t n = ::write(m_in, bytes.data() + written, bytes.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) {  // EPIPE: it died; learn how from waitpid
        o.seconds = elapsed();
        return reap(o, false);
      }
    }
    if (fds[0].revents) {
      char buf[65536];
      ssize_t n = ::read(m_out, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {  // stdout closed: the worker is gone
        o.seconds = elapsed();
        return reap(o, false);
      }
      if (n > 0) decoder.feed(std::string_view(buf, static_cast<size_t>(n)));
      if (auto msg = decoder.next()) {
        drain_stderr(false);
        o.seconds = elapsed();
        o.response = std::move(*msg);
        o.stderr_tail = m_stderr.substr(m_stderr.size() > m_options.stderr_tail_bytes
                                            ? m_stderr.size() - m_options.stderr_tail_bytes : 0);
        const std::string kind = o.response.value("kind", "");
        if (kind == "cuda_poisoned" || kind == "tainted") {  // it exits by itself; make sure
          o.status = kind == "tainted" ? worker_status::tainted : worker_status::cuda_poisoned;
          o.message = o.response.value("error", kind == "tainted" ? "worker state unreliable" : "CUDA context unusable");
          return reap(o, false);
        }
        return o;
      }
      if (decoder.failed()) {
        o.status = worker_status::protocol_error;
        o.message = decoder.error();
        o.seconds = elapsed();
        return reap(o, true);
      }
    }
  }
}

worker_outcome worker_client::request(nlohmann::json request, std::chrono::milliseconds timeout) {
  if (!running()) {
    worker_outcome started = start();
    if (!started.ok()) return started;
  }
  request["protocol"] = protocol::k_version;
  // Kernels run only while this GPU's timing lock is held (exec/device.h): another process's timings, or its
  // exporter's benchmarks, are not disturbed by ours, nor ours by theirs.
  const std::string cmd = request.value("cmd", "");
  std::optional<file_lock> gpu;
  if (cmd == "measure" || cmd == "verify") {
    const auto path = m_options.timing_lock ? *m_options.timing_lock : gpu_timing_lock(m_options.device);
    try {
      if (!path.empty()) gpu.emplace(path);
    } catch (const infra_error&) {
      // A lock folder that cannot be written leaves the timings unserialized, as they were before the lock.
    }
  }
  return exchange(request, timeout);
}

void worker_client::stop() {
  if (!running()) return;
  worker_outcome o = exchange({{"cmd", "shutdown"}, {"protocol", protocol::k_version}}, std::chrono::seconds(10));
  if (running()) reap(o, false);  // it exits after replying; reap kills it if it does not within the grace
}

worker_client& worker_pool::get(const device_id& device) {
  std::lock_guard lock(m_mutex);
  auto& slot = m_workers[device.str()];
  if (!slot) {
    worker_options o = m_defaults;
    o.device = device;
    slot = std::make_unique<worker_client>(o);
  }
  return *slot;
}

}  // namespace kf
