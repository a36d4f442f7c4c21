#pragma once
// Capacity and bandwidth a tier needs by the sizing rule, against what it has
// and delivers. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/policy.hpp"
#include "model/state.hpp"
#include "rules/inputs.hpp"

namespace ckptmon {

// One job's share of a tier's requirement.
struct JobCapacity {
  std::string job;
  // Latest committed checkpoint; a job with none yet uses its biggest
  // checkpoint in progress as a lower bound.
  std::uint64_t latest_bytes = 0;
  // keep_last (fewer when max_age and the observed interval between commits
  // keep fewer) plus the milestones currently kept beyond keep_last.
  double retained_versions = 0;
  double required_bytes = 0;  // latest_bytes x retained_versions x replicas
  std::uint64_t in_progress_bytes = 0;
  // Bytes the job's next checkpoint still has to write here:
  // latest_bytes x replicas - what its save in progress already wrote.
  double next_checkpoint_bytes = 0;
  std::optional<bool> next_fits;  // avail >= next_checkpoint_bytes; nullopt without stats
  // The inode term: files of the latest committed checkpoint (biggest in
  // progress when none) x retained_versions.
  std::uint64_t latest_files = 0;
  double required_files = 0;
};

struct CapacityFigures {
  std::string tier;
  bool has_stats = false;  // size and avail are known (the tier is up and was probed)
  double size_bytes = 0;
  double avail_bytes = 0;
  std::optional<double> used_ratio;  // 1 - avail/size

  std::int64_t concurrent_jobs = 0;
  bool concurrency_observed = true;  // false: set by policy

  // The sizing rule, term by term (ckpt_tier_required_capacity_bytes is the sum).
  double retained_required_bytes = 0;     // sum of jobs' required_bytes
  double temp_write_allowance_bytes = 0;  // ratio x the concurrent jobs' latest checkpoints
  double residue_bytes = 0;               // partial checkpoints found on the tier
  double growth_headroom_bytes = 0;       // ratio x retained_required_bytes
  double required_bytes = 0;

  // What of each term is already on the tier (retained committed checkpoints
  // x replicas, saves in progress, partial ones), capped at the term.
  double present_bytes = 0;
  // required - present, term by term: what avail still has to hold.
  double still_needed_bytes = 0;
  // avail / still_needed; +Inf when nothing more is needed; nullopt without stats.
  std::optional<double> headroom_ratio;
  // Seconds until the least-squares line of avail over the trend window
  // reaches zero; +Inf when avail is not falling; nullopt with too little history.
  std::optional<double> time_to_full_seconds;

  // The next checkpoints of the `concurrent_jobs` jobs with the biggest need.
  double next_checkpoint_bytes = 0;
  std::optional<bool> next_fits;

  // The sizing rule's inode term: the jobs' required_files plus the files of
  // the `concurrent_jobs` biggest next checkpoints (written before retention
  // removes an old one). still_needed_files is what free inodes must still
  // hold: the terms less the retained checkpoints and saves in progress
  // already on the tier. files_known: f_files is above 0 (btrfs and some NFS
  // servers report 0, no fixed inode count) and the tier has stats.
  bool files_known = false;
  double files_total = 0;
  double files_free = 0;
  double required_files = 0;
  double still_needed_files = 0;

  std::vector<JobCapacity> jobs;  // sorted by job
};

// The sizing rule itself, for evaluate_capacity and `ckptmon plan` alike:
// each job's checkpoint bytes x retained versions x replicas, plus the
// temporary-write allowance (ratio x the `concurrent_jobs` biggest jobs'
// checkpoints), the failed-run residue and the growth headroom (ratio x the
// retained term).
struct SizedJob {
  double bytes = 0;              // one checkpoint
  double retained_versions = 0;  // versions kept
};
struct SizingTerms {
  std::vector<double> job_required_bytes;  // per job, in input order
  double retained_required_bytes = 0;
  double temp_write_allowance_bytes = 0;
  double residue_bytes = 0;
  double growth_headroom_bytes = 0;
  double required_bytes = 0;  // the sum of the four terms
};
SizingTerms sizing_terms(std::span<const SizedJob> jobs, double replicas,
                         double temp_write_allowance_ratio, double growth_headroom_ratio,
                         std::int64_t concurrent_jobs, double residue_bytes);

// The bandwidth rule: the mean checkpoint of the `concurrent_writers`
// biggest of `checkpoint_bytes` / allowed window x writers x (1 + overhead).
// 0 when the window is 0. `bytes_per_checkpoint` (optional) gets the mean.
double required_write_bandwidth(std::span<const double> checkpoint_bytes,
                                std::int64_t concurrent_writers, double allowed_window_seconds,
                                double overhead_ratio, double* bytes_per_checkpoint = nullptr);

// `history` holds the tier's samples in any order; the current stats are
// added as a sample at `now` unless the history already has one that recent.
CapacityFigures evaluate_capacity(const CheckpointView& all, const TierState& tier,
                                  std::span<const TierSample> history, const TierPolicy& policy,
                                  double now);

struct BandwidthFigures {
  std::string tier;
  // Mean latest committed checkpoint of the `concurrent_writers` biggest jobs.
  double bytes_per_checkpoint = 0;
  std::int64_t concurrent_writers = 0;
  bool concurrency_observed = true;
  // bytes_per_checkpoint / allowed_window x concurrent_writers x (1 + overhead)
  double required_bytes_per_second = 0;
  // Bytes of committed checkpoints finished within the observe window divided
  // by the time the tier spent writing them (union of their save intervals);
  // nullopt when no such checkpoint has a known, non-zero duration.
  std::optional<double> observed_bytes_per_second;
  std::uint64_t observed_checkpoints = 0;
};

BandwidthFigures evaluate_bandwidth(const CheckpointView& all, const std::string& tier,
                                    const BandwidthPolicy& policy, double now);

// How long a save took: the stated save interval when known, else last shard
// minus first shard; 0 when unknown.
double save_duration(const Checkpoint& c);

}  // namespace ckptmon
