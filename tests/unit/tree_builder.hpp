#pragma once
// Builds DirNode trees for layout tests the way the scanner hands them over:
// directories and files with sizes, mtimes, optional manifest text, symlinks
// with their target, and reused stubs. Adding an entry raises its parent
// directories' mtimes to the entry's (a new entry changes its directory).
// Not thread-safe. Also RootDir: a real directory opened the way the
// scanner opens a tier root, for the tree walk tests.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"

namespace ckptmon::testing {

class TreeBuilder {
 public:
  explicit TreeBuilder(std::string root_name = "job", double root_mtime = 0) {
    root_.name = std::move(root_name);
    root_.mtime = root_mtime;
  }

  TreeBuilder& dir(std::string_view path, double mtime) {
    ensure_dir(path, mtime);
    return *this;
  }

  // A regular file of `size` bytes; allocated is `size` rounded up to 4 KiB.
  TreeBuilder& file(std::string_view path, std::uint64_t size, double mtime,
                    std::optional<std::string> content = std::nullopt) {
    add(path, FileEntry::Type::kRegular, size, (size + 4095) / 4096 * 4096, mtime,
        std::move(content));
    return *this;
  }

  // A zero-filled sparse file: no blocks allocated.
  TreeBuilder& sparse(std::string_view path, std::uint64_t size, double mtime) {
    add(path, FileEntry::Type::kRegular, size, 0, mtime, std::nullopt);
    return *this;
  }

  // A small text file whose content the scanner read (a manifest or tracker).
  TreeBuilder& text(std::string_view path, std::string content, double mtime) {
    const auto size = content.size();
    add(path, FileEntry::Type::kRegular, size, (size + 4095) / 4096 * 4096, mtime,
        std::move(content));
    return *this;
  }

  // A symlink; content holds the target as read by readlink(2).
  TreeBuilder& symlink(std::string_view path, std::string target, double mtime) {
    const auto size = target.size();
    add(path, FileEntry::Type::kSymlink, size, 0, mtime, std::move(target));
    return *this;
  }

  // A directory the scanner did not list again: empty, with the checkpoint as last seen.
  TreeBuilder& reused(std::string_view path, Checkpoint c, double mtime) {
    DirNode& d = ensure_dir(path, mtime);
    d.reused = std::make_shared<const Checkpoint>(std::move(c));
    return *this;
  }

  DirNode build() const {
    DirNode copy = root_;
    sort(copy);
    return copy;
  }

 private:
  static void sort(DirNode& d) {
    std::sort(d.files.begin(), d.files.end(),
              [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
    std::sort(d.dirs.begin(), d.dirs.end(),
              [](const DirNode& a, const DirNode& b) { return a.name < b.name; });
    for (auto& sub : d.dirs) sort(sub);
  }

  // Walks/creates `path` (relative to the root) and raises every directory
  // on the way to `mtime`.
  DirNode& ensure_dir(std::string_view path, double mtime) {
    DirNode* d = &root_;
    d->mtime = std::max(d->mtime, mtime);
    while (!path.empty()) {
      const auto slash = path.find('/');
      const std::string_view part = path.substr(0, slash);
      auto it = std::find_if(d->dirs.begin(), d->dirs.end(),
                             [&](const DirNode& n) { return n.name == part; });
      if (it == d->dirs.end()) {
        DirNode n;
        n.name = std::string(part);
        d->dirs.push_back(std::move(n));
        it = d->dirs.end() - 1;
      }
      d = &*it;
      d->mtime = std::max(d->mtime, mtime);
      if (slash == std::string_view::npos) break;
      path.remove_prefix(slash + 1);
    }
    return *d;
  }

  void add(std::string_view path, FileEntry::Type type, std::uint64_t size, std::uint64_t allocated,
           double mtime, std::optional<std::string> content) {
    const auto slash = path.rfind('/');
    DirNode& parent = slash == std::string_view::npos ? ensure_dir("", mtime)
                                                      : ensure_dir(path.substr(0, slash), mtime);
    FileEntry f;
    f.name = std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
    f.type = type;
    f.size = size;
    f.allocated = allocated;
    f.mtime = mtime;
    f.mode = type == FileEntry::Type::kSymlink ? 0120777 : 0100644;
    if (type == FileEntry::Type::kSymlink) {
      f.link_target = content.value_or("");  // symlinks: the readlink() target
    } else {
      f.content = std::move(content);
    }
    parent.files.push_back(std::move(f));
  }

  DirNode root_;
};

// A directory opened as the scanner opens a tier root (O_DIRECTORY), with
// its device, closed at the end of the scope.
struct RootDir {
  explicit RootDir(const std::string& path) {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st {};
    ::fstat(fd, &st);
    dev = st.st_dev;
  }
  ~RootDir() { ::close(fd); }
  RootDir(const RootDir&) = delete;
  RootDir& operator=(const RootDir&) = delete;
  int fd;
  dev_t dev;
};

inline const Checkpoint* find_ckpt(const std::vector<Checkpoint>& all, std::string_view path) {
  for (const auto& c : all) {
    if (c.path == path) return &c;
  }
  return nullptr;
}

inline std::uint64_t component(const Checkpoint& c, Component comp) {
  return c.component_bytes[static_cast<std::size_t>(comp)];
}

}  // namespace ckptmon::testing
