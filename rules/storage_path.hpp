#pragma once
// The storage path per checkpoint and per (tier, job), kept between rules
// cycles (docs/rules.md, "The storage path"): each committed checkpoint's
// window I/O (rules/window_io.hpp), computed once the tier's counters cover
// its window (or can no longer), and its slow-checkpoint verdict
// (rules/slow_cause.hpp), counted once per checkpoint; and each (tier, job)'s
// restore estimate against its recovery objective
// (rules/restore_estimate.hpp). The tracker is not thread-safe: the rules
// cycle owns it on the loop thread and publishes copies.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/events.hpp"
#include "model/io.hpp"
#include "model/policy.hpp"
#include "model/restore_drill.hpp"
#include "rules/inputs.hpp"
#include "rules/restore_estimate.hpp"
#include "rules/slow_cause.hpp"
#include "rules/window_io.hpp"

namespace ckptmon {

// Seconds after a save window ends that its I/O figures wait for the
// counters' next sample before they are settled as unknown.
inline constexpr double kWindowIoGraceSeconds = 600;

// One catalog entry's storage path, shown in /api/v1/checkpoints. Kept for
// every committed checkpoint (100,000 at a large site): the tier and the path
// are its key (CheckpointKey), the step is the catalog's.
struct CheckpointStoragePath {
  std::string job;
  std::optional<WindowIo> io;          // nullopt until settled (or when nothing dates the save)
  std::optional<SlowVerdict> verdict;  // set with `io`
  // Counted in slow_counts already: a checkpoint counts once, even when a
  // later event log re-dates its window.
  bool counted = false;
};

// The verdict of the newest judged committed checkpoint of a (tier, job).
struct LastSlowFigures {
  std::string tier;
  std::string job;
  std::int64_t step = -1;
  std::string path;
  SlowVerdict verdict;
};

struct RestoreFigures {
  std::string tier;
  std::string job;
  std::int64_t step = -1;
  std::string path;
  double bytes = 0;
  double files = 0;
  std::optional<RestoreEstimate> estimate;  // nullopt: no read throughput known
  double objective_seconds = 0;             // 0 = no objective configured
};

// The read throughput the job's last successful restore achieved.
struct MeasuredRestore {
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  double bytes_per_second = 0;
};

struct SlowCountKey {
  std::string tier;
  std::string job;
  SlowCause cause = SlowCause::kUnknown;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const SlowCountKey&) const = default;
};

struct StoragePathFigures {
  std::vector<LastSlowFigures> last_slow;             // by (tier, job)
  std::map<SlowCountKey, std::uint64_t> slow_counts;  // slow checkpoints counted so far
  std::vector<RestoreFigures> restore;             // every (tier, job) with a restorable checkpoint
  std::vector<MeasuredRestore> measured_restores;  // by job
  // Per tier with a measured source: bytes the tier's counters saw written
  // during the save windows of the committed checkpoints that ended within
  // the bandwidth observe window, divided by those windows' total length.
  // It replaces the mtime-derived observed bandwidth (the rules cycle swaps
  // it into BandwidthFigures and keeps the old figure below).
  std::map<std::string, double> measured_write_bytes_per_second;
  // The mtime-derived observed bandwidth of every tier, as evaluate_bandwidth
  // gave it (ckpt_tier_mtime_write_bandwidth_bytes_per_second).
  std::map<std::string, std::optional<double>> mtime_write_bytes_per_second;
};

class StoragePathTracker {
 public:
  // Slow checkpoints committed before `count_from` (unix seconds) are judged
  // but not counted: a restart does not count the catalog's history again.
  void set_count_from(double t) { count_from_ = t; }

  // `events`, `io` and `drills` may be null (not loaded, not collected). A
  // drill counts for the restore estimate while it is fresh: read in full,
  // and at most 2 x the tier's restore_drill.every old. `tiers` are
  // the configured tiers; checkpoints elsewhere and on `deletion_tiers` are
  // skipped.
  StoragePathFigures update(const CheckpointView& checkpoints, const std::set<std::string>& tiers,
                            const std::set<std::string>& deletion_tiers, const EventCatalog* events,
                            const IoState* io, const Verifications& verified,
                            const RulesPolicy& policy, double now,
                            const DrillState* drills = nullptr);

  using Entries = std::map<CheckpointKey, CheckpointStoragePath>;
  const Entries& checkpoints() const { return *entries_; }
  // checkpoints() to publish, immutable: the tracker's own map itself, not a
  // copy. An update() that changes an entry after a snapshot() first copies
  // the map (copy on write), so a published snapshot never changes and an
  // unchanged tracker is held once, however many snapshots share it.
  std::shared_ptr<const Entries> snapshot();

 private:
  // The entries, to change: copies them first when a snapshot shares them.
  Entries& writable();

  double count_from_ = 0;
  std::shared_ptr<Entries> entries_ = std::make_shared<Entries>();
  bool published_ = false;  // a snapshot() shares *entries_
  std::map<SlowCountKey, std::uint64_t> counts_;
  std::map<std::string, double> best_restore_read_;  // by tier
};

}  // namespace ckptmon
