#pragma once
// Parsing /proc/<pid>/mountinfo (proc(5)) and finding the mount that holds a path.
// Pure functions, tested on strings.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

struct MountInfo {
  int mount_id = 0;
  int parent_id = 0;
  unsigned major = 0;
  unsigned minor = 0;
  std::string root;           // root of the mount within its file system (bind mounts)
  std::string mount_point;    // octal escapes (\040 ...) decoded
  std::string mount_options;  // per-mount options: a read-only bind mount says "ro" here
  std::string fstype;
  std::string source;
  std::string super_options;  // per-superblock options: the file system's own state
};

// Lines that do not follow the format are skipped; `skipped` counts them.
std::vector<MountInfo> parse_mountinfo(std::string_view text, int* skipped = nullptr);

// The mount that `real_path` (canonical, absolute) lives on: the longest mount
// point that is a path prefix of it, preferring one whose device number matches
// `major:minor` of the path; among equals the last listed (the one on top).
const MountInfo* find_mount(const std::vector<MountInfo>& mounts, std::string_view real_path,
                            std::optional<std::pair<unsigned, unsigned>> dev);

// A field as the kernel writes it in mountinfo and mountstats (seq_escape:
// space, tab, newline and backslash as \ooo), decoded. A backslash not
// followed by three octal digits stays as it is.
std::string unescape_mount_field(std::string_view s);

// True when the comma-separated option list contains `opt` exactly.
bool has_option(std::string_view options, std::string_view opt);

}  // namespace ckptmon
