// The sandbox around candidate code (docs/sandbox.md), end to end with real workers and the real `kforge check`:
// the worker's environment holds no secret, it reports its protections, and every kernel of the escape corpus
// (tests/data/kernels/escape/) fails its check with the rule that names what it tried while nothing escapes: no
// file outside the scratch folder, no byte at a loopback listener, no process left, the parent alive.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/device.h"
#include "exec/sandbox.h"
#include "exec/worker_client.h"
#include "util/fs.h"
#include "util/subprocess.h"
#include "verify/static_scan.h"

using namespace kf;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const fs::path k_data = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data";
const std::map<std::string, std::string> k_secrets = {
    {"SECRET_API_KEY", "kf-test-secret-api-key-4711"}, {"SECRET_CI_TOKEN", "kf-test-secret-ci-token-0815"},
    {"GITHUB_TOKEN", "kf-test-github-token-1234"}};

// A TCP listener on 127.0.0.1 that counts what reaches it.
class listener {
 public:
  listener() {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(m_fd, 16) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot listen on loopback");
    m_port = ntohs(a.sin_port);
    m_thread = std::thread([this] {
      while (!m_stop) {
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int c = ::accept(m_fd, nullptr, nullptr);
        if (c < 0) continue;
        ++m_connections;
        char buf[4096];
        for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;) m_bytes += n;
        ::close(c);
      }
    });
  }
  ~listener() {
    m_stop = true;
    m_thread.join();
    ::close(m_fd);
  }
  int port() const { return m_port; }
  int connections() const { return m_connections; }
  long bytes() const { return m_bytes; }

 private:
  int m_fd = -1, m_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_connections{0};
  std::atomic<long> m_bytes{0};
  std::thread m_thread;
};

struct escape {
  std::string name, rule, what;
};

std::vector<escape> corpus() {
  std::ifstream in(k_data / "kernels" / "escape" / "expected.tsv");
  std::vector<escape> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    escape e;
    std::getline(f, e.name, '\t');
    std::getline(f, e.rule, '\t');
    std::getline(f, e.what);
    out.push_back(e);
  }
  return out;
}

// Processes whose command line mentions `marker` (a shell an escape started would).
std::vector<std::string> processes_mentioning(const std::string& marker) {
  std::vector<std::string> found;
  for (auto& d : fs::directory_iterator("/proc")) {
    std::ifstream in(d.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) != std::string::npos && d.path().filename() != std::to_string(::getpid()))
      found.push_back(d.path().filename().string() + ": " + cmd);
  }
  return found;
}

// A writable folder whose real path is not under /tmp: the build tree, else $HOME, else /var/tmp.
fs::path outside_tmp() {
  std::vector<fs::path> places = {fs::path(KFORGE_BINARY_DIR)};
  if (const char* home = std::getenv("HOME")) places.emplace_back(home);
  places.emplace_back("/var/tmp");
  for (auto& p : places) {
    std::error_code ec;
    fs::path real = fs::canonical(p, ec);
    if (!ec && !real.string().starts_with("/tmp/") && ::access(real.c_str(), W_OK) == 0) return real;
  }
  throw std::runtime_error("no writable folder outside /tmp for the escape corpus");
}

