// `kforge run --devices`: the workloads spread over several fake devices (one thread each) come back as one
// device's run would give them; a device that fails is taken out and its workload goes to another. Assertions are
// on decisions (which workload, which device, what was reported), never on durations.
#include <condition_variable>
#include <mutex>
#include <set>

#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/report_fixture.h"
#include "pipeline/device_list.h"
#include "pipeline/runner.h"
#include "report/reporter.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {

using ::testing::HasSubstr;

// Makes the first workload of each of `n` devices wait until all of them hold one, so that every device takes
// part (otherwise one fast thread may take the whole queue). The wait has a generous cap so that a bug fails the
// assertions instead of hanging the test.
class start_together {
 public:
  explicit start_together(int n) : m_left(n) {}
  void arrive() {
    std::unique_lock lock(m_mutex);
    if (--m_left <= 0) m_all.notify_all();
    m_all.wait_for(lock, std::chrono::seconds(60), [&] { return m_left <= 0; });
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_all;
  int m_left;
};

class fake_device : public run_backend {
 public:
  std::string gpu = "NVIDIA H200", arch = "sm_90";
  bool cannot_start = false;
  // How it fails: `dies_on` a workload (every workload when `dies_always`), in check (throws, as a worker that
  // cannot start) or, with `dies_in_measure`, while timing (the worker crashes, and no new one starts).
  std::set<std::string> dies_on;
  bool dies_always = false, dies_in_measure = false;
  start_together* together = nullptr;
  std::vector<std::string> ran;  // workloads it started, in order

  std::string device_kind_name() const override { return "cuda"; }
  nlohmann::json env() override {
    if (cannot_start) throw infra_error("kforge-worker could not start: no CUDA device 7");
    return {{"device", "cuda:0"}, {"gpu_name", gpu}, {"arch", arch}, {"sm_count", 132}, {"sm_clock_mhz", 1980}};
  }
  candidate_check check(const workload_spec& spec, const std::string&, const std::string&) override {
    ran.push_back(spec.name);
    m_current = spec.name;
    if (together && ran.size() == 1) together->arrive();
    if (m_dead) throw infra_error("kforge-worker could not start");
    if (!dies_in_measure && dies_here()) {
      m_dead = true;
      throw infra_error("kforge-worker lost its device: CUDA error: unspecified launch failure");
    }
    candidate_check c;
    c.verify.verdict = "passed";
    for (auto& cs : spec.cases) c.verify.checks.push_back({"match", cs.name, 1, true, "ok", {}});
    c.so_path = "/tmp/kernel-" + spec.name + ".so";
    return c;
  }
  compile_result compile(const std::string&, const std::string&) override { return {}; }
  worker_outcome measure(const nlohmann::json& request, std::chrono::milliseconds) override {
    if (m_dead || (dies_in_measure && dies_here())) {
      worker_outcome dead;
      dead.status = m_dead ? worker_status::start_failed : worker_status::crashed;
      dead.signal = "SIGKILL";
      dead.message = "no worker";
      m_dead = true;
      return dead;
    }
    nlohmann::json results = nlohmann::json::array();
    for (auto& c : request["cases"])
      for (auto& impl : request["impls"]) {
        std::string name = impl.value("name", impl.value("kind", ""));
        double t = name == "kernel" ? 50 : name == "eager" ? 200 : 75;
        results.push_back(
            {{"impl", name},
             {"case", c},
             {"available", true},
             {"cold", {{"samples_us", fixture::samples(t, 20, 0.01, results.size() + 1)}, {"discarded", 0}}}});
      }
    worker_outcome o;
    o.response = {{"ok", true}, {"results", results}, {"env", {{"sm_clock_mhz", 1980}}}};
    return o;
  }
  nlohmann::json baseline_impl(const std::string& name, const workload_spec&, const std::vector<std::string>&,
                               const std::string&) override {
    return {{"kind", name}};
  }
  std::string compiler_identity() override { return "nvcc fake"; }
  std::string probe() override { return m_dead ? "kforge-worker cannot start: CUDA error: device lost" : ""; }

