// Small text helpers shared by the layers above.
#pragma once
#include <cstddef>
#include <string>

namespace kf {

// The last `max_chars` characters of `text` (a log), starting at a line when one starts within them, after
// "..." when anything was cut.
std::string tail_text(const std::string& text, std::size_t max_chars);

}  // namespace kf
