#pragma once
// A directory tree as the scanner saw it: names, types, sizes, mtimes and
// ownership from lstat-like calls (symlinks are entries, never followed), plus
// the text of small manifest files. Layout recognisers are pure functions of
// this. Plain data; not thread-safe by itself.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.hpp"

namespace ckptmon {

struct FileEntry {
  enum class Type : std::uint8_t { kRegular, kSymlink, kOther };
  std::string name;
  Type type = Type::kRegular;
  std::uint64_t size = 0;
  std::uint64_t allocated = 0;  // st_blocks * 512
  double mtime = 0;             // unix seconds with fraction
  std::uint32_t mode = 0;       // st_mode
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string link_target;  // for symlinks: what readlink() says (never followed)
  // Text of the file when the layouts asked for it (see wants_content()) and it
  // was small enough; nullopt otherwise.
  std::optional<std::string> content;
};

struct DirNode {
  std::string name;
  double mtime = 0;
  std::uint32_t mode = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<FileEntry> files;  // every non-directory entry, sorted by name
  std::vector<DirNode> dirs;     // subdirectories on the same device, sorted by name
  // Set when the scanner did not list this directory again because it holds a
  // committed checkpoint whose directories' mtimes have not changed: `files`
  // and `dirs` are then empty and `reused` is that checkpoint as last seen
  // (its `path` relative to the tree root handed to the recogniser).
  std::shared_ptr<const Checkpoint> reused;
  // errno when the walker saw this directory but could not open or list it
  // (EACCES, EIO, ESTALE...; never ENOENT): `files` and `dirs` are then
  // unknown, not empty. 0 when it was listed (or reused).
  int error = 0;
  // Set when this directory lies deeper than the walk's depth limit below the
  // tier root: not opened, `files` and `dirs` unknown (like `error`).
  bool too_deep = false;

  const FileEntry* file(std::string_view n) const;
  const DirNode* dir(std::string_view n) const;
};

}  // namespace ckptmon
