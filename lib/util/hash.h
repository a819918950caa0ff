// SHA-256 of bytes, as lowercase hex: content hashes for specs, kernels and cache keys.
#pragma once
#include <string>
#include <string_view>

namespace kf {

std::string sha256_hex(std::string_view data);

}  // namespace kf
