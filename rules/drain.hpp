#pragma once
// Drain of a tier that copies its checkpoints to another (`drains_to`): bytes
// still to copy per job, the rate they are copied at, time to empty, and
// whether checkpoints arrive faster than they drain. Pure functions;
// thread-safe.

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/policy.hpp"
#include "rules/inputs.hpp"

namespace ckptmon {

// A committed source checkpoint not yet fully on the target.
struct PendingCheckpoint {
  std::string path;  // relative to the source tier root
  std::int64_t step = -1;
  std::uint64_t bytes = 0;          // size on the source
  std::uint64_t pending_bytes = 0;  // of which still to copy
  double committed_at = 0;          // commit time on the source
};

// One (source tier, target tier, job).
struct DrainFigures {
  std::string tier;
  std::string to_tier;
  std::string job;
  std::uint64_t backlog_bytes = 0;  // ckpt_drain_backlog_bytes
  std::uint64_t copied_bytes = 0;   // bytes of committed source checkpoints already on the target
  std::uint64_t pending_checkpoints = 0;
  // Pending checkpoints beyond the oldest: each is a checkpoint that arrived
  // before the previous one finished draining (ckpt_drain_overlapping_checkpoints).
  std::int64_t overlapping_checkpoints = 0;
  double oldest_pending_since = 0;  // commit time of the oldest pending checkpoint; 0 = none
  double oldest_pending_age = 0;    // seconds; 0 when nothing is pending, never negative
  // Bytes per second copied over the rate window; nullopt until two
  // observations span some time.
  std::optional<double> rate_bytes_per_second;
  bool rate_from_events = false;  // from the event log's drained-bytes counter
  // 0 when the backlog is empty, +Inf when it is not and nothing is being
  // copied, nullopt when the rate is unknown.
  std::optional<double> time_to_empty_seconds;
  double drained_total = std::numeric_limits<double>::quiet_NaN();  // as given
  std::vector<PendingCheckpoint> pending;                           // oldest first

  DrainKey key() const { return DrainKey{tier, to_tier, job}; }
};

// Bytes of `source` not on `target` (null: not there at all). With file lists
// on both sides: every source file missing on the target counts whole, a
// shorter one counts its missing tail (matched by relative path). Otherwise
// the difference of the totals.
std::uint64_t bytes_to_copy(const Checkpoint& source, const Checkpoint* target);

// Which tier copies its checkpoints where: the two fields of the tier's
// configuration the drain rule reads (drains_to empty: it does not drain).
struct DrainRoute {
  std::string tier;
  std::string drains_to;
};

// One entry per job with a committed checkpoint on the source tier, sorted by
// job; empty when the tier does not drain. Source and target checkpoints are
// matched by job and step, or by path when the source has no step.
// `drained_totals` holds the event log's cumulative drained bytes where known.
std::vector<DrainFigures> evaluate_drain(const CheckpointView& all, const DrainRoute& source,
                                         const DrainHistory& history, const DrainPolicy& policy,
                                         double now,
                                         const std::map<DrainKey, double>& drained_totals = {});

// When the daemon first saw a checkpoint pending, on the monotonic clock,
// and the age it had then (from the wall clock and the commit time).
struct PendingAnchor {
  double mono = 0;
  double age = 0;
};
// By (drain, checkpoint path). Rules-cycle state between cycles.
using PendingAnchors = std::map<std::pair<DrainKey, std::string>, PendingAnchor>;

// Makes each figure's oldest_pending_age a duration the daemon measures
// itself: for every pending checkpoint, its age when first seen pending
// (wall-clock `now` minus its commit time, at least 0) plus the monotonic
// time since (`mono`); the oldest is the largest. A wall clock that jumps
// back neither resets nor shrinks it. Anchors of checkpoints no longer
// pending are forgotten.
void apply_monotonic_ages(std::span<DrainFigures> figures, PendingAnchors& anchors, double now,
                          double mono);

// Appends this cycle's observations to the history and forgets samples older
// than `keep_seconds`. A series whose last sample lies after `now` (the clock
// jumped back) starts over, so rates never mix the two time lines. Returns
// the samples appended, one per figure, in the figures' order.
std::vector<std::pair<DrainKey, DrainSample>> record_drain_samples(
    DrainHistory& history, std::span<const DrainFigures> figures, double now, double keep_seconds);

}  // namespace ckptmon
