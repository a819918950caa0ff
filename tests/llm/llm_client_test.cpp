// The LLM client against a real loopback HTTP server (cpp-httplib): request shape, parsing, errors.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "llm/client.h"
#include "../support/loopback_server.h"

namespace kf::llm {
namespace {

endpoint make_endpoint(api kind, const std::string& url) {
  endpoint ep;
  ep.kind = kind;
  ep.base_url = url;
  ep.model = "test-model";
  ep.api_key = "secret-key";
  ep.timeout = std::chrono::seconds(5);
  return ep;
}

TEST(llm_client, openai_request_and_response) {
  test::loopback_server srv;
  std::string seen_auth, seen_body;
  srv.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    seen_auth = req.get_header_value("Authorization");
    seen_body = req.body;
    res.set_content(R"({"choices":[{"message":{"role":"assistant","content":"```cuda\nint x;\n```"}}],
                       "usage":{"prompt_tokens":12,"completion_tokens":5}})", "application/json");
  });
  auto r = chat(make_endpoint(api::openai, srv.url()), {{"system", "be fast"}, {"user", "write a kernel"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "```cuda\nint x;\n```");
  EXPECT_EQ(r.input_tokens, 12);
  EXPECT_EQ(seen_auth, "Bearer secret-key");
  auto body = nlohmann::json::parse(seen_body);
  EXPECT_EQ(body["model"], "test-model");
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
}

TEST(llm_client, anthropic_moves_system_prompt_and_sets_headers) {
  test::loopback_server srv;
  std::string seen_key, seen_version, seen_body;
  srv.server().Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    seen_key = req.get_header_value("x-api-key");
    seen_version = req.get_header_value("anthropic-version");
    seen_body = req.body;
    res.set_content(R"({"content":[{"type":"text","text":"part one "},{"type":"text","text":"part two"}],
                       "usage":{"input_tokens":3,"output_tokens":4}})", "application/json");
  });
  auto r = chat(make_endpoint(api::anthropic, srv.url()), {{"system", "rules"}, {"user", "go"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "part one part two");
  EXPECT_EQ(seen_key, "secret-key");
  EXPECT_FALSE(seen_version.empty());
  auto body = nlohmann::json::parse(seen_body);
  EXPECT_EQ(body["system"], "rules");
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
}

TEST(llm_client, retries_server_errors_then_succeeds) {
  test::loopback_server srv;
  std::atomic<int> calls{0};
  srv.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls < 2) {
      res.status = 503;
      res.set_content("overloaded", "text/plain");
      return;
    }
    res.set_content(R"({"choices":[{"message":{"content":"ok"}}]})", "application/json");
  });
  auto r = chat(make_endpoint(api::openai, srv.url()), {{"user", "x"}}, 2);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(calls.load(), 2);
}

TEST(llm_client, client_error_is_reported_not_retried) {
  test::loopback_server srv;
  std::atomic<int> calls{0};
  srv.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 401;
    res.set_content(R"({"error":"bad key"})", "application/json");
  });
  auto r = chat(make_endpoint(api::openai, srv.url()), {{"user", "x"}}, 3);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("HTTP 401"), std::string::npos);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(r.error.find("secret-key"), std::string::npos);
}

TEST(llm_client, malformed_body_is_an_error) {
  test::loopback_server srv;
  srv.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{not json", "application/json");
  });
  auto r = chat(make_endpoint(api::openai, srv.url()), {{"user", "x"}}, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not a JSON object"), std::string::npos);
}

TEST(llm_client, unreachable_endpoint_is_an_error) {
  int port;
  {
    test::loopback_server srv;  // take a free port, then close it
    port = std::stoi(srv.url().substr(srv.url().rfind(':') + 1));
  }
  auto r = chat(make_endpoint(api::openai, "http://127.0.0.1:" + std::to_string(port)), {{"user", "x"}}, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("failed"), std::string::npos);
}

}  // namespace
}  // namespace kf::llm
