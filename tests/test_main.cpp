// The GoogleTest main for kforge's test executables. A fatal signal (a segfault in a kernel's host code, an
// abort in a library) prints the test, what it was doing (crash_context.h) and a backtrace before the process
// dies: otherwise a crash under ctest or in a redirected log shows nothing past "[ RUN ]".
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "register.h"  // baselines/
#include "support/crash_context.h"

namespace {

void say(const char* s) {
  if (write(STDERR_FILENO, s, std::strlen(s)) < 0) return;
}

void on_fatal_signal(int sig) {
  say("\n*** fatal signal ");
  say(strsignal(sig));
  if (const auto* t = ::testing::UnitTest::GetInstance()->current_test_info()) {
    say(" in ");
    say(t->test_suite_name());
    say(".");
    say(t->name());
  }
  if (kf::test::g_crash_context[0]) {
    say(" while ");
    say(kf::test::g_crash_context);
  }
  say("\n");
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  kf::register_baselines();  // as kforge's main does: specs and reports name the registered baselines
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, on_fatal_signal);
  return RUN_ALL_TESTS();
}
