#include "store/git_repo.h"

#include <git2.h>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {
namespace fs = std::filesystem;
namespace {

std::string last_error() {
  const git_error* e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

void check(int rc, std::string_view what) {
  if (rc < 0) throw infra_error(fmt::format("git: {} failed: {}", what, last_error()));
}

struct libgit2_init {
  libgit2_init() { git_libgit2_init(); }
  ~libgit2_init() { git_libgit2_shutdown(); }
};

// Owning handles for the libgit2 objects used here.
template <typename T, void (*Free)(T*)>
struct handle {
  T* p = nullptr;
  handle() = default;
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  ~handle() { if (p) Free(p); }
  T** out() { return &p; }
};
using object_h = handle<git_object, git_object_free>;
using commit_h = handle<git_commit, git_commit_free>;
using tree_h = handle<git_tree, git_tree_free>;
using entry_h = handle<git_tree_entry, git_tree_entry_free>;
using blob_h = handle<git_blob, git_blob_free>;
using note_h = handle<git_note, git_note_free>;
using sig_h = handle<git_signature, git_signature_free>;

git_oid parse_oid(std::string_view sha) {
  git_oid oid;
  std::string s(sha);
  if (git_oid_fromstr(&oid, s.c_str()) < 0) throw user_error(fmt::format("'{}' is not a commit id", s));
  return oid;
}

std::string oid_str(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

}  // namespace

git_repo::git_repo(const fs::path& path) {
  static libgit2_init init;
  if (git_repository_open_ext(&m_repo, path.c_str(), 0, nullptr) < 0)
    throw user_error(source_loc{path.string()}, fmt::format("not inside a git repository ({})", last_error()));
}

git_repo::~git_repo() {
  if (m_repo) git_repository_free(m_repo);
}

fs::path git_repo::workdir() const {
  const char* w = git_repository_workdir(m_repo);
  return w ? fs::path(w).lexically_normal() : fs::path(git_repository_path(m_repo));
}

std::optional<std::string> git_repo::try_resolve(std::string_view rev) const {
  object_h obj, commit;
  std::string r(rev);
  if (git_revparse_single(obj.out(), m_repo, r.c_str()) < 0) return std::nullopt;
  if (git_object_peel(commit.out(), obj.p, GIT_OBJECT_COMMIT) < 0) return std::nullopt;
  return oid_str(*git_object_id(commit.p));
}

std::string git_repo::resolve(std::string_view rev) const {
  auto sha = try_resolve(rev);
  if (!sha)
    throw user_error(fmt::format("git revision '{}' does not name a commit here (is it fetched? in CI: "
                                 "actions/checkout with fetch-depth: 0)", rev));
  return *sha;
}

std::string git_repo::merge_base(std::string_view a, std::string_view b) const {
  git_oid oa = parse_oid(resolve(a)), ob = parse_oid(resolve(b)), out;
  int rc = git_merge_base(&out, m_repo, &oa, &ob);
  if (rc == GIT_ENOTFOUND)
    throw user_error(fmt::format("'{}' and '{}' have no common ancestor here (a shallow clone? fetch full history)", a, b));
  check(rc, "merge-base");
  return oid_str(out);
}

std::string git_repo::relative(const fs::path& path) const {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  fs::path top = fs::weakly_canonical(workdir(), ec);
  std::string s = p.lexically_relative(top).generic_string();
  if (s.empty() || s == "." || s.rfind("..", 0) == 0)
    throw user_error(source_loc{path.string()}, fmt::format("not inside the repository at {}", top.string()));
  return s;
}

std::optional<std::string> git_repo::file_at(std::string_view commit, const fs::path& path) const {
  git_oid oid = parse_oid(commit);
  commit_h c;
  tree_h tree;
  check(git_commit_lookup(c.out(), m_repo, &oid), "commit lookup");
  check(git_commit_tree(tree.out(), c.p), "tree lookup");
  std::string rel = path.is_absolute() ? relative(path) : path.generic_string();
  entry_h entry;
  int rc = git_tree_entry_bypath(entry.out(), tree.p, rel.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "tree entry lookup");
  if (git_tree_entry_type(entry.p) != GIT_OBJECT_BLOB) return std::nullopt;
  blob_h blob;
  check(git_blob_lookup(blob.out(), m_repo, git_tree_entry_id(entry.p)), "blob lookup");
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.p)), static_cast<size_t>(git_blob_rawsize(blob.p)));
}

std::optional<std::string> git_repo::read_note(std::string_view commit, std::string_view notes_ref) const {
  git_oid oid = parse_oid(commit);
  std::string ref(notes_ref);
  note_h note;
  int rc = git_note_read(note.out(), m_repo, ref.c_str(), &oid);
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "note read");
  const char* msg = git_note_message(note.p);
  return std::string(msg ? msg : "");
}

void git_repo::write_note(std::string_view commit, std::string_view notes_ref, std::string_view text) {
  git_oid oid = parse_oid(commit), out;
  std::string ref(notes_ref), body(text);
  sig_h sig;
  // CI checkouts often have no user configured: sign as kforge then.
  if (git_signature_default(sig.out(), m_repo) < 0)
    check(git_signature_now(sig.out(), "kforge", "kforge@localhost"), "signature");
  check(git_note_create(&out, m_repo, ref.c_str(), sig.p, sig.p, &oid, body.c_str(), 1), "note write");
}

}  // namespace kf
