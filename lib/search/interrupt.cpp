#include "search/interrupt.h"

#include <atomic>
#include <csignal>

namespace kf {
namespace {

std::atomic<int> g_interrupts{0};

void on_sigint(int) {
  if (g_interrupts.fetch_add(1) >= 1) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

}  // namespace

void install_search_interrupt() {
  g_interrupts = 0;
  std::signal(SIGINT, on_sigint);
}

bool search_interrupted() { return g_interrupts.load() > 0; }

}  // namespace kf
