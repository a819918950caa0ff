#include "exec/protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/error.h"

namespace kf::protocol {
namespace {

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_le32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// Reads exactly n bytes; returns the count read (short only at end of stream).
size_t read_full(int fd, char* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::read(fd, buf + done, n - done);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw infra_error(fmt::format("reading a protocol frame: {}", std::strerror(errno)));
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

std::string encode(const nlohmann::json& message) {
  // Invalid UTF-8 in a string (a compiler log, a candidate's name) is replaced, never a throw.
  std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  KF_ASSERT(body.size() <= k_max_frame, "protocol message of {} bytes exceeds the frame limit", body.size());
  std::string out;
  out.reserve(body.size() + 4);
  put_le32(out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

void frame_decoder::feed(std::string_view bytes) { m_buffer.append(bytes); }

std::optional<nlohmann::json> frame_decoder::next() {
  if (failed() || m_buffer.size() < 4) return std::nullopt;
  uint32_t len = get_le32(m_buffer.data());
  if (len > k_max_frame) {
    m_error = fmt::format("frame length {} exceeds the limit of {} bytes (corrupt stream?)", len, k_max_frame);
    return std::nullopt;
  }
  if (m_buffer.size() < 4 + size_t(len)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(m_buffer.begin() + 4, m_buffer.begin() + 4 + len, nullptr, false);
  m_buffer.erase(0, 4 + size_t(len));
  if (j.is_discarded()) {
    m_error = "a frame that is not valid JSON";
    return std::nullopt;
  }
  return j;
}

bool write_message(int fd, const nlohmann::json& message, std::string* err) {
  std::string bytes = encode(message);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (err) *err = std::strerror(errno);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<nlohmann::json> read_message(int fd) {
  char head[4];
  size_t got = read_full(fd, head, 4);
  if (got == 0) return std::nullopt;
  if (got < 4) throw infra_error("protocol stream ended inside a frame header");
  uint32_t len = get_le32(head);
  if (len > k_max_frame) throw infra_error(fmt::format("frame length {} exceeds the limit", len));
  std::string body(len, '\0');
  if (read_full(fd, body.data(), len) < len) throw infra_error("protocol stream ended inside a frame");
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) throw infra_error("a protocol frame that is not valid JSON");
  return j;
}

nlohmann::json error_response(std::string_view kind, std::string_view text) {
  return {{"ok", false}, {"kind", kind}, {"error", text}};
}

}  // namespace kf::protocol