 private:
  bool dies_here() const { return dies_always || dies_on.count(m_current); }
  std::string m_current;
  bool m_dead = false;
};

class run_devices : public ::testing::Test {
 protected:
  temp_dir dir{"kforge-devices"};
  workload_spec spec(const std::string& name, bool with_kernel = true) {
    workload_spec s;
    s.name = name;
    s.path = (dir.path() / "workloads" / (name + ".yaml")).string();
    case_spec c;
    c.name = "S=1024";
    c.gate = true;
    s.cases = {c};
    s.baselines = {"eager"};
    s.gate.must_beat = {"eager"};
    if (with_kernel) write_file_atomic(dir.path() / "workloads" / name / "kernels" / "sm90-nvidia-h200.cu", "// k\n");
    return s;
  }
  std::vector<workload_spec> specs() {
    return {spec("a"), spec("b"), spec("none", false), spec("c"), spec("d"), spec("e")};
  }
  static std::vector<std::string> names(const run_result& r) {
    std::vector<std::string> out;
    for (auto& w : r.workloads) out.push_back(w.name);
    return out;
  }
  // A workload's record without what differs between devices and runs (which device, how long).
  static nlohmann::json content(const workload_result& w) {
    nlohmann::json j = to_json(w);
    j.erase("device");
    j.erase("seconds");
    return j;
  }
};

TEST_F(run_devices, two_workers_give_the_one_device_result_in_content_and_order) {
  auto s = specs();
  fake_device one;
  run_result alone = run_workloads(s, one, nullptr, {});
  ASSERT_EQ(alone.workloads.size(), s.size());
  ASSERT_EQ(alone.env.devices.size(), 1u);
  EXPECT_EQ(alone.env.devices[0].name, "cuda:0");  // from the worker's env
  for (auto& w : alone.workloads) EXPECT_EQ(w.device, "cuda:0");

  start_together together(2);
  fake_device x, y;
  x.together = y.together = &together;
  run_result two = run_workloads(s, {{"cpu#1", &x}, {"cpu#2", &y}}, nullptr, {});
  EXPECT_EQ(names(two), names(alone));
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(content(two.workloads[i]), content(alone.workloads[i])) << s[i].name;
    EXPECT_THAT(two.workloads[i].device, ::testing::AnyOf("cpu#1", "cpu#2"));
  }
  EXPECT_EQ(two.exit_code(), alone.exit_code());
  EXPECT_TRUE(two.complete);
  // Each workload ran once, on the device its record names; both devices took part.
  std::multiset<std::string> ran(x.ran.begin(), x.ran.end());
  ran.insert(y.ran.begin(), y.ran.end());
  EXPECT_EQ(ran, (std::multiset<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_FALSE(x.ran.empty());
  EXPECT_FALSE(y.ran.empty());
  for (auto& w : two.workloads)
    if (w.name != "none") {
      const auto& mine = w.device == "cpu#1" ? x.ran : y.ran;
      EXPECT_NE(std::find(mine.begin(), mine.end(), w.name), mine.end()) << w.name;
    }
  ASSERT_EQ(two.env.devices.size(), 2u);
  EXPECT_EQ(two.env.devices[0].workloads + two.env.devices[1].workloads, 6);
  EXPECT_EQ(two.env.device, "cpu#1,cpu#2");

  // The reports carry it: each workload's device in the JSON, the devices in the Markdown's environment line.
  run_result back = run_result_from_json(to_json(two));
  ASSERT_EQ(back.env.devices.size(), 2u);
  EXPECT_EQ(back.env.devices[1].name, "cpu#2");
  EXPECT_EQ(back.workloads[0].device, two.workloads[0].device);
  EXPECT_THAT(render_markdown(two), HasSubstr("devices cpu#1 ("));
}

void expect_lost_device_goes_to_the_other(bool in_measure) {
  temp_dir dir("kforge-devices");
  std::vector<workload_spec> s;
  for (std::string name : {"a", "b", "c"}) {
    workload_spec w;
    w.name = name;
    w.path = (dir.path() / "workloads" / (name + ".yaml")).string();
    case_spec c;
    c.name = "S=1";
    c.gate = true;
    w.cases = {c};
    w.baselines = {"eager"};
    write_file_atomic(dir.path() / "workloads" / name / "kernels" / "sm90-nvidia-h200.cu", "// k\n");
    s.push_back(w);
  }
  start_together together(2);
  fake_device bad, good;
  bad.together = good.together = &together;
  bad.dies_always = true;
  bad.dies_in_measure = in_measure;
  std::vector<std::string> lines;
  std::mutex m;
  run_options o;
  o.progress = [&](const std::string& line) {
    std::lock_guard lock(m);
    lines.push_back(line);
  };
  run_result r = run_workloads(s, {{"cuda:0", &bad}, {"cuda:1", &good}}, nullptr, o);
  ASSERT_EQ(bad.ran.size(), 1u);   // it took one workload, lost its device on it, and took no other
  EXPECT_EQ(good.ran.size(), 3u);  // that one again, and the rest
  ASSERT_EQ(r.workloads.size(), 3u);
  for (auto& w : r.workloads) {
    EXPECT_EQ(w.device, "cuda:1") << w.name;
    EXPECT_TRUE(w.error.empty()) << w.error;
  }
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.env.devices.size(), 2u);
  EXPECT_THAT(r.env.devices[0].lost, HasSubstr("device lost"));
  EXPECT_THAT(r.env.devices[0].lost, HasSubstr("(while running " + bad.ran[0] + ")"));
  EXPECT_TRUE(r.env.devices[1].lost.empty());
  EXPECT_EQ(r.env.devices[1].workloads, 3);
  EXPECT_THAT(render_markdown(r), HasSubstr("**Device lost**: `cuda:0` was taken out of the run"));
  EXPECT_THAT(fmt::format("{}", fmt::join(lines, "\n")), HasSubstr("cuda:0: device lost"));
}

TEST_F(run_devices, a_device_that_throws_is_taken_out_and_its_workload_runs_on_the_other) {
  expect_lost_device_goes_to_the_other(false);
}

TEST_F(run_devices, a_worker_that_dies_while_timing_and_cannot_restart_takes_its_device_out) {
  expect_lost_device_goes_to_the_other(true);
}

TEST_F(run_devices, a_workload_that_takes_out_two_devices_is_reported_with_the_reason) {
  fake_device x, y, z;
  for (auto* d : {&x, &y, &z}) d->dies_on = {"b"};
  run_result r =
      run_workloads({spec("a"), spec("b"), spec("c")}, {{"cuda:0", &x}, {"cuda:1", &y}, {"cuda:2", &z}}, nullptr, {});
  ASSERT_EQ(r.workloads.size(), 3u);
  EXPECT_THAT(r.workloads[1].error, HasSubstr("2 devices were lost running it"));
  EXPECT_THAT(r.workloads[1].error, HasSubstr("device lost"));
  EXPECT_TRUE(r.workloads[0].error.empty());
  EXPECT_TRUE(r.workloads[2].error.empty());
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.exit_code(), 2);
  int lost = 0;
  for (auto& d : r.env.devices) lost += !d.lost.empty();
  EXPECT_EQ(lost, 2);
}

