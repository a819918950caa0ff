// Small text helpers: see text.h.
#include "util/text.h"

namespace kf {

std::string tail_text(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  std::size_t from = text.size() - max_chars;
  std::size_t line = text.find('\n', from);
  return "..." + text.substr(line == std::string::npos ? from : line);
}

}  // namespace kf
