// The families' kernel source files (lib/search/families/*.cuh, *.h, embedded by CMake: search/families/embedded.h)
// are real files: each compiles on its own (the CUDA ones with nvcc, skipped where the build has none, the cpu ones
// with the host compiler), through the stand-alone preamble that kforge leaves out when it embeds them, and
// clang-format (lib/search/families/.clang-format) leaves them and their stubs as they are.
#include <algorithm>
#include <filesystem>
#include <future>
#include <set>

#include <gtest/gtest.h>

#include "search/families/embedded.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {
namespace fs = std::filesystem;

const fs::path k_lib = fs::path(KFORGE_SOURCE_DIR) / "lib";

// The text of a file with its stand-alone preamble (`#ifndef KF_EMITTED` ... `#endif  // KF_EMITTED`) left out.
std::string without_preamble(std::string text) {
  for (size_t at; (at = text.find("#ifndef KF_EMITTED\n")) != std::string::npos;) {
    const std::string end = "#endif  // KF_EMITTED\n";
    const size_t stop = text.find(end, at);
    if (stop == std::string::npos) return text;
    text.erase(at, stop + end.size() - at);
  }
  return text;
}

TEST(family_sources, embedded_text_is_the_file_without_its_preamble) {
  const auto paths = embedded_files();
  ASSERT_FALSE(paths.empty());
  for (auto path : paths) {
    const std::string file = read_file(k_lib / std::string(path));
    EXPECT_EQ(embedded_file(path), without_preamble(file)) << path << ": rebuild (cmake/embed_file.cmake)";
    EXPECT_EQ(embedded_file(path).find("KF_EMITTED"), std::string_view::npos) << path;
  }
}

const fs::path k_families = k_lib / "search" / "families";

bool is_stub(const std::string& name) { return name.ends_with("_stub.cuh") || name.ends_with("_stub.h"); }
bool opens_a_kforge_header(const std::string& text) {
  return text.starts_with("#pragma once\n") || text.find("\n#pragma once\n") != std::string::npos;
}

// The kernel files beside the families and their stubs: every .cuh, and every .h but kforge's own headers
// (cpu_emit.h, embedded.h, ...: `#pragma once` opens their code, as it does every kforge header's and a stub's).
std::vector<fs::path> kernel_files_and_stubs() {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(k_families)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".cuh" || is_stub(name)) out.push_back(e.path());
    else if (e.path().extension() == ".h" && !opens_a_kforge_header(read_file(e.path()))) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every kernel file beside the families is embedded (a stub only serves reading one on its own).
TEST(family_sources, every_kernel_file_is_embedded) {
  std::set<std::string> embedded;
  for (auto path : embedded_files()) embedded.insert(std::string(path));
  int kernel_files = 0;
  for (auto& file : kernel_files_and_stubs()) {
    const std::string name = file.filename().string();
    if (is_stub(name)) continue;
    ++kernel_files;
    EXPECT_TRUE(embedded.count("search/families/" + name)) << name << ": add it to KF_EMBEDDED_FILES (CMakeLists.txt)";
  }
  EXPECT_GT(kernel_files, 0) << k_families << ": no kernel files found";
}

// clang-format -i them after an edit (CONTRIBUTING.md "Adding a kernel family"): the style is the .clang-format beside
// them. Skipped where clang-format is not installed.
TEST(family_sources, clang_format_leaves_them_unchanged) {
  const auto clang_format = find_program("clang-format");
  if (!clang_format) GTEST_SKIP() << "no clang-format on PATH: the kernel files' formatting is not checked";
  const std::string version = run_process({*clang_format, "--version"}).out;
  for (auto& file : kernel_files_and_stubs()) {
    // --style=file: the .clang-format found from the file's folder up, which is the one beside the families.
    auto r = run_process({*clang_format, "--style=file", file.string()});
    ASSERT_TRUE(r.ok()) << file << ": " << r.describe() << "\n" << r.err;
    EXPECT_TRUE(r.out == read_file(file)) << file.filename().string() << " is not as clang-format leaves it: run `"
                                          << "clang-format -i lib/search/families/" << file.filename().string()
                                          << "` (" << version.substr(0, version.find('\n')) << ")";
  }
}

TEST(family_sources, each_compiles_on_its_own) {
  const bool have_nvcc = !std::string(KFORGE_NVCC).empty();
  temp_dir dir("kf-family-sources");
  std::vector<std::future<process_result>> builds;
  std::vector<std::string> labels;
  int skipped = 0;
  for (auto path : embedded_files()) {
    const fs::path file = k_lib / std::string(path);
    const std::string out = (dir.path() / (file.filename().string() + ".o")).string();
    std::vector<std::string> argv;
    if (file.extension() == ".cuh") {
      if (!have_nvcc) {
        ++skipped;
        continue;
      }
      // -c, not a syntax check: the last file of a family instantiates its kernels with the stub's values.
      argv = {KFORGE_NVCC, "-std=c++17", "-x", "cu", "-c", "-Xcompiler", "-fPIC",
              "-gencode=arch=compute_90a,code=sm_90a", "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", out, file.string()};
    } else {
      // -c as kforge compiles a cpu kernel, but without optimizing: the fixed file's kf_launch is built with the
      // stub's values, OpenMP pragmas and all.
      argv = {KFORGE_CXX_COMPILER, "-std=c++17", "-x", "c++", "-c", "-Wall", "-fopenmp", "-fPIC",
              "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", out, file.string()};
    }
    labels.push_back(std::string(path));
    builds.push_back(std::async(std::launch::async, [argv] { return run_process(argv); }));
  }
  for (size_t i = 0; i < builds.size(); ++i) {
    auto r = builds[i].get();
    EXPECT_TRUE(r.ok()) << labels[i] << "\n" << r.err.substr(0, 4000);
  }
  if (skipped > 0) GTEST_SKIP() << "built without CUDA: no nvcc to compile the " << skipped << " CUDA kernel files";
}

}  // namespace
}  // namespace kf
