// An exclusive advisory lock on a file (flock(2)). The lock belongs to the open file this object holds, so two
// holders in one process exclude each other as two processes do, and a holder that dies (killed, crashed) lets
// the lock go with it: nothing is left to clean up.
#pragma once
#include <filesystem>

namespace kf {

class file_lock {
 public:
  enum class wait { block, no };
  // Opens (creating it and its folder when missing) and locks `path`. wait::block waits for another holder to let
  // go; wait::no returns at once, and held() says whether the lock was taken. Throws infra_error naming the path
  // when it cannot be opened or locked.
  explicit file_lock(const std::filesystem::path& path, wait how = wait::block);
  ~file_lock();
  file_lock(file_lock&& other) noexcept;
  file_lock& operator=(file_lock&& other) noexcept;
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

  bool held() const { return m_fd >= 0; }
  void release();

 private:
  int m_fd = -1;
};

}  // namespace kf
