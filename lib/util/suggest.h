// "did you mean ...?": the closest name by edit distance, if close enough to be a likely typo.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kf {

size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, or "" when none is within max(2, len/3) edits.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kf
