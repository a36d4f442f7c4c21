#pragma once
// The daemon's configuration: what the YAML file says, validated, with defaults.
// Immutable once loaded; a reload builds a new Config and swaps it in.

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "config/gpu_config.hpp"
#include "config/network_config.hpp"
#include "config/yaml_reader.hpp"
#include "rules/policy.hpp"
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
};

struct TierConfig {
  std::string name;
  std::string path;  // absolute; need not exist (a missing path is a tier that is down)
  TierRole role = TierRole::kRapid;
  std::string drains_to;  // name of another tier, or empty
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
  std::optional<GenericLayoutConfig> layout;
  // Access audit: a label for where this tier lives (e.g. a region) and the
  // namespaces that claim its jobs, in order (the first match wins).
  std::string residency;
  std::vector<NamespaceRule> namespaces;
  // The rules' per-tier knobs: retention, sizing, bandwidth, drain (docs/rules.md).
  TierPolicy policy;
};

struct GlobalConfig {
  std::string state_dir = "/var/lib/ckptmon";
  Duration scan_interval = std::chrono::seconds(15);
  // Deadline for one blocking probe of one tier (statfs).
  Duration probe_timeout = std::chrono::seconds(10);
  // Deadline for one walk of one tier; past it the tier's catalog is marked
  // stale while the walk goes on in the background.
  Duration scan_timeout = std::chrono::minutes(10);
  // Where procfs and sysfs are mounted (`procfs`, `sysfs`; `proc_path` is
  // the older name of `procfs`); tests point them at fixture trees.
  std::string proc_path = "/proc";
  std::string sys_path = "/sys";
  // Upper bound on threads doing blocking file-system work. A probe stuck on a
  // hung mount holds one thread until the kernel returns.
  int worker_threads = 16;
  // Event logs (manifests) are polled this often; inotify wakes the tailer
  // sooner where it works (local file systems).
  Duration tail_interval = std::chrono::seconds(1);
  // Deadline for one pass of the tailer over one manifest glob.
  Duration tail_timeout = std::chrono::minutes(5);
  // Event lines longer than this (newline not counted) are skipped and
  // counted as too_long.
  std::uint64_t max_line_bytes = 64 * 1024;
};

// Checkpoint event logs to tail (docs/events.md): every regular file matching
// `glob` (glob(7), absolute). Events without a `tier` field belong to `tier`.
struct ManifestConfig {
  std::string glob;
  std::string tier;  // empty: events must name their tier
};

// The background verifier that re-reads shards whose events carry checksums
// and the files listed in Megatron integrity.json manifests.
struct IntegrityConfig {
  bool enabled = true;
  std::uint64_t bytes_per_second = 50ull * 1024 * 1024;  // read budget of the verifier
  Duration interval = std::chrono::seconds(30);          // how often it looks for new work
  // A read that returns no bytes for this long is stuck (hung mount):
  // ckptmon_integrity_stuck_reads, one log line.
  Duration read_deadline = std::chrono::hours(1);
};

struct Config {
  std::string source;  // file the config was read from, for messages
  GlobalConfig global;
  std::vector<TierConfig> tiers;
  HistoryPolicy history;    // top-level `history`: how tier samples age
  AlertingConfig alerting;  // top-level `alerting`: thresholds, Alertmanager
  std::vector<ManifestConfig> manifests;
  IntegrityConfig integrity;
  GpuConfig gpu;  // top-level `gpu`: utilisation source and job mapping
  NetworkConfig network;

  const TierConfig* find_tier(std::string_view name) const;
};

using LoadResult = ConfigResult<Config>;

// Compiles a job regex, accepting a named group written (?<job>...) or
// (?P<job>...) (std::regex has no named groups): it becomes a plain group
// whose index is returned in `group`. Returns an error text or empty.
std::string compile_job_regex(const std::string& text, JobRule& rule);

// Parses configuration text; `file` is used in error messages only.
LoadResult parse_config(std::string_view text, const std::string& file);
// Reads and parses a file; an unreadable file is an error like any other.
LoadResult load_config_file(const std::string& path);

}  // namespace ckptmon
