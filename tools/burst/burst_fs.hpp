#pragma once
// File-system calls of `ckptmon burst` that cannot leave a directory: every
// relative path is resolved beneath a directory file descriptor (the target,
// the drain directory) with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), or,
// on a kernel without openat2, by an O_NOFOLLOW walk one component at a time;
// the last step (create, rename, unlink) is an *at call on the parent's
// descriptor. A directory swapped for a symlink makes the call fail (ELOOP or
// ENOTDIR), never follow it. Stateless and thread-safe.

#include <sys/stat.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon::burst {

// An owned file descriptor (-1: none).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// The components of a relative path ("job0/step-100/x"); false for an empty
// or absolute path and for one with an empty, "." or ".." component.
bool split_relative(std::string_view rel, std::vector<std::string>* parts);

// Opens directory `rel` beneath `root` ("" is root itself) for reading, no
// symlink followed on the way or at the end. -1 with errno on failure: ELOOP
// or ENOTDIR (a symlink or a non-directory on the way), EINVAL (not a clean
// relative path), ENOENT...
int open_dir_beneath(int root, std::string_view rel);

// The parent directory of `rel` beneath `root`, and its last component.
struct Parent {
  Fd dir;
  std::string name;
};
// false with errno set as open_dir_beneath does.
bool open_parent_beneath(int root, std::string_view rel, Parent* out);

// Opens file `rel` beneath `root`: openat(parent, name, flags | O_NOFOLLOW |
// O_CLOEXEC, mode). -1 with errno.
int open_file_beneath(int root, std::string_view rel, int flags, mode_t mode = 0644);

// Why a *_beneath call failed, for messages: "a symlink is on the way ...".
std::string beneath_error(int err);

// Calls `fn(rel, st)` for every entry below directory `rel` beneath `root`
// (files and directories, parents before their contents; rel of the entry
// relative to root), lstat semantics, descending through directories only
// (never a symlink). false with errno when a directory could not be opened.
bool walk_beneath(int root, const std::string& rel,
                  const std::function<void(const std::string&, const struct stat&)>& fn);

// Removes directory `rel` beneath `root` and everything in it without
// following a symlink (a symlink inside is removed, not what it names).
// false with errno on the first failure.
bool remove_tree_beneath(int root, const std::string& rel);

// Tests: resolve with the O_NOFOLLOW walk as on a kernel without openat2.
void use_walk_fallback_for_testing(bool on);

}  // namespace ckptmon::burst
