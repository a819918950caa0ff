#include "search/families/embedded.h"

#include "util/error.h"

namespace kf {

std::string_view embedded_file(std::string_view path) {
  for (auto& e : embedded_table())
    if (e.path == path) return e.text;
  KF_ASSERT(false, "{} is not embedded (CMakeLists.txt: add it to KF_EMBEDDED_FILES)", path);
}

std::vector<std::string_view> embedded_files() {
  std::vector<std::string_view> out;
  for (auto& e : embedded_table()) out.push_back(e.path);
  return out;
}

}  // namespace kf
