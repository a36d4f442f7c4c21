#pragma once
// Walking one tier: openat/fdopendir/fstatat(AT_SYMLINK_NOFOLLOW) from the
// tier root, never following a symlink, never leaving the root's device,
// treating entries that vanish mid-walk as normal. Builds DirNode trees for the
// layout recognisers and skips re-listing committed checkpoints that did not
// change. Not thread-safe: one walk of a tier at a time (the collector runner
// guarantees it).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/access.hpp"
#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"

namespace ckptmon {

struct WalkStats {
  std::uint64_t dirs_listed = 0;
  std::uint64_t stat_calls = 0;
  std::uint64_t permission_errors = 0;
  std::uint64_t vanished = 0;         // entries gone between readdir and stat
  std::uint64_t reused = 0;           // committed checkpoints not listed again
};

// What earlier walks of one tier remember: for each committed checkpoint
// directory (tier-relative path), the record and the mtimes of all its
// directories. If none changed, the checkpoint is not listed again.
struct WalkMemory {
  struct Frozen {
    std::shared_ptr<const Checkpoint> checkpoint;  // path relative to its job root
    std::vector<std::pair<std::string, double>> dirs;  // tier-relative path, mtime
    std::vector<AccessFinding> findings;  // the access audit of that walk
  };
  std::unordered_map<std::string, Frozen> frozen;
};

class TreeWalker {
 public:
  // `root_fd` is an open directory descriptor of the tier root.
  TreeWalker(int root_fd, dev_t root_dev, const WalkMemory* memory, WalkStats& stats);

  // Lists the directory at tier-relative `rel` (no leading slash; "" = root)
  // and everything below it into `out`. Returns false, with `error`, when
  // `rel` itself cannot be opened; problems below it are counted, not fatal.
  bool build(const std::string& rel, DirNode& out, std::string* error);

  // When set, every directory listed (not reused) is appended, tier-relative.
  void record_listed(std::vector<std::string>* out) { listed_ = out; }

  // Lists the entries of one directory without descending: (name, is_dir,
  // mtime) for subdirectories on the same device. Used to find job roots.
  bool list_dirs(const std::string& rel, std::vector<std::pair<std::string, double>>& out,
                 std::string* error);

 private:
  bool fill(int dfd, const std::string& rel, DirNode& node);
  bool try_reuse(const std::string& rel, double mtime, DirNode& node);

  int root_fd_;
  dev_t root_dev_;
  const WalkMemory* memory_;
  WalkStats& stats_;
  std::vector<std::string>* listed_ = nullptr;
};

// Tier-relative directories of the subtree at `node` (whose own path is
// `rel`), with their mtimes: what WalkMemory needs to freeze a checkpoint.
std::vector<std::pair<std::string, double>> subtree_dirs(const DirNode& node,
                                                         const std::string& rel);

// The node at `rel` (slash-separated, relative to `root`), or nullptr.
const DirNode* find_node(const DirNode& root, const std::string& rel);

// Reads a small regular file `name` relative to `dfd` (AT_FDCWD: as given),
// never following a symlink and never blocking on a FIFO or device. False when
// it cannot be opened, is not a regular file, is larger than `max_bytes` or a
// read fails.
bool read_small_file(int dfd, const std::string& name, std::uint64_t max_bytes,
                     std::string& out);

}  // namespace ckptmon
