// What a test is doing right now, for the fatal-signal handler of tests/test_main.cpp: a test that launches many
// kernels names the one in hand, so a crash (a segfault in a launch, say) says which variant on which shape.
#pragma once
#include <cstdio>
#include <string>

namespace kf::test {

inline char g_crash_context[512] = "";

inline void crash_context(const std::string& what) {
  std::snprintf(g_crash_context, sizeof g_crash_context, "%s", what.c_str());
}

}  // namespace kf::test
