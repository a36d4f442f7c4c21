#pragma once
// A tier as the configuration describes it: where it is, what role it plays,
// where its jobs are and the rules' knobs for it. Plain data (config/ reads
// YAML into it); immutable once loaded, safe to read from several threads.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "model/policy.hpp"
#include "util/duration.hpp"

namespace ckptmon {

enum class TierRole { kStaging, kRapid, kMilestone, kCapacity, kDeletion };
std::string_view to_string(TierRole r);

// Where jobs are under a tier root: the directory at `depth` below the root,
// or the directories whose root-relative path matches `regex` in full, the job
// being the named group `job` (or the first group).
struct JobRule {
  int depth = 1;
  std::string regex_text;  // empty: use depth
  std::shared_ptr<const std::regex> regex;
  int group = 1;      // capture group holding the job name
  int max_depth = 4;  // deepest directory tested against the regex
};

// How changes are noticed: inotify on local file systems, polling directory
// mtimes on network file systems (inotify sees nothing written by other clients).
enum class WatchMode { kAuto, kInotify, kPoll };

// An in-house layout (see collectors/layouts/layout.hpp).
struct GenericLayoutConfig {
  std::string shard_glob;
  std::string marker;
  std::string step_regex;
};

// Who may own a job's checkpoints, and where they may live: jobs whose name
// matches `job_regex` belong to this namespace.
struct NamespaceRule {
  std::string job_regex;
  std::shared_ptr<const std::regex> regex;
  std::string owner;                   // user name or numeric uid; empty = any
  std::string group;                   // group name or numeric gid; empty = any
  std::vector<std::string> residency;  // allowed tier residency labels; empty = any
  // The groups whose members may read the namespace's job directories, as
  // configured (names or numeric gids); empty = no reader audit. Anyone else
  // who can read (mode bits, POSIX or NFSv4 ACL) is a readable_outside_project
  // finding.
  std::vector<std::string> project_groups;
  std::vector<gid_t> project_gids;  // project_groups resolved when the configuration was read
};

struct TierConfig {
  std::string name;
  std::string path;  // absolute; need not exist (a missing path is a tier that is down)
  TierRole role = TierRole::kRapid;
  std::string drains_to;  // name of another tier, or empty
  // Whether a copy here survives the loss of the node that wrote it (YAML
  // `durable`): false for node-local storage. Default: false for role
  // staging, true otherwise. The durable recovery point counts only copies
  // on durable tiers (rules/estate.hpp).
  bool durable = true;
  Duration partial_after = std::chrono::minutes(30);
  JobRule jobs;
  // This instance walks only the jobs whose name hashes to shard_index mod
  // shard_count, so a big shared tier is walked once across instances.
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  WatchMode watch = WatchMode::kAuto;
  // Metadata calls of one walk in flight at once (1..256); 0: from the file
  // system type in mountinfo (16 on network file systems, 1 on local ones).
  int walk_concurrency = 0;
  // Directories deeper than this below the tier root are not walked: each is
  // reported (a too_deep finding) and what is below it is unknown, not empty.
  int walk_max_depth = 64;
  std::optional<GenericLayoutConfig> layout;
  // Access audit: a label for where this tier lives (e.g. a region) and the
  // namespaces that claim its jobs, in order (the first match wins).
  std::string residency;
  std::vector<NamespaceRule> namespaces;
  // The tier's data must be encrypted at rest (and in transit, on a network
  // file system): detection saying "none" is a not_encrypted finding and
  // CheckpointTierNotEncrypted. What is detected is never taken from here.
  bool encryption_required = false;
  // The rules' per-tier knobs: retention, sizing, bandwidth, drain (docs/rules.md).
  TierPolicy policy;
  // The tier's identity across reloads is its name plus this epoch: the
  // Config::generation of the load that added the tier or pointed it at its
  // current root (stamp_generation, model/settings.hpp). A collector's job
  // carries the epoch it was prepared under; a result whose epoch is no longer
  // the tier's is dropped. 0 for a configuration never stamped (one-shot
  // commands, tests).
  std::uint64_t generation = 0;
};

}  // namespace ckptmon
