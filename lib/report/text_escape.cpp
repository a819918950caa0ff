#include "report/text_escape.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace kf {
namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t utf8_len(std::string_view s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((b & 0xE0) == 0xC0) { n = 2; cp = b & 0x1F; }
  else if ((b & 0xF0) == 0xE0) { n = 3; cp = b & 0x0F; }
  else if ((b & 0xF8) == 0xF0) { n = 4; cp = b & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  // Overlong forms, surrogates and out-of-range code points are invalid.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  // U+FFFE and U+FFFF are not XML characters.
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;
  return n;
}

// Walks valid UTF-8, handing each ASCII byte to `ascii` and each multi-byte sequence through unchanged.
template <typename F>
std::string transform(std::string_view s, F ascii) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_len(s, i);
    if (n == 0) {
      out += k_replacement;
      ++i;
    } else if (n == 1) {
      ascii(out, s[i]);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  return transform(s, [](std::string& out, char c) { out += c; });
}

std::string xml_escape(std::string_view s, bool attribute) {
  return transform(s, [attribute](std::string& out, char c) {
    switch (c) {
      case '&': out += "&amp;"; return;
      case '<': out += "&lt;"; return;
      case '>': out += "&gt;"; return;
      case '"': out += "&quot;"; return;
      case '\'': out += "&apos;"; return;
      case '\n': out += attribute ? "&#10;" : "\n"; return;
      case '\t': out += attribute ? "&#9;" : "\t"; return;
      case '\r': out += "&#13;"; return;
      default: break;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) out += k_replacement;
    else out += c;
  });
}

std::string html_escape(std::string_view s) {
  return transform(s, [](std::string& out, char c) {
    switch (c) {
      case '&': out += "&amp;"; return;
      case '<': out += "&lt;"; return;
      case '>': out += "&gt;"; return;
      case '"': out += "&quot;"; return;
      case '\'': out += "&#39;"; return;
      default: break;
    }
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7F) out += k_replacement;
    else out += c;
  });
}

std::string md_cell(std::string_view s) {
  return transform(s, [](std::string& out, char c) {
    switch (c) {
      case '|': out += "\\|"; return;
      case '`': out += "'"; return;
      case '<': out += "&lt;"; return;
      case '>': out += "&gt;"; return;
      case '&': out += "&amp;"; return;
      case '\n': case '\r': case '\t': out += ' '; return;
      default: break;
    }
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F) out += c;
  });
}

std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && (json[i + 1] == '/' || json[i + 1] == '!')) {
      out += "\\u003c";
    } else if (json.compare(i, 3, "\xE2\x80\xA8") == 0 || json.compare(i, 3, "\xE2\x80\xA9") == 0) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += json[i];
    }
  }
  return out;
}

std::string safe_dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string format_us(double us) {
  if (!std::isfinite(us)) return "?";
  if (us < 10) return fmt::format("{:.2f}", us);
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

}  // namespace kf
