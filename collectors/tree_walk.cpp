#include "collectors/tree_walk.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collectors/layouts/layout.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

double mtime_of(const struct stat& st) {
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

// An open or a listing that failed for a reason other than the entry being
// gone (or swapped for a non-directory): what is below is unknown, not empty.
bool unreadable_errno(int err) {
  return err != 0 && err != ENOENT && err != ENOTDIR && err != ELOOP;
}

std::string join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

// Opens a directory below `parent_fd` without following a symlink in the
// last component.
int open_dir_at(int parent_fd, const char* name) {
  return ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Opens `rel` below the root one component at a time, refusing symlinks
// anywhere on the way.
int open_rel(int root_fd, const std::string& rel) {
  int fd = ::fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (rel.empty() || fd < 0) return fd;
  for (auto part : split(rel, '/')) {
    if (part.empty()) continue;
    const std::string name(part);
    int next = open_dir_at(fd, name.c_str());
    const int err = errno;
    ::close(fd);
    if (next < 0) {
      errno = err;
      return -1;
    }
    fd = next;
  }
  return fd;
}

}  // namespace

bool read_small_file(int dfd, const std::string& name, std::uint64_t max_bytes,
                     std::string& out) {
  // O_NONBLOCK: a FIFO swapped in after the lstat must not block the walk.
  const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return false;
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  bool ok = true;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;  // an error, or the file shrank: what was read
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  ::close(fd);
  return ok;
}

TreeWalker::TreeWalker(int root_fd, dev_t root_dev, const WalkMemory* memory, WalkStats& stats)
    : root_fd_(root_fd), root_dev_(root_dev), memory_(memory), stats_(stats) {}

bool TreeWalker::build(const std::string& rel, DirNode& out, std::string* error) {
  int fd = open_rel(root_fd_, rel);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES) ++stats_.permission_errors;
    if (err == ENOENT) ++stats_.vanished;
    if (unreadable_errno(err)) out.error = err;
    if (error != nullptr) *error = rel + ": " + std::strerror(err);
    return false;
  }
  struct stat st {};
  ++stats_.stat_calls;
  if (::fstat(fd, &st) != 0) {
    if (unreadable_errno(errno)) out.error = errno;
    if (error != nullptr) *error = rel + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  out.name = rel.empty() ? std::string() : std::string(split(rel, '/').back());
  out.mtime = mtime_of(st);
  out.mode = st.st_mode;
  out.uid = st.st_uid;
  out.gid = st.st_gid;
  if (try_reuse(rel, out.mtime, out)) {
    ::close(fd);
    return true;
  }
  return fill(fd, rel, out);  // takes ownership of fd
}

