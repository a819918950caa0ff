// The exclusive file lock (util/file_lock.h) between real processes: a second holder waits for the first, and a
// holder that is killed lets the lock go.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/file_lock.h"
#include "util/fs.h"

namespace kf {
namespace {

// A child that takes the lock, says so on `ready`, waits for a byte on `go` (or forever when `go` is -1), appends
// "child done" to `log`, and exits (letting the lock go).
pid_t hold_in_child(const std::filesystem::path& lock, int ready, int go, const std::filesystem::path& log) {
  pid_t pid = fork();
  if (pid == 0) {
    file_lock held(lock);
    char c = 1;
    (void)!::write(ready, &c, 1);
    if (go < 0)
      for (;;) pause();
    (void)!::read(go, &c, 1);
    FILE* f = fopen(log.c_str(), "a");
    fputs("child done\n", f);
    fclose(f);
    _exit(0);
  }
  return pid;
}

TEST(file_lock, a_second_holder_waits_for_the_first_across_processes) {
  temp_dir d;
  const auto lock = d.path() / "locks" / "gpu.lock";  // the folder is made on the way
  const auto log = d.path() / "log";
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t child = hold_in_child(lock, ready[1], go[0], log);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the child holds it
  {
    file_lock tried(lock, file_lock::wait::no);
    EXPECT_FALSE(tried.held());
  }
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  file_lock mine(lock);  // blocks until the child has written its line and exited
  EXPECT_TRUE(mine.held());
  EXPECT_EQ(read_file(log), "child done\n");
  int status = 0;
  waitpid(child, &status, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}

TEST(file_lock, two_holders_in_one_process_exclude_each_other_and_release_lets_go) {
  temp_dir d;
  file_lock a(d.path() / "x.lock");
  ASSERT_TRUE(a.held());
  EXPECT_FALSE(file_lock(d.path() / "x.lock", file_lock::wait::no).held());
  file_lock moved = std::move(a);
  EXPECT_FALSE(a.held());
  EXPECT_FALSE(file_lock(d.path() / "x.lock", file_lock::wait::no).held());  // the moved-to object holds it
  moved.release();
  EXPECT_TRUE(file_lock(d.path() / "x.lock", file_lock::wait::no).held());
}

TEST(file_lock, a_killed_holder_lets_the_lock_go) {
  temp_dir d;
  const auto lock = d.path() / "k.lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = hold_in_child(lock, ready[1], -1, d.path() / "unused");
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_FALSE(file_lock(lock, file_lock::wait::no).held());
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(file_lock(lock, file_lock::wait::no).held());
  close(ready[0]);
  close(ready[1]);
}

TEST(file_lock, a_path_that_cannot_be_created_is_an_error_naming_it) {
  temp_dir d;
  write_file_atomic(d.path() / "file", "x");
  try {
    file_lock l(d.path() / "file" / "sub.lock");
    FAIL() << "locked a path under a file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("sub.lock"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kf
