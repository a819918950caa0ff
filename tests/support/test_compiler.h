// One compiler for a test binary, caching under the build folder's test-cache, so that reruns skip the compiles
// (tests compile the same candidates run after run).
#pragma once
#include <filesystem>

#include "exec/compile.h"

namespace kf::test {

inline compiler& shared_compiler() {
  static compiler c([] {
    compile_options o;
    o.cache_root = std::filesystem::path(KFORGE_BINARY_DIR) / "test-cache";
    return o;
  }());
  return c;
}

}  // namespace kf::test
