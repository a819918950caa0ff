// Wall-clock time as the records write it.
#pragma once
#include <string>

namespace kf {

// The current UTC time, ISO 8601 to the second: "2026-12-01T10:24:31Z".
std::string utc_now();

}  // namespace kf
