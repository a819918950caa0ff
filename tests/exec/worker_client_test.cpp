// The parent's handling of a real kforge-worker subprocess: every way it can fail becomes an outcome, and the
// next request gets a fresh worker.
#include <signal.h>

#include <future>
#include <memory>

#include <gtest/gtest.h>

#include "exec/worker_client.h"
#include "util/file_lock.h"
#include "util/fs.h"

using namespace kf;
using namespace std::chrono_literals;

namespace {

worker_options cpu_worker() {
  worker_options o;
  o.device = {device_kind::cpu, 0};
  o.env_set["KFORGE_WORKER_TEST"] = "1";
  return o;
}

nlohmann::json debug(const std::string& action) { return {{"cmd", "debug"}, {"action", action}}; }

}  // namespace

TEST(worker_client, hello_and_env) {
  worker_client w(cpu_worker());
  auto o = w.request({{"cmd", "env"}}, 60s);
  ASSERT_TRUE(o.ok()) << o.describe() << "\n" << o.stderr_tail;
  EXPECT_TRUE(o.response["ok"].get<bool>());
  EXPECT_EQ(o.response["env"]["device"], "cpu");
  EXPECT_EQ(o.response["env"]["gpu_key"], cpu_key());
  EXPECT_FALSE(o.response["env"]["torch"].get<std::string>().empty());
  EXPECT_EQ(w.hello()["device"], "cpu");
  EXPECT_EQ(w.starts(), 1);
}

TEST(worker_client, each_failure_is_classified_and_the_next_request_gets_a_fresh_worker) {
  worker_client w(cpu_worker());
  struct expect_t {
    std::string action;
    worker_status status;
  };
  for (auto& e : std::vector<expect_t>{{"segfault", worker_status::crashed},
                                       {"abort", worker_status::crashed},
                                       {"exit", worker_status::exited},
                                       {"hang", worker_status::timeout}}) {
    auto o = w.request(debug(e.action), 3s);
    EXPECT_EQ(o.status, e.status) << e.action << ": " << o.describe();
    EXPECT_FALSE(w.running());
    EXPECT_NE(o.stderr_tail.find("debug action '" + e.action + "'"), std::string::npos) << o.stderr_tail;
    auto next = w.request({{"cmd", "debug"}, {"action", "echo"}, {"payload", e.action}}, 60s);
    ASSERT_TRUE(next.ok()) << next.describe();
    EXPECT_EQ(next.response["echo"], e.action);
  }
  EXPECT_EQ(w.starts(), 5);
}

TEST(worker_client, crash_names_the_signal_and_exit_the_code) {
  worker_client w(cpu_worker());
  auto segv = w.request(debug("segfault"), 60s);
  EXPECT_EQ(segv.signal, "SIGSEGV");
  EXPECT_NE(segv.describe().find("SIGSEGV"), std::string::npos);
  auto ex = w.request({{"cmd", "debug"}, {"action", "exit"}, {"code", 42}}, 60s);
  EXPECT_EQ(ex.status, worker_status::exited);
  EXPECT_EQ(ex.exit_code, 42);
}

TEST(worker_client, stray_stdout_does_not_corrupt_the_protocol) {
  worker_client w(cpu_worker());
  auto o = w.request(debug("stdout"), 60s);
  ASSERT_TRUE(o.ok()) << o.describe();
  auto again = w.request({{"cmd", "debug"}, {"action", "echo"}, {"payload", 5}}, 60s);
  ASSERT_TRUE(again.ok()) << again.describe();
  EXPECT_EQ(again.response["echo"], 5);
  EXPECT_EQ(w.starts(), 1);
}

TEST(worker_client, unknown_command_is_a_bad_request) {
  worker_client w(cpu_worker());
  auto o = w.request({{"cmd", "frobnicate"}}, 60s);
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o.response["ok"].get<bool>());
  EXPECT_EQ(o.response["kind"], "bad_request");
  EXPECT_NE(o.response["error"].get<std::string>().find("frobnicate"), std::string::npos);
}

TEST(worker_client, killed_from_outside_is_a_crash_not_a_hang) {
  worker_client w(cpu_worker());
  ASSERT_TRUE(w.request(debug("echo"), 60s).ok());
  pid_t pid = w.pid();
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  auto o = w.request(debug("echo"), 30s);
  EXPECT_EQ(o.status, worker_status::crashed) << o.describe();
  EXPECT_EQ(o.signal, "SIGKILL");
}

TEST(worker_client, missing_program_fails_to_start) {
  auto opt = cpu_worker();
  opt.program = "/bin/false";
  worker_client w(opt);
  auto o = w.request(debug("echo"), 10s);
  EXPECT_EQ(o.status, worker_status::start_failed);
  EXPECT_NE(o.message.find("/bin/false"), std::string::npos);
}

TEST(worker_client, pool_gives_one_worker_per_device) {
  worker_pool pool(cpu_worker());
  auto& a = pool.get({device_kind::cpu, 0});
  auto& b = pool.get({device_kind::cpu, 0});
  EXPECT_EQ(&a, &b);
  auto o = a.request(debug("echo"), 60s);
  EXPECT_TRUE(o.ok()) << o.describe();
}

// Requests that run kernels wait for the device's timing lock (exec/device.h): here a cpu worker given a lock
// file, held by the test the way another process's timing or export would hold a GPU's.
TEST(worker_client, measure_and_verify_wait_for_the_timing_lock) {
  temp_dir d;
  worker_options o = cpu_worker();
  o.timing_lock = d.path() / "gpu.lock";
  worker_client w(o);
  ASSERT_TRUE(w.request({{"cmd", "env"}}, 60s).ok());  // started; env runs no kernel and takes no lock
  for (const char* cmd : {"measure", "verify"}) {
    auto held = std::make_unique<file_lock>(*o.timing_lock);
    auto reply = std::async(std::launch::async, [&] { return w.request({{"cmd", cmd}}, 60s); });
    EXPECT_EQ(reply.wait_for(2s), std::future_status::timeout) << cmd << " ran while the lock was held elsewhere";
    held.reset();
    auto r = reply.get();  // a request without its fields: the worker's error, once the lock was free
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.describe();
    EXPECT_FALSE(r.response.value("ok", true)) << cmd;
    EXPECT_TRUE(file_lock(*o.timing_lock, file_lock::wait::no).held()) << cmd << ": the lock was kept";
  }
}
