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

#include "config/config.hpp"
#include "model/checkpoint.hpp"
#include "rules/inputs.hpp"
#include "rules/policy.hpp"

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

// One entry per job with a committed checkpoint on the source tier, sorted by
// job; empty when the tier does not drain. Source and target checkpoints are
// matched by job and step, or by path when the source has no step.
// `drained_totals` holds the event log's cumulative drained bytes where known.
std::vector<DrainFigures> evaluate_drain(std::span<const Checkpoint> all, const TierConfig& source,
                                         const DrainHistory& history, const DrainPolicy& policy,
                                         double now,
                                         const std::map<DrainKey, double>& drained_totals = {});

// Appends this cycle's observations to the history and forgets samples older
// than `keep_seconds`. A series whose last sample lies after `now` (the clock
// jumped back) starts over, so rates never mix the two time lines. Returns
// the samples appended, one per figure, in the figures' order.
std::vector<std::pair<DrainKey, DrainSample>> record_drain_samples(
    DrainHistory& history, std::span<const DrainFigures> figures, double now, double keep_seconds);

}  // namespace ckptmon
