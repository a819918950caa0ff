// cpu timing protocol: see cpu_sampler.h.
#include "measure/cpu_sampler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "measure/stats.h"

namespace kf::measure {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "32768K", "36M", "1024" -> bytes; 0 when unreadable.
int64_t parse_cache_size(const std::string& text) {
  std::size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    return 0;
  }
  char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K' || unit == 'k') v <<= 10;
  else if (unit == 'M' || unit == 'm') v <<= 20;
  else if (unit == 'G' || unit == 'g') v <<= 30;
  return v;
}

class cpu_hot_loop : public hot_loop {
 public:
  cpu_hot_loop(launch_fn f, int n) : m_f(std::move(f)), m_n(n) {}
  sample run() override {
    double t0 = now_s();
    for (int i = 0; i < m_n; ++i)
      if (int rc = m_f(nullptr); rc != 0) throw launch_failure(rc);
    return sample{(now_s() - t0) / m_n, true, 0};
  }
  int launches() const override { return m_n; }

 private:
  launch_fn m_f;
  int m_n;
};

}  // namespace

int64_t last_level_cache_bytes(const std::string& sysfs_cache_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int best_level = -1;
  int64_t best = 0;
  for (const auto& e : fs::directory_iterator(sysfs_cache_dir, ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream level_file(e.path() / "level"), size_file(e.path() / "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size)) continue;
    int64_t bytes = parse_cache_size(size);
    if (level > best_level || (level == best_level && bytes > best)) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

cpu_sampler::cpu_sampler() {
  // Twice the last-level cache evicts it under any replacement policy; 64 MiB when sysfs does not say. At most
  // 256 MiB: a VM's sysfs may report the host's whole L3 (300 MiB for 2 vCPUs), and a 600 MiB flush before every
  // cold sample made a cpu run's timing take minutes while a core's share of that cache is a small part of it.
  const int64_t llc = last_level_cache_bytes();
  m_flush.assign(static_cast<std::size_t>(std::min<int64_t>(llc > 0 ? 2 * llc : 64 << 20, int64_t{256} << 20)), 1);
}

void cpu_sampler::flush_caches() {
  // Write every cache line: dirty lines of the buffer push everything else out.
  ++m_round;
  volatile uint8_t* p = m_flush.data();
  for (std::size_t i = 0; i < m_flush.size(); i += 64) p[i] = static_cast<uint8_t>(p[i] + m_round);
}

void cpu_sampler::warmup(const timed_impl& impl) {
  if (int rc = impl.launch(nullptr); rc != 0) throw launch_failure(rc);
}

sample cpu_sampler::cold(const timed_impl& impl) {
  flush_caches();
  double t0 = now_s();
  int rc = impl.launch(nullptr);
  double t = now_s() - t0;
  if (rc != 0) throw launch_failure(rc);
  return sample{t, true, 0};
}

std::unique_ptr<hot_loop> cpu_sampler::make_hot(const timed_impl& impl, double estimate_s, double target_s) {
  int n = static_cast<int>(std::clamp(target_s / std::max(estimate_s, 1e-9), 1.0, 1000.0));
  return std::make_unique<cpu_hot_loop>(impl.launch, n);
}

double cpu_sampler::copy_bandwidth_gbs() {
  const std::size_t bytes = std::max<std::size_t>(m_flush.size(), 64 << 20);
  std::vector<uint8_t> src(bytes, 3), dst(bytes, 0);
  std::vector<double> gbs;
  for (int i = 0; i < 5; ++i) {
    double t0 = now_s();
    std::memcpy(dst.data(), src.data(), bytes);
    double t = now_s() - t0;
    gbs.push_back(2.0 * static_cast<double>(bytes) / t / 1e9);
    src[i] = dst[bytes - 1 - i];  // keep the copies observable
  }
  return stats::median(gbs);
}

launch_fn cpu_sampler::empty_launch() {
  return [](void*) { return 0; };
}

std::string cpu_sampler::clock_check() const { return "not checked on cpu (nothing discarded)"; }

nlohmann::json cpu_sampler::environment() const {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return {{"device", "cpu"},
          {"cpu_model", model},
          {"threads", std::thread::hardware_concurrency()},
          {"llc_bytes", last_level_cache_bytes()},
          {"clock_check", clock_check()}};
}

}  // namespace kf::measure
