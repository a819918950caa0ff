#include <cstdlib>

#include <gtest/gtest.h>

#include "exec/device.h"
#include "util/error.h"

using namespace kf;

TEST(device, parses_names) {
  EXPECT_EQ(parse_device("cpu"), (device_id{device_kind::cpu, 0}));
  EXPECT_EQ(parse_device("cuda"), (device_id{device_kind::cuda, 0}));
  EXPECT_EQ(parse_device("cuda:3"), (device_id{device_kind::cuda, 3}));
  EXPECT_EQ(parse_device("cuda:3").str(), "cuda:3");
  EXPECT_EQ(parse_device("cpu").str(), "cpu");
  for (auto bad : {"cuda:", "cuda:x", "tpu", "cuda:-1", ""}) EXPECT_THROW(parse_device(bad), user_error) << bad;
}

TEST(device, bad_name_says_what_is_expected) {
  try {
    parse_device("cdua");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected cpu, cuda, cuda:N or auto"), std::string::npos);
  }
}

TEST(device, auto_picks_cuda_when_a_gpu_is_listed_and_says_why) {
  gpu_probe p;
  p.smi_gpus = 1;
  auto c = choose_device("auto", p);
  EXPECT_EQ(c.id, (device_id{device_kind::cuda, 0}));
  EXPECT_NE(c.why.find("nvidia-smi"), std::string::npos);
  gpu_probe node;
  node.device_node = true;
  EXPECT_EQ(choose_device("auto", node).id.kind, device_kind::cuda);
}

TEST(device, auto_falls_back_to_cpu_and_says_so) {
  gpu_probe p;
  p.smi_error = "nvidia-smi is not on PATH";
  auto c = choose_device("auto", p);
  EXPECT_EQ(c.id.kind, device_kind::cpu);
  EXPECT_NE(c.why.find("falling back to cpu"), std::string::npos);
  EXPECT_NE(c.why.find("nvidia-smi is not on PATH"), std::string::npos);
}

TEST(device, gpu_key_from_env) {
  EXPECT_EQ(gpu_key({{"device", "cuda:0"}, {"arch", "sm_90"}, {"gpu_name", "NVIDIA H200"}}), "sm90-nvidia-h200");
  EXPECT_EQ(gpu_key({{"device", "cuda:1"}, {"arch", "sm_80"}, {"gpu_name", "NVIDIA A100-SXM4-80GB"}}),
            "sm80-nvidia-a100-sxm4-80gb");
  EXPECT_EQ(gpu_key({{"device", "cpu"}}), cpu_key());
  EXPECT_THROW(gpu_key({{"device", "cuda:0"}, {"gpu_name", "X"}}), infra_error);
}

TEST(device, cpu_key_is_generic) {
  std::string k = cpu_key();
  EXPECT_EQ(k.rfind("cpu-", 0), 0u);
  EXPECT_EQ(k.find('_'), std::string::npos);  // x86_64 -> x86-64
  EXPECT_EQ(slug("  NVIDIA  H100 (PCIe) "), "nvidia-h100-pcie");
}

// One lock per physical GPU, machine-wide, whatever ordinal a process sees it as.
TEST(device, gpu_timing_lock_names_the_gpu_as_the_machine_sees_it) {
  const char* was_visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const char* was_dir = std::getenv("KFORGE_LOCK_DIR");
  const std::string keep_visible = was_visible ? was_visible : "", keep_dir = was_dir ? was_dir : "";
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("KFORGE_LOCK_DIR");
  EXPECT_TRUE(gpu_timing_lock(parse_device("cpu")).empty());
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda")), "/tmp/kforge-gpu-timing-0.lock");
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda:3")), "/tmp/kforge-gpu-timing-3.lock");
  setenv("CUDA_VISIBLE_DEVICES", "2, 5", 1);  // this process's cuda:1 is the machine's GPU 5
  setenv("KFORGE_LOCK_DIR", "/run/locks", 1);
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda:1")), "/run/locks/kforge-gpu-timing-5.lock");
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda:0")), "/run/locks/kforge-gpu-timing-2.lock");
  setenv("CUDA_VISIBLE_DEVICES", "GPU-8f3a2c1e-77aa", 1);
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda:0")), "/run/locks/kforge-gpu-timing-gpu-8f3a2c1e-77aa.lock");
  EXPECT_EQ(gpu_timing_lock(parse_device("cuda:1")), "/run/locks/kforge-gpu-timing-1.lock");  // past the list
  if (was_visible) setenv("CUDA_VISIBLE_DEVICES", keep_visible.c_str(), 1); else unsetenv("CUDA_VISIBLE_DEVICES");
  if (was_dir) setenv("KFORGE_LOCK_DIR", keep_dir.c_str(), 1); else unsetenv("KFORGE_LOCK_DIR");
}