// `kforge check` of `kernel` on softmax-small's gated case, as a user runs it.
std::vector<std::string> check_argv(const fs::path& kernel, const std::string& device, std::vector<std::string> extra) {
  std::vector<std::string> argv = {(fs::path(KFORGE_BINARY_DIR) / "kforge").string(), "check", "--workload",
                                   (k_data / "specs" / "softmax-small.yaml").string(), "--kernel", kernel.string(),
                                   "--device", device, "--case", "R=64,C=128", "--no-adversarial",
                                   "--cache", (fs::path(KFORGE_BINARY_DIR) / "test-cache").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

nlohmann::json hello_sandbox(device_kind kind) {
  worker_options o;
  o.device = {kind, 0};
  worker_client w(o);
  worker_outcome r = w.request({{"cmd", "hello"}}, 120s);
  EXPECT_TRUE(r.ok()) << r.describe() << r.stderr_tail;
  return w.hello().value("sandbox", nlohmann::json::object());
}

bool active(const nlohmann::json& sandbox, const std::string& name) {
  for (auto& p : sandbox.value("protections", nlohmann::json::array()))
    if (p.value("name", "") == name) return p.value("active", false);
  return false;
}

// Runs every kernel of the corpus for `device` through `kforge check` twice (with the static scan, then without:
// the sandbox alone), with secrets in kforge's environment and a listener waiting.
void run_corpus(device_kind device) {
  const std::string dir = device == device_kind::cuda ? "cuda" : "cpu";
  const std::string ext = device == device_kind::cuda ? ".cu" : ".cpp";
  const nlohmann::json sandbox = hello_sandbox(device);
  temp_dir work("kf-escape");
  // Outside every worker's scratch folder and outside /tmp (the worker's /tmp is its own: writes there are
  // allowed and stay in its memory, checked below); the build tree may itself be under /tmp (a CI clone).
  const fs::path drop = outside_tmp() / fmt::format("kf-escape-drop-{}", ::getpid());
  fs::create_directories(drop);
  struct remove_drop {
    fs::path p;
    ~remove_drop() { remove_tree(p.string()); }
  } cleanup{drop};
  listener l;
  const auto escapes = corpus();
  ASSERT_GE(escapes.size(), 17u);
  for (const auto& e : escapes) {
    SCOPED_TRACE(dir + "/" + e.name + ": " + e.what);
    std::string source = fmt::format("#define KF_ESCAPE_DIR \"{}\"\n#define KF_ESCAPE_PORT {}\n", drop.string(), l.port()) +
                         read_file(k_data / "kernels" / "escape" / dir / (e.name + ext));
    const fs::path kernel = work.path() / (e.name + ext);
    write_file_atomic(kernel, source);
    for (bool scan : {true, false}) {
      SCOPED_TRACE(scan ? "with the static scan" : "without the static scan");
      std::vector<std::string> argv =
          check_argv(kernel, device == device_kind::cuda ? "cuda:0" : "cpu", {"--json", "--timeout", "60"});
      if (!scan) argv.push_back("--no-static-scan");
      process_options po;
      po.timeout = 300s;
      po.env_set = k_secrets;
      po.env_set["KFORGE_SANDBOX"] = "on";
      process_result r = run_process(argv, po);
      ASSERT_TRUE(r.started);
      ASSERT_EQ(r.signal, 0) << "kforge itself was killed: the kernel reached its parent\n" << r.err;
      ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
      nlohmann::json report = nlohmann::json::parse(r.out);
      std::map<std::string, std::string> status;  // worst status per rule
      std::string failures;
      for (auto& c : report["verdict"]["checks"]) {
        std::string rule = c.value("rule", ""), st = c.value("status", "");
        if (st == "failed") failures += rule + ": " + c.value("detail", "") + "\n";
        if (status[rule] != "failed") status[rule] = st;
      }
      if (scan) {
        bool static_failed = false;
        for (auto& [rule, st] : status) static_failed |= rule.rfind("static.", 0) == 0 && st == "failed";
        EXPECT_TRUE(static_failed) << failures;
        EXPECT_EQ(status["compiles"], "skipped") << "a candidate that fails the static scan is not compiled\n" << failures;
        EXPECT_FALSE(status.count("match")) << "a candidate that fails the static scan is not run\n" << failures;
      } else {
        EXPECT_EQ(status["compiles"], "passed") << failures;
        EXPECT_EQ(status[e.rule], "failed") << "expected " << e.rule << "\n" << failures;
        // The environment held no secret to find (the env kernels spoil their outputs when they find one).
        if (e.name.rfind("env_", 0) != 0 || active(sandbox, "landlock"))
          EXPECT_EQ(status["match"], "passed") << failures;
      }
      std::vector<std::string> dropped;
      for (auto& f : fs::directory_iterator(drop)) dropped.push_back(f.path().filename().string());
      EXPECT_TRUE(dropped.empty()) << "files escaped: " << fmt::format("{}", fmt::join(dropped, ", "));
      EXPECT_EQ(l.connections(), 0) << "the loopback listener was reached";
      EXPECT_EQ(l.bytes(), 0);
      auto left = processes_mentioning(drop.string());
      EXPECT_TRUE(left.empty()) << "processes left: " << fmt::format("{}", fmt::join(left, "; "));
      for (auto& [k, v] : k_secrets) EXPECT_EQ(r.out.find(v), std::string::npos) << "a secret reached the report";
    }
  }
}

}  // namespace

TEST(sandbox, the_worker_environment_is_an_allowlist_without_secrets) {
  EXPECT_TRUE(worker_env_allowed("PATH"));
  EXPECT_TRUE(worker_env_allowed("LD_LIBRARY_PATH"));
  EXPECT_TRUE(worker_env_allowed("CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(worker_env_allowed("OMP_NUM_THREADS"));
  EXPECT_TRUE(worker_env_allowed("KFORGE_INPUT_CACHE_MB"));
  for (auto name : {"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KFORGE_LLM_KEY", "AWS_SECRET_ACCESS_KEY",
                    "CUDA_TOKEN", "NPM_CONFIG_AUTHTOKEN", "ACTIONS_RUNTIME_TOKEN", "HOME", "SSH_AUTH_SOCK", "PWD",
                    "ACTIONS_ID_TOKEN_REQUEST_URL", "SECRET"})
    EXPECT_FALSE(worker_env_allowed(name)) << name;
  std::string a = "PATH=/bin", b = "GITHUB_TOKEN=x", c = "CUDA_VISIBLE_DEVICES=1", d = "HOME=/root";
  char* parent[] = {a.data(), b.data(), c.data(), d.data(), nullptr};
  auto env = worker_environment(parent, {{"HOME", "/scratch"}, {"TMPDIR", "/scratch"}});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "CUDA_VISIBLE_DEVICES=1", "HOME=/scratch", "TMPDIR=/scratch"}));
}

