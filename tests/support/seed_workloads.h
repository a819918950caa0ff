// A workloads folder in a temp dir holding seed workloads copied from the repository (spec and stored kernels),
// for tests that run the real kforge binary on them.
#pragma once
#include <filesystem>
#include <initializer_list>
#include <string>

#include "util/fs.h"

namespace kf::test {

inline std::filesystem::path seed_workloads(const temp_dir& d,
                                            std::initializer_list<std::string> names = {"qwen-router-softmax"}) {
  namespace fs = std::filesystem;
  fs::path dir = d.path() / "workloads";
  fs::path src = fs::path(KFORGE_SOURCE_DIR) / "workloads";
  fs::create_directories(dir);
  for (const auto& name : names) {
    fs::copy_file(src / (name + ".yaml"), dir / (name + ".yaml"));
    fs::copy(src / name, dir / name, fs::copy_options::recursive);
  }
  return dir;
}

}  // namespace kf::test
