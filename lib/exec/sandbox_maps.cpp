// The files mapped as code, for the `sandbox.library` rule (sandbox.h).
#include <algorithm>
#include <fstream>
#include <sstream>

#include "exec/sandbox.h"

namespace kf {

std::vector<std::string> code_mappings() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    // address perms offset dev inode path
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode;
    std::getline(fields >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] == '[') continue;
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> new_code_mappings(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  std::vector<std::string> out;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(out));
  return out;
}

}  // namespace kf