TEST(sandbox, a_worker_sees_no_secret_of_its_parent) {
  for (auto& [k, v] : k_secrets) ::setenv(k.c_str(), v.c_str(), 1);
  worker_options o;
  o.device = {device_kind::cpu, 0};
  worker_client w(o);
  ASSERT_TRUE(w.request({{"cmd", "hello"}}, 120s).ok());
  std::ifstream in(fmt::format("/proc/{}/environ", w.pid()), std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& [k, v] : k_secrets) {
    EXPECT_EQ(env.find(k), std::string::npos) << k;
    EXPECT_EQ(env.find(v), std::string::npos) << k;
    ::unsetenv(k.c_str());
  }
  EXPECT_NE(env.find("PATH="), std::string::npos);
  EXPECT_NE(env.find("HOME=/"), std::string::npos);
}

TEST(sandbox, the_worker_reports_its_protections_and_strict_refuses_without_them) {
  nlohmann::json s = hello_sandbox(device_kind::cpu);
  ASSERT_EQ(s.value("mode", ""), "on") << s.dump();
  for (auto name : {"environment", "network_namespace", "private_tmp", "landlock", "seccomp"}) {
    bool listed = false;
    for (auto& p : s["protections"]) listed |= p.value("name", "") == name;
    EXPECT_TRUE(listed) << name << " not reported: " << s.dump();
  }
  // libseccomp is a build dependency and the environment is ours: these two hold on every Linux machine.
  EXPECT_TRUE(active(s, "seccomp")) << s.dump(2);
  EXPECT_TRUE(active(s, "environment")) << s.dump(2);
  for (auto& p : s["protections"]) std::printf("  %s: %s\n", p.value("name", "").c_str(), p.value("detail", "").c_str());

  nlohmann::json missing = {{"mode", "strict"},
                            {"protections", {{{"name", "seccomp"}, {"active", true}, {"detail", "x"}},
                                             {{"name", "landlock"}, {"active", false}, {"detail", "no Landlock"}}}}};
  EXPECT_EQ(inactive_protections(missing), std::vector<std::string>{"landlock (no Landlock)"});
  bool all = inactive_protections(s).empty();
  worker_options o;
  o.device = {device_kind::cpu, 0};
  o.sandbox = sandbox_mode::strict;
  worker_client w(o);
  worker_outcome r = w.request({{"cmd", "hello"}}, 120s);
  if (all) EXPECT_TRUE(r.ok()) << r.describe();
  else EXPECT_EQ(r.status, worker_status::start_failed) << r.describe();
  // One protection left out: strict refuses, naming it.
  o.env_set["KFORGE_SANDBOX_SKIP"] = "landlock";
  worker_client skipped(o);
  worker_outcome refused = skipped.request({{"cmd", "hello"}}, 120s);
  EXPECT_EQ(refused.status, worker_status::start_failed) << refused.describe();
  EXPECT_NE(refused.message.find("landlock"), std::string::npos) << refused.message;
}

