// Files: atomic writes (temp + rename) and whole-file reads.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace kf {

// Writes `content` to `path` through a temp file in the same folder and a rename, so a reader never
// sees half a file and a crash leaves the old one. Creates missing parent folders. Throws infra_error.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Throws user_error naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// A fresh folder (mode 0700) under the system temp dir; the caller removes it (remove_tree).
std::string make_private_dir(std::string_view prefix);
// Removes a folder and everything in it without following links (nftw, not std::filesystem: safe in processes
// that link LibTorch, whose own std::filesystem functions bind first). Errors are ignored.
void remove_tree(const std::string& path);

// A fresh empty folder under the system temp dir, removed by the destructor.
class temp_dir {
 public:
  explicit temp_dir(std::string_view prefix = "kforge");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace kf
