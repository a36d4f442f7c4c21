#pragma once
// What the rules read besides the catalog: the history the store keeps and
// verification results. Plain data; not thread-safe by itself (the daemon
// hands the rules a copy or a const reference on one thread).

#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/state.hpp"

namespace ckptmon {

// One sample of a tier's history, taken each scan.
struct TierSample {
  double t = 0;  // unix seconds
  double size_bytes = 0;
  double avail_bytes = 0;
  std::map<std::string, double> job_stored_bytes;  // by job
  // The rules' figures of the cycle that took the sample (schema 6): what
  // the retention policy says should be gone, how long the oldest of it has
  // waited, the partial checkpoints' bytes and what the sizing rule asks.
  // nullopt: not known (the tier had not been walked, or an older ckptmon
  // wrote the row); reports show null, never 0.
  std::optional<double> cleanup_pending_bytes;
  std::optional<double> cleanup_oldest_age_seconds;
  std::optional<double> partial_bytes;
  std::optional<double> required_capacity_bytes;
};

// Identifies one drain: the jobs' checkpoints on `tier` copied to `to_tier`.
struct DrainKey {
  std::string tier;
  std::string to_tier;
  std::string job;
  // clang-tidy 14 sees a literal 0 in the defaulted comparison.
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const DrainKey&) const = default;
};

// One observation of a drain, kept by the daemon between cycles.
struct DrainSample {
  double t = 0;
  double backlog_bytes = 0;  // bytes still to copy at t
  // Bytes of committed source checkpoints already on the target at t. Goes
  // down when drained checkpoints are deleted from the source, so only its
  // increases count as copying.
  double copied_bytes = 0;
  // Cumulative bytes drained according to the event log (shard_drained); a
  // counter that may reset. NaN when the job has no drain events.
  double drained_total = std::numeric_limits<double>::quiet_NaN();
};

using DrainHistory = std::map<DrainKey, std::vector<DrainSample>>;

// Identifies one checkpoint of the catalog: its path is relative to the tier
// root, so unique within a tier. (Job and step are not: checkpoints without a
// step, or one step saved under two paths, would share a key.)
struct CheckpointKey {
  std::string tier;
  std::string path;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const CheckpointKey&) const = default;
};

// Outcome of integrity verification (issue 4), per checkpoint: true = every
// checksum matched. A checkpoint with no entry has not been verified (or
// carries no checksums).
using Verifications = std::map<CheckpointKey, bool>;

// When a checkpoint became complete: the marker's mtime, else the save end the
// manifest or event log states, else its newest shard. 0 when nothing is known.
double commit_time(const Checkpoint& c);

// When a save started: the stated save start, else the oldest shard.
double save_start_time(const Checkpoint& c);

// The committed ones of the checkpoints of one (tier, job), oldest first.
// Ordered by step when every one has a step, otherwise by commit time (ties
// by path).
std::vector<const Checkpoint*> committed_oldest_first(std::span<const Checkpoint* const> job);

// The checkpoints of `tier` by job, in catalog order: one pass over the
// catalog, so per-job rules cost O(checkpoints) in total, not per job.
using JobCheckpoints = std::map<std::string, std::vector<const Checkpoint*>>;
JobCheckpoints group_by_job(const CheckpointView& all, const std::string& tier);

// Most distinct jobs whose saves on `tier` overlapped in time, over the
// checkpoints in the catalog (save start to commit time, closed intervals); at
// least 1 when the tier has any checkpoint, 0 when it has none.
std::int64_t observed_concurrency(const CheckpointView& all, const std::string& tier);

// What the integrity verifier found for `checkpoints` (State::integrity):
// false for a checkpoint that failed, true for one that passed; absent for
// the ones not verified.
Verifications verifications_of(const State& state, const CheckpointView& checkpoints);

// Cumulative bytes the event logs report drained (shard_drained), per drain
// source, target and job, over the checkpoints the event catalog keeps.
std::map<DrainKey, double> drained_totals_of(const State& state);

}  // namespace ckptmon
