#include "tools/burst/burst_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "util/text.hpp"

namespace ckptmon::burst {

namespace {

// Cleared when the kernel (or a seccomp filter) refuses openat2 once.
std::atomic<bool> have_openat2{true};
std::atomic<bool> force_walk{false};

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

int open_dir_walk(int root, const std::vector<std::string>& parts) {
  int cur = ::openat(root, ".", kDirFlags);
  for (const std::string& p : parts) {
    if (cur < 0) return -1;
    const int next = ::openat(cur, p.c_str(), kDirFlags);
    const int err = errno;
    ::close(cur);
    errno = err;
    cur = next;
  }
  return cur;
}

// After ENOTDIR: ELOOP when the first component that is not a directory is a
// symlink (O_DIRECTORY | O_NOFOLLOW reports a symlink as "not a directory").
int classify_notdir(int root, const std::vector<std::string>& parts) {
  int cur = ::openat(root, ".", kDirFlags);
  int err = ENOTDIR;
  for (const std::string& p : parts) {
    if (cur < 0) break;
    struct stat st {};
    if (::fstatat(cur, p.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) break;
    if (S_ISLNK(st.st_mode)) {
      err = ELOOP;
      break;
    }
    if (!S_ISDIR(st.st_mode)) break;
    const int next = ::openat(cur, p.c_str(), kDirFlags);
    ::close(cur);
    cur = next;
  }
  if (cur >= 0) ::close(cur);
  return err;
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool split_relative(std::string_view rel, std::vector<std::string>* parts) {
  parts->clear();
  if (rel.empty() || rel.front() == '/') return false;
  std::size_t start = 0;
  while (start <= rel.size()) {
    std::size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    const std::string_view part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    parts->emplace_back(part);
    start = end + 1;
  }
  return true;
}

int open_dir_beneath(int root, std::string_view rel) {
  std::vector<std::string> parts;
  if (!rel.empty() && !split_relative(rel, &parts)) {
    errno = EINVAL;
    return -1;
  }
  if (parts.empty()) return ::openat(root, ".", kDirFlags);
  int fd = -1;
  if (have_openat2 && !force_walk) {
    struct open_how how {};
    how.flags = static_cast<std::uint64_t>(kDirFlags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const std::string path(rel);
    for (int attempt = 0; attempt < 8; ++attempt) {
      fd = static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
      if (fd >= 0) return fd;
      if (errno == EAGAIN || errno == EINTR) continue;  // a concurrent rename: try again
      if (errno == ENOSYS || errno == EPERM) {          // EPERM: seccomp, not permissions
        have_openat2 = false;
      }
      break;
    }
  }
  if (fd < 0 && (!have_openat2 || force_walk)) fd = open_dir_walk(root, parts);
  if (fd < 0 && errno == ENOTDIR) errno = classify_notdir(root, parts);
  return fd;
}

bool open_parent_beneath(int root, std::string_view rel, Parent* out) {
  std::vector<std::string> parts;
  if (!split_relative(rel, &parts)) {
    errno = EINVAL;
    return false;
  }
  const std::size_t slash = rel.rfind('/');
  const std::string_view parent = slash == std::string_view::npos ? "" : rel.substr(0, slash);
  out->dir = Fd(open_dir_beneath(root, parent));
  if (!out->dir.ok()) return false;
  out->name = parts.back();
  return true;
}

int open_file_beneath(int root, std::string_view rel, int flags, mode_t mode) {
  Parent p;
  if (!open_parent_beneath(root, rel, &p)) return -1;
  return ::openat(p.dir.get(), p.name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

std::string beneath_error(int err) {
  switch (err) {
    case ELOOP:
      return "a symlink is on the way (burst follows none below the directory it writes in; "
             "was a directory swapped for a symlink?)";
    case ENOTDIR:
      return "something on the way is not a directory (swapped since burst created it?)";
    case EXDEV:
      return "the path leaves the directory";
    case EINVAL:
      return "not a relative path below the directory (absolute, empty, or with \".\" or \"..\")";
    default:
      return errno_text(err);
  }
}

namespace {

// A directory stream over `dfd`, which it takes; null (errno kept, `dfd`
// closed) when fdopendir fails.
DIR* open_stream(int dfd) {
  DIR* d = ::fdopendir(dfd);
  if (d == nullptr) {
    const int err = errno;
    ::close(dfd);
    errno = err;
  }
  return d;
}

bool walk_dir(int dfd, const std::string& rel,
              const std::function<void(const std::string&, const struct stat&)>& fn) {
  DIR* d = open_stream(dfd);
  if (d == nullptr) return false;
  bool ok = true;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    const std::string child = rel.empty() ? std::string(n) : rel + "/" + std::string(n);
    fn(child, st);
    if (S_ISDIR(st.st_mode)) subdirs.emplace_back(n);
  }
  for (const std::string& n : subdirs) {
    const int sub = ::openat(::dirfd(d), n.c_str(), kDirFlags);
    if (sub < 0) {
      if (errno != ENOENT) ok = false;
      continue;
    }
    std::string child = rel;
    if (!child.empty()) child += '/';
    child += n;
    if (!walk_dir(sub, child, fn)) ok = false;
  }
  ::closedir(d);
  return ok;
}

bool remove_contents(int dfd) {
  DIR* d = open_stream(dfd);
  if (d == nullptr) return false;
  std::vector<std::pair<std::string, bool>> entries;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.emplace_back(std::string(n), S_ISDIR(st.st_mode));
  }
  bool ok = true;
  int err = 0;
  for (const auto& [name, is_dir] : entries) {
    if (is_dir) {
      const int sub = ::openat(::dirfd(d), name.c_str(), kDirFlags);
      if (sub < 0 || !remove_contents(sub)) {
        if (ok) err = errno;
        ok = false;
        continue;
      }
    }
    if (::unlinkat(::dirfd(d), name.c_str(), is_dir ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
      if (ok) err = errno;
      ok = false;
    }
  }
  ::closedir(d);
  if (!ok) errno = err;
  return ok;
}

}  // namespace

bool walk_beneath(int root, const std::string& rel,
                  const std::function<void(const std::string&, const struct stat&)>& fn) {
  const int dfd = open_dir_beneath(root, rel);
  if (dfd < 0) return false;
  return walk_dir(dfd, rel, fn);
}

bool remove_tree_beneath(int root, const std::string& rel) {
  Parent p;
  if (!open_parent_beneath(root, rel, &p)) return false;
  const int dfd = ::openat(p.dir.get(), p.name.c_str(), kDirFlags);
  if (dfd < 0) return false;
  if (!remove_contents(dfd)) return false;
  return ::unlinkat(p.dir.get(), p.name.c_str(), AT_REMOVEDIR) == 0;
}

void use_walk_fallback_for_testing(bool on) { force_walk = on; }

}  // namespace ckptmon::burst
