// The chat service against a real loopback HTTP server: it records every answered request, and a replay answers the
// same requests from the record without an endpoint, in order per request, and names the one it has no answer for.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "../support/loopback_server.h"
#include "llm/chat_service.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf::llm {
namespace {

chat_request ask(const std::string& text, double temperature = 0.7, const std::string& previous = "") {
  chat_request q;
  q.messages = {{"system", "rules"}, {"user", text}};
  q.temperature = temperature;
  q.key = request_key(previous, q.messages, temperature);
  q.prompt_version = "system:1 rewrite:1";
  return q;
}

TEST(llm_chat_service, records_each_answer_and_replays_them_without_the_endpoint) {
  temp_dir dir("kf-llm-record");
  const auto file = dir.path() / "llm.jsonl";
  {
    test::loopback_server srv;
    std::mutex mutex;
    int n = 0;
    std::vector<double> temperatures;
    srv.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      auto body = nlohmann::json::parse(req.body);
      temperatures.push_back(body["temperature"].get<double>());
      res.set_content(nlohmann::json({{"choices", {{{"message", {{"role", "assistant"},
                                                                   {"content", "answer " + std::to_string(++n)}}}}}}})
                          .dump(),
                      "application/json");
    });
    endpoint ep;
    ep.base_url = srv.url();
    ep.model = "m1";
    ep.timeout = std::chrono::seconds(5);
    chat_service live({ep, file, false, {}});
    EXPECT_EQ(live.model(), "m1");
    EXPECT_EQ(live.ask(ask("first")).text, "answer 1");
    EXPECT_EQ(live.ask(ask("second", 0.85)).text, "answer 2");
    EXPECT_EQ(live.ask(ask("first")).text, "answer 3");  // the same request again gets its own answer
    EXPECT_EQ(temperatures, (std::vector<double>{0.7, 0.85, 0.7}));  // each request's temperature is sent
  }
  std::ifstream in(file);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["model"], "m1");
  EXPECT_EQ(lines[0]["key"], ask("first").key);
  EXPECT_EQ(lines[0]["messages"][1]["content"], "first");
  EXPECT_EQ(lines[1]["answer"], "answer 2");
  EXPECT_EQ(lines[2]["prompt_version"], "system:1 rewrite:1");

  // No endpoint at all: the record answers, each request's answers in the order they were given.
  chat_service replay({std::nullopt, {}, false, file});
  EXPECT_EQ(replay.model(), "m1");
  EXPECT_EQ(replay.ask(ask("second", 0.85)).text, "answer 2");
  EXPECT_EQ(replay.ask(ask("first")).text, "answer 1");
  EXPECT_EQ(replay.ask(ask("first")).text, "answer 3");
  try {
    replay.ask(ask("first"));  // a third "first" was never asked
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no recorded answer for request 4"), std::string::npos) << what;
    EXPECT_NE(what.find(ask("first").key.substr(0, 16)), std::string::npos) << what;
    EXPECT_NE(what.find("\"first\""), std::string::npos) << what;
  }
  // Another temperature or another conversation before it is another request.
  EXPECT_THROW(replay.ask(ask("second", 1.0)), user_error);
  EXPECT_THROW(replay.ask(ask("second", 0.85, "some earlier request")), user_error);
}

TEST(llm_chat_service, a_replay_file_that_is_not_a_record_is_refused_with_its_line) {
  temp_dir dir("kf-llm-replay-bad");
  const auto file = dir.path() / "bad.jsonl";
  write_file_atomic(file, "{\"key\": \"k\", \"answer\": \"a\"}\nnot json\n");
  try {
    chat_service s({std::nullopt, {}, false, file});
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(chat_service({std::nullopt, {}, false, dir.path() / "missing.jsonl"}), user_error);
  write_file_atomic(file, "\n");
  EXPECT_THROW(chat_service({std::nullopt, {}, false, file}), user_error);  // no answer in it
  EXPECT_THROW(chat_service({std::nullopt, {}, false, {}}), user_error);    // neither endpoint nor replay
}

}  // namespace
}  // namespace kf::llm
