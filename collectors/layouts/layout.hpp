#pragma once
// Layout recognition: from a job's directory tree to the checkpoints in it.
// One recogniser per framework, one file each, listed in layouts/registry.cpp.
// Every function here is pure: no I/O, time comes in the context.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"

namespace ckptmon {

// An in-house format, configured per tier.
struct GenericLayout {
  std::string shard_glob;  // fnmatch(3) pattern for shard files, e.g. "*.bin"
  std::string marker;      // name of the commit marker file, e.g. "COMMITTED"
  std::string step_regex;  // ECMAScript regex on the directory name; group 1 is the step
};

struct LayoutContext {
  double now = 0;  // unix seconds
  // Seconds without a valid marker before in_progress becomes partial.
  double partial_after = 30 * 60;
  const GenericLayout* generic = nullptr;  // nullptr: no generic recogniser on this tier
  // Fill Checkpoint::shard_files (tiers that drain or are drained to); off
  // elsewhere so memory grows with checkpoints, not files.
  bool keep_shard_files = false;
};

// Every checkpoint found under `root` (normally a job directory). Paths in the
// result are relative to `root`; tier and job are left empty for the caller.
// Directories that belong to a recognised checkpoint are not searched for more.
std::vector<Checkpoint> recognise_tree(const DirNode& root, const LayoutContext& ctx);

// Whether the scanner should read this file's text into FileEntry::content
// (manifests, trackers, markers with content). Files larger than
// kMaxManifestBytes are never read.
bool wants_content(std::string_view file_name);
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{4} * 1024 * 1024;

}  // namespace ckptmon
