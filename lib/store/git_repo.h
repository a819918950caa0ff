// The few git operations kforge needs, through libgit2: resolve revisions, find a merge-base, read a file
// from a commit's tree, read and write notes. Git sits behind this class so tests use real temp repositories.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct git_repository;

namespace kf {

class git_repo {
 public:
  // Opens the repository containing `path` (searching upwards). Throws user_error when there is none.
  explicit git_repo(const std::filesystem::path& path);
  ~git_repo();
  git_repo(const git_repo&) = delete;
  git_repo& operator=(const git_repo&) = delete;

  std::filesystem::path workdir() const;  // the top of the working tree
  // The commit a revision names ("HEAD", "origin/main", a sha), as 40 hex digits. Throws user_error naming
  // the revision when it does not resolve to a commit.
  std::string resolve(std::string_view rev) const;
  std::optional<std::string> try_resolve(std::string_view rev) const;
  // The best common ancestor of two revisions. Throws user_error when there is none (unrelated histories or
  // a shallow clone).
  std::string merge_base(std::string_view a, std::string_view b) const;
  // A file's content in a commit's tree; `path` relative to the top of the working tree (or absolute inside
  // it). nullopt when the commit does not have the file.
  std::optional<std::string> file_at(std::string_view commit, const std::filesystem::path& path) const;
  // The note text on a commit under `notes_ref`, or nullopt.
  std::optional<std::string> read_note(std::string_view commit, std::string_view notes_ref) const;
  // Writes (replacing) the note on a commit. The signature is the repository's user or "kforge".
  void write_note(std::string_view commit, std::string_view notes_ref, std::string_view text);
  // A path (absolute, or relative to the current directory) relative to the working tree's top, with '/'
  // separators. Throws user_error when it is outside.
  std::string relative(const std::filesystem::path& path) const;

 private:
  git_repository* m_repo = nullptr;
};

}  // namespace kf