TEST_F(run_devices, with_every_device_lost_the_run_is_incomplete) {
  fake_device x, y;
  x.dies_always = y.dies_always = true;
  run_result r = run_workloads({spec("a"), spec("b"), spec("c")}, {{"cuda:0", &x}, {"cuda:1", &y}}, nullptr, {});
  EXPECT_FALSE(r.complete);
  EXPECT_THAT(r.incomplete_reason, HasSubstr("every device was lost (cuda:0: "));
  EXPECT_EQ(r.exit_code(), 2);
  for (auto& w : r.workloads) EXPECT_FALSE(w.error.empty()) << w.name;  // what ran says why it did not finish

  fake_device only;  // one device that breaks: the same, not a run of errors
  only.dies_on = {"b"};
  run_result one = run_workloads({spec("a"), spec("b"), spec("c")}, only, nullptr, {});
  EXPECT_FALSE(one.complete);
  ASSERT_EQ(one.workloads.size(), 2u);
  EXPECT_THAT(one.workloads[1].error, HasSubstr("no device was left to run it again"));
  EXPECT_THAT(one.incomplete_reason, HasSubstr("2 of 3 workloads did not finish"));
}

TEST_F(run_devices, devices_of_different_gpu_keys_are_refused_naming_them) {
  fake_device h200, a100;
  a100.gpu = "NVIDIA A100-SXM4-80GB";
  a100.arch = "sm_80";
  try {
    run_workloads({spec("a")}, {{"cuda:0", &h200}, {"cuda:1", &a100}}, nullptr, {});
    FAIL() << "expected a user_error";
  } catch (const user_error& e) {
    EXPECT_THAT(e.message(), HasSubstr("sm90-nvidia-h200 on cuda:0"));
    EXPECT_THAT(e.message(), HasSubstr("sm80-nvidia-a100-sxm4-80gb on cuda:1"));
    EXPECT_TRUE(h200.ran.empty());
  }
}

