#pragma once
// Access audit findings: checkpoints hold proprietary weights, so who can read
// them and where they live is worth reporting. Plain data.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

enum class FindingKind {
  kWorldReadable,     // the checkpoint directory or a shard is readable by everyone
  kWorldWritable,     // ... writable by everyone
  kForeignOwner,      // owner or group is not the one configured for the job's namespace
  kOutsideNamespace,  // a job directory that no namespace claims
  kResidency,         // the tier's residency label is not allowed for the job's namespace
  kUnreadable,        // a directory the walk could not open or list (EACCES, EIO, ESTALE...)
  kTooDeep,           // a directory deeper than walk_max_depth below the tier root: not walked
  // A job directory that users or groups outside the namespace's project_groups
  // can read (mode bits, a POSIX ACL or an NFSv4 ACL), or whose default ACL
  // will let them read the checkpoints created in it.
  kReadableOutsideProject,
  kAclInvalid,  // a job directory's ACL xattr could not be decoded or read: its readers are unknown
  // A tier with encryption_required whose data ckptmon finds unencrypted at
  // rest or in transit (the rules', not a walk's: rules/evaluate.hpp).
  kNotEncrypted,
  // A checkpoint a `cleanup` event said was removed that the walk still finds
  // on its tier cleanup_verify_after later (the rules', rules/retention.hpp).
  kCleanupUnverified,
};
inline constexpr int kFindingKindCount = 11;
// The kinds a tier's walk (its access audit) reports; the others come from
// the rules cycle (RuleFigures::estate_findings).
inline constexpr bool walk_finding_kind(FindingKind k) {
  return k != FindingKind::kNotEncrypted && k != FindingKind::kCleanupUnverified;
}
std::string_view to_string(FindingKind k);
std::optional<FindingKind> finding_kind_from(std::string_view s);

struct AccessFinding {
  std::string tier;
  std::string job;
  std::string path;  // tier-relative: the checkpoint or the job directory
  FindingKind kind = FindingKind::kWorldReadable;
  std::string detail;
};

// How many of `findings` are of each kind, indexed by FindingKind.
using FindingCounts = std::array<std::uint64_t, kFindingKindCount>;
FindingCounts count_by_kind(const std::vector<AccessFinding>& findings);

}  // namespace ckptmon
