#pragma once
// The checkpoint catalog of one tier as the loop thread holds it, and how a
// new scan result is merged into it. Pure data and pure functions; not
// thread-safe by itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/access.hpp"
#include "model/checkpoint.hpp"
#include "model/copy_on_write.hpp"

namespace ckptmon {

struct WalkLive;  // model/walk_live.hpp

// Cumulative-bucket histogram data as Prometheus wants it.
struct HistogramData {
  std::vector<double> bounds;          // upper bounds, ascending, +Inf implied
  std::vector<std::uint64_t> buckets;  // per-bucket (not cumulative) counts; size bounds+1
  double sum = 0;
  std::uint64_t count = 0;

  explicit HistogramData(std::vector<double> b = {})
      : bounds(std::move(b)), buckets(bounds.size() + 1, 0) {}
  void observe(double v);
};

// Buckets for completion skew, seconds: from sub-second (healthy) to an hour
// (one rank finishing long after the others).
std::vector<double> skew_buckets();

// Cost and outcome of the walks of one tier.
struct ScanCounters {
  std::uint64_t scans = 0;
  std::uint64_t dirs_listed = 0;  // totals since start
  std::uint64_t stat_calls = 0;
  std::uint64_t permission_errors = 0;
  std::uint64_t vanished = 0;
  double last_duration_seconds = 0;
  std::uint64_t last_calls = 0;  // metadata calls of the last walk
  double last_finished = 0;      // unix seconds; 0 = never
  std::string last_error;        // the tier root could not be walked
};

// A directory the walk saw (or walked before) but could not open or list:
// what lies below it is unknown, not gone.
struct UnreadableDir {
  std::string job;        // the job it is in or is; empty above the job level
  std::string path;       // tier-relative
  int error = 0;          // errno; 0 for a directory too deep to walk
  bool too_deep = false;  // deeper than walk_max_depth below the root: not walked
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const UnreadableDir&) const = default;
};

// True when tier-relative paths `a` and `b` are the same or one is inside the other.
bool paths_overlap(const std::string& a, const std::string& b);

struct TierCatalog {
  std::vector<Checkpoint> checkpoints;  // sorted by (job, path)
  // The access audit of the last complete walk (null before one). Shared with
  // the walker's memory, which re-reports the findings of the checkpoints it
  // does not list again from it: held once, not copied per walk.
  std::shared_ptr<const std::vector<AccessFinding>> findings;
  std::set<std::string> jobs;             // every job directory seen, with or without checkpoints
  std::vector<UnreadableDir> unreadable;  // of the last complete walk, sorted by path
  ScanCounters scan;
  bool scanned = false;  // a scan result (or the stored catalog) is present
  bool stale = false;    // the running scan passed its deadline
  // Non-empty while the tier root is not the tree the first walk walked (its
  // mount gone, its symlink re-pointed): why, starting "mount gone" or "root
  // changed". The checkpoints are kept as last seen, flagged unreadable; the
  // tier is down with this reason.
  std::string root_changed;
  // The tier's metadata calls as they happen (in flight, durations); null
  // until the collector hands it over. Points at atomics the walk updates.
  std::shared_ptr<const WalkLive> walk_live;
  std::map<std::string, HistogramData> skew_by_job;  // ckpt_completion_skew_seconds
  // Checkpoints whose record changed since the store last saw them, and
  // paths that disappeared; the daemon hands these to the store.
  std::vector<Checkpoint> changed;
  std::vector<std::string> removed;
  // Verified removals since the daemon started: checkpoints a complete walk
  // no longer found where nothing was unreadable (ckpt_removed_*_total).
  std::uint64_t removed_checkpoints_total = 0;
  std::uint64_t removed_bytes_total = 0;
};

// What a completed scan found.
struct ScanOutcome {
  std::vector<Checkpoint> checkpoints;                         // tier, job, path set
  std::shared_ptr<const std::vector<AccessFinding>> findings;  // null when the walk did not finish
  std::set<std::string> jobs;
  // Directories that could not be read. The scan holds no checkpoint at,
  // inside or around them: merge_scan keeps the catalog's records there.
  std::vector<UnreadableDir> unreadable;
  std::uint64_t dirs_listed = 0;
  std::uint64_t stat_calls = 0;
  std::uint64_t permission_errors = 0;
  std::uint64_t vanished = 0;
  double duration_seconds = 0;
  std::uint64_t calls = 0;  // metadata calls made
  bool root_ok = true;
  bool stalled = false;  // calls stopped returning: the walk was given up (root_ok false)
  // Non-empty when the root is not the tree first walked: not walked
  // (root_ok false), the catalog is kept and flagged (TierCatalog::root_changed).
  std::string root_changed;
  std::string error;
};

// Merges `scan` into `cat` at time `now`: keeps first_seen and skew_observed
// of checkpoints already known, sets last_seen, counts the completion skew of
// each checkpoint the first time it is seen committed, and lists what changed
// and what disappeared. A scan whose root could not be walked changes no
// checkpoint (the tier is unreachable, not empty); one whose root is not the
// tree first walked (scan.root_changed) flags them all unreadable. A known checkpoint at, in
// or around a directory of scan.unreadable is kept as it was, flagged
// `unreadable`, neither removed nor counted again.
void merge_scan(TierCatalog& cat, ScanOutcome scan, double now);
// The same on a catalog that published snapshots share: a walk that reached
// the root replaces the checkpoints, so they are not copied first (the copy
// made for the change holds everything else; the checkpoints come from the
// scan and, for those kept, from the shared catalog).
void merge_scan(CopyOnWrite<TierCatalog>& cat, ScanOutcome scan, double now);

// True when two records agree in everything the store keeps (not last_seen).
bool same_record(const Checkpoint& a, const Checkpoint& b);

// Every checkpoint state, in enum order.
inline constexpr std::array<CkptState, 3> kAllCkptStates = {
    CkptState::kInProgress, CkptState::kCommitted, CkptState::kPartial};

// What one job holds in one tier: the roll-up behind the landing page,
// /api/v1/jobs and the ckpt_* per-job metrics.
struct JobSummary {
  std::array<std::uint64_t, kAllCkptStates.size()> by_state{};  // indexed by CkptState
  std::uint64_t checkpoints = 0;
  std::uint64_t stored_bytes = 0;   // all states
  std::uint64_t partial_bytes = 0;  // partial checkpoints only
  // The latest committed checkpoint: the committed one with the highest step
  // (a step that could not be parsed, -1, loses to any known one); among
  // equal steps the one written last (last_write). Null when the job has no
  // committed checkpoint. Points into the catalog it was summarized from.
  const Checkpoint* latest_committed = nullptr;
  // The job directory, or a directory in it, could not be read in the last
  // walk, or a checkpoint of the job is a record kept from an earlier walk.
  bool unreadable = false;

  std::uint64_t count(CkptState s) const { return by_state[static_cast<std::size_t>(s)]; }
  // The step of latest_committed, or -1 when there is none or it is unknown.
  std::int64_t latest_committed_step() const {
    return latest_committed != nullptr ? latest_committed->step : -1;
  }
};

// Per job of `cat`, by job name: every job directory seen (cat.jobs), with or
// without checkpoints, and every job a checkpoint names.
std::map<std::string, JobSummary> summarize_jobs(const TierCatalog& cat);

}  // namespace ckptmon
