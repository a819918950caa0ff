#include <unistd.h>

#include <gtest/gtest.h>

#include "exec/protocol.h"
#include "util/error.h"

using namespace kf;

TEST(protocol, encode_is_little_endian_length_then_json) {
  std::string bytes = protocol::encode({{"cmd", "hello"}});
  ASSERT_GE(bytes.size(), 4u);
  uint32_t len = uint8_t(bytes[0]) | uint8_t(bytes[1]) << 8 | uint8_t(bytes[2]) << 16 | uint32_t(uint8_t(bytes[3])) << 24;
  EXPECT_EQ(len, bytes.size() - 4);
  EXPECT_EQ(bytes.substr(4), R"({"cmd":"hello"})");
}

TEST(protocol, decoder_reassembles_frames_split_anywhere) {
  std::string stream = protocol::encode({{"a", 1}}) + protocol::encode({{"b", std::string(70000, 'x')}});
  protocol::frame_decoder d;
  std::vector<nlohmann::json> got;
  for (size_t i = 0; i < stream.size(); i += 7) {  // odd-sized chunks cut through headers and bodies
    d.feed(std::string_view(stream).substr(i, 7));
    while (auto m = d.next()) got.push_back(*m);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["a"], 1);
  EXPECT_EQ(got[1]["b"].get<std::string>().size(), 70000u);
  EXPECT_FALSE(d.failed());
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(protocol, decoder_rejects_garbage) {
  protocol::frame_decoder d;
  d.feed("hello world, not a frame");  // "hell" as a length is far beyond the limit
  EXPECT_FALSE(d.next());
  EXPECT_TRUE(d.failed());
  protocol::frame_decoder d2;
  std::string bad = protocol::encode({{"x", 1}});
  bad[5] = '!';  // break the JSON
  d2.feed(bad);
  EXPECT_FALSE(d2.next());
  EXPECT_TRUE(d2.failed());
  EXPECT_NE(d2.error().find("JSON"), std::string::npos);
}

TEST(protocol, blocking_roundtrip_over_a_pipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_TRUE(protocol::write_message(fds[1], {{"cmd", "env"}, {"n", 3}}));
  ::close(fds[1]);
  auto m = protocol::read_message(fds[0]);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["cmd"], "env");
  EXPECT_FALSE(protocol::read_message(fds[0]));  // clean end of stream
  ::close(fds[0]);
}

TEST(protocol, truncated_frame_is_an_error) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string bytes = protocol::encode({{"cmd", "env"}});
  ASSERT_EQ(::write(fds[1], bytes.data(), bytes.size() - 2), ssize_t(bytes.size() - 2));
  ::close(fds[1]);
  EXPECT_THROW(protocol::read_message(fds[0]), infra_error);
  ::close(fds[0]);
}

TEST(protocol, invalid_utf8_is_replaced_not_thrown) {
  std::string bytes = protocol::encode({{"log", std::string("bad \xff byte")}});
  protocol::frame_decoder d;
  d.feed(bytes);
  auto m = d.next();
  ASSERT_TRUE(m);
  EXPECT_NE((*m)["log"].get<std::string>().find("bad"), std::string::npos);
}
