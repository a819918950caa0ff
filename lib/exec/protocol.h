// The parent <-> kforge-worker wire format (docs/worker-protocol.md): each message is a 4-byte little-endian
// length and that many bytes of UTF-8 JSON. The worker reads and writes blocking; the parent decodes
// incrementally from a non-blocking pipe (frame_decoder) so it can apply timeouts and drain stderr meanwhile.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kf::protocol {

// Bumped when a request or response changes incompatibly; checked by `hello` and on every request.
constexpr int k_version = 1;
// Larger frames are refused: a corrupt length must not make anyone allocate gigabytes.
constexpr uint32_t k_max_frame = 256u << 20;

// The bytes on the wire for one message.
std::string encode(const nlohmann::json& message);

// Turns a byte stream into messages. feed() what was read; next() yields complete messages in order.
// A bad frame (too large, not JSON) puts the decoder into an error state: error() says what was wrong.
class frame_decoder {
 public:
  void feed(std::string_view bytes);
  std::optional<nlohmann::json> next();
  bool failed() const { return !m_error.empty(); }
  const std::string& error() const { return m_error; }
  size_t buffered() const { return m_buffer.size(); }

 private:
  std::string m_buffer;
  std::string m_error;
};

// Blocking I/O on a file descriptor (the worker's side). write_message returns false with `err` set when
// the peer is gone; read_message returns nullopt at a clean end of stream, and throws infra_error on a
// truncated or malformed frame.
bool write_message(int fd, const nlohmann::json& message, std::string* err = nullptr);
std::optional<nlohmann::json> read_message(int fd);

// Convenience for responses: {"ok": false, "kind": kind, "error": text}.
nlohmann::json error_response(std::string_view kind, std::string_view text);

}  // namespace kf::protocol