TEST(sandbox, off_runs_the_worker_without_protections) {
  worker_options o;
  o.device = {device_kind::cpu, 0};
  o.sandbox = sandbox_mode::off;
  worker_client w(o);
  ASSERT_TRUE(w.request({{"cmd", "hello"}}, 120s).ok());
  EXPECT_EQ(w.hello()["sandbox"].value("mode", ""), "off");
  EXPECT_TRUE(w.hello()["sandbox"]["protections"].empty());
}

TEST(sandbox, the_static_scan_names_each_escape_of_the_corpus) {
  for (auto& e : corpus())
    for (auto [dir, ext, kind] : {std::tuple{"cpu", ".cpp", device_kind::cpu}, std::tuple{"cuda", ".cu", device_kind::cuda}}) {
      SCOPED_TRACE(std::string(dir) + "/" + e.name);
      auto findings = static_scan(read_file(k_data / "kernels" / "escape" / dir / (e.name + ext)), {kind, {}});
      EXPECT_FALSE(findings.empty());
    }
}

TEST(sandbox, cpu_escapes_fail_their_rule_and_nothing_escapes) { run_corpus(device_kind::cpu); }

// The worker's /tmp is an overlay whose writes stay in the worker (libraries such as the AOTInductor loader
// write there): a kernel that writes a file in /tmp runs, and the file never reaches the real /tmp.
TEST(sandbox, writes_to_tmp_stay_in_the_workers_private_tmp) {
  nlohmann::json s = hello_sandbox(device_kind::cpu);
  if (!active(s, "private_tmp")) GTEST_SKIP() << "no private /tmp here: " << s.dump();
  temp_dir work("kf-private-tmp");
  const std::string name = fmt::format("kf-private-tmp-probe-{}", ::getpid());
  const fs::path kernel = work.path() / "file_write.cpp";
  write_file_atomic(kernel, "#define KF_ESCAPE_DIR \"/tmp/" + name + "\"\n" +
                                read_file(k_data / "kernels" / "escape" / "cpu" / "file_write.cpp"));
  fs::create_directories(fs::path("/tmp") / name);  // the parent's folder: the worker sees it, and writes over it
  process_result r = run_process(check_argv(kernel, "cpu", {"--no-static-scan"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(fs::path("/tmp") / name / "file_write.txt")) << "the write reached the real /tmp";
  remove_tree((fs::path("/tmp") / name).string());
}

TEST(sandbox, cuda_escapes_fail_their_rule_and_nothing_escapes) {
  gpu_probe p = probe_gpus();
  if (p.smi_gpus == 0 && !p.device_node) GTEST_SKIP() << "no GPU: the cuda escape corpus runs on the GPU machine";
  run_corpus(device_kind::cuda);
}