bool TreeWalker::try_reuse(const std::string& rel, double mtime, DirNode& node) {
  if (memory_ == nullptr) return false;
  auto it = memory_->frozen.find(rel);
  if (it == memory_->frozen.end()) return false;
  const auto& dirs = it->second.dirs;
  for (const auto& [path, recorded] : dirs) {
    double now_mtime = 0;
    if (path == rel) {
      now_mtime = mtime;
    } else {
      struct stat st {};
      ++stats_.stat_calls;
      if (::fstatat(root_fd_, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        return false;
      }
      now_mtime = mtime_of(st);
    }
    if (now_mtime != recorded) return false;
  }
  node.reused = it->second.checkpoint;
  ++stats_.reused;
  return true;
}

bool TreeWalker::fill(int dfd, const std::string& rel, DirNode& node) {
  DIR* d = ::fdopendir(dfd);
  if (d == nullptr) {
    node.error = errno;
    ::close(dfd);
    return false;
  }
  ++stats_.dirs_listed;
  if (listed_ != nullptr) listed_->push_back(rel);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
    errno = 0;
  }
  // readdir ends with NULL on errors too (EIO, ESTALE): the listing is partial.
  if (unreadable_errno(errno)) node.error = errno;
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    struct stat st {};
    ++stats_.stat_calls;
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) {
        ++stats_.vanished;
      } else if (errno == EACCES) {
        ++stats_.permission_errors;
      }
      // An entry that is there but cannot be stat'ed (no search permission,
      // EIO): the directory's contents are not known in full.
      if (unreadable_errno(errno)) node.error = errno;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != root_dev_) continue;  // another file system: not walked
      DirNode child;
      child.name = name;
      child.mtime = mtime_of(st);
      child.mode = st.st_mode;
      child.uid = st.st_uid;
      child.gid = st.st_gid;
      const std::string child_rel = join(rel, name);
      if (!try_reuse(child_rel, child.mtime, child)) {
        int cfd = open_dir_at(dfd, name.c_str());
        if (cfd < 0) {
          if (errno == ENOENT) {
            ++stats_.vanished;
            continue;
          }
          if (errno == EACCES) ++stats_.permission_errors;
          if (unreadable_errno(errno)) child.error = errno;
          node.dirs.push_back(std::move(child));  // seen but unreadable
          continue;
        }
        fill(cfd, child_rel, child);
      }
      node.dirs.push_back(std::move(child));
      continue;
    }
    FileEntry f;
    f.name = name;
    f.type = S_ISREG(st.st_mode)   ? FileEntry::Type::kRegular
             : S_ISLNK(st.st_mode) ? FileEntry::Type::kSymlink
                                   : FileEntry::Type::kOther;
    f.size = static_cast<std::uint64_t>(st.st_size);
    f.allocated = static_cast<std::uint64_t>(st.st_blocks) * 512;
    f.mtime = mtime_of(st);
    f.mode = st.st_mode;
    f.uid = st.st_uid;
    f.gid = st.st_gid;
    if (f.type == FileEntry::Type::kSymlink) {
      char buf[4096];
      ssize_t n = ::readlinkat(dfd, name.c_str(), buf, sizeof(buf));
      if (n > 0) f.link_target.assign(buf, static_cast<std::size_t>(n));
    } else if (f.type == FileEntry::Type::kRegular && f.size <= kMaxManifestBytes &&
               wants_content(name)) {
      std::string text;
      if (read_small_file(dfd, name, kMaxManifestBytes, text)) f.content = std::move(text);
    }
    node.files.push_back(std::move(f));
  }
  ::closedir(d);  // closes dfd
  return true;
}

bool TreeWalker::list_dirs(const std::string& rel,
                           std::vector<std::pair<std::string, double>>& out, std::string* error) {
  int fd = open_rel(root_fd_, rel);
  if (fd < 0) {
    if (errno == EACCES) ++stats_.permission_errors;
    if (error != nullptr) *error = (rel.empty() ? "." : rel) + ": " + std::strerror(errno);
    return false;
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return false;
  }
  ++stats_.dirs_listed;
  if (listed_ != nullptr) listed_->push_back(rel);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    // d_type lets us skip the stat of plain files where the file system tells.
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    names.emplace_back(e->d_name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    struct stat st {};
    ++stats_.stat_calls;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) ++stats_.vanished;
      if (errno == EACCES) ++stats_.permission_errors;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    if (st.st_dev != root_dev_) continue;  // another file system: not walked
    out.emplace_back(name, mtime_of(st));
  }
  ::closedir(d);
  return true;
}

std::vector<std::pair<std::string, double>> subtree_dirs(const DirNode& node,
                                                         const std::string& rel) {
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back(rel, node.mtime);
  for (const auto& c : node.dirs) {
    auto sub = subtree_dirs(c, join(rel, c.name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

const DirNode* find_node(const DirNode& root, const std::string& rel) {
  const DirNode* cur = &root;
  if (rel.empty()) return cur;
  for (auto part : split(rel, '/')) {
    if (part.empty()) continue;
    cur = cur->dir(part);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

}  // namespace ckptmon
