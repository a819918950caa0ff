// A real HTTP server on 127.0.0.1 (cpp-httplib) on a free port, serving from its own thread: the tests' stand-in
// for an LLM endpoint.
#pragma once
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace kf::test {

class loopback_server {
 public:
  loopback_server() {
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
    while (!m_server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~loopback_server() {
    m_server.stop();
    m_thread.join();
  }
  httplib::Server& server() { return m_server; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

 private:
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
};

}  // namespace kf::test