TEST_F(run_devices, a_device_that_cannot_start_is_lost_and_with_none_the_run_throws) {
  fake_device ok, broken;
  broken.cannot_start = true;
  run_result r = run_workloads({spec("a"), spec("b")}, {{"cuda:0", &broken}, {"cuda:1", &ok}}, nullptr, {});
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(ok.ran.size(), 2u);
  EXPECT_THAT(r.env.devices[0].lost, HasSubstr("could not start: kforge-worker could not start: no CUDA device 7"));

  fake_device b1, b2;
  b1.cannot_start = b2.cannot_start = true;
  EXPECT_THROW(run_workloads({spec("a")}, {{"cuda:0", &b1}, {"cuda:1", &b2}}, nullptr, {}), infra_error);
}

TEST_F(run_devices, a_stop_request_stops_every_device_after_its_workload) {
  fake_device x, y;
  run_options o;
  int asked = 0;
  o.stop_requested = [&] { return ++asked > 1; };  // asked under the queue's lock: one at a time
  run_result r = run_workloads({spec("a"), spec("b"), spec("c")}, {{"cuda:0", &x}, {"cuda:1", &y}}, nullptr, o);
  EXPECT_EQ(r.workloads.size(), 1u);
  EXPECT_EQ(x.ran.size() + y.ran.size(), 1u);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.incomplete_reason, "interrupted after 1 of 3 workloads");
}

TEST(device_list, all_is_every_gpu_or_the_cpu_saying_so) {
  gpu_probe two;
  two.device_node = true;
  two.smi_gpus = 2;
  device_list d = parse_device_list("all", two);
  EXPECT_EQ(d.names, (std::vector<std::string>{"cuda:0", "cuda:1"}));
  gpu_probe none;
  none.smi_error = "nvidia-smi is not on PATH";
  device_list cpu = parse_device_list("all", none);
  ASSERT_EQ(cpu.ids.size(), 1u);
  EXPECT_EQ(cpu.ids[0].kind, device_kind::cpu);
  EXPECT_THAT(cpu.why, HasSubstr("falling back to cpu"));
}

TEST(device_list, lists_allow_repeats_and_name_them_apart) {
  EXPECT_EQ(parse_device_list("cpu,cpu", {}).names, (std::vector<std::string>{"cpu#1", "cpu#2"}));
  EXPECT_EQ(parse_device_list("cuda:0,cuda:1,cuda:0", {}).names,
            (std::vector<std::string>{"cuda:0#1", "cuda:1", "cuda:0#2"}));
  EXPECT_EQ(parse_device_list("cpu", {}).names, std::vector<std::string>{"cpu"});
  EXPECT_THAT(parse_device_list("cpu,cpu", {}).why, HasSubstr("not for numbers"));
  EXPECT_THAT(parse_device_list("cpu", {}).why, ::testing::Not(HasSubstr("not for numbers")));
}

TEST(device_list, bad_lists_name_the_item) {
  gpu_probe two;
  two.smi_gpus = 2;
  auto message = [&](const char* text) {
    try {
      parse_device_list(text, two);
    } catch (const user_error& e) { return e.message(); }
    return std::string("no error");
  };
  EXPECT_THAT(message(""), HasSubstr("--devices: an empty item"));
  EXPECT_THAT(message("cpu,,cpu"), HasSubstr("an empty item"));
  EXPECT_THAT(message("cpu,tpu"), HasSubstr("unknown device 'tpu'"));
  EXPECT_THAT(message("all,cpu"), HasSubstr("'all' stands alone"));
  EXPECT_THAT(message("auto"), HasSubstr("'auto' stands alone"));
  EXPECT_THAT(message("cuda:0,cuda:2"), HasSubstr("cuda:2: nvidia-smi lists 2 GPUs"));
}

}  // namespace
}  // namespace kf
