#pragma once
// Every derived figure of one evaluation cycle, computed from the catalog, the
// history, the policy and `now`. The daemon calls evaluate_rules() once per
// cycle on its loop thread (or a worker) and publishes the result. Pure;
// thread-safe.

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/access.hpp"
#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/policy.hpp"
#include "model/restore_drill.hpp"
#include "model/state.hpp"
#include "rules/capacity.hpp"
#include "rules/drain.hpp"
#include "rules/estate.hpp"
#include "rules/gpu_cost.hpp"
#include "rules/inputs.hpp"
#include "rules/recovery.hpp"
#include "rules/retention.hpp"
#include "rules/storage_path.hpp"

namespace ckptmon {

// What the rules remember between cycles (kept by the store and the daemon).
struct RulesHistory {
  std::map<std::string, std::vector<TierSample>> tiers;  // by tier, any order
  DrainHistory drain;
};

// Per (tier, job) figures the alerts need besides the rule families.
struct JobTierFigures {
  std::string tier;
  std::string job;
  std::uint64_t partial_checkpoints = 0;
  std::uint64_t partial_bytes = 0;
  bool has_committed = false;
  std::int64_t last_step = -1;  // latest committed checkpoint
  double last_commit_time = 0;
  double last_completion_skew_seconds = 0;
  // Committed checkpoints the integrity verifier failed (mismatch or missing
  // shard), and the newest step among them (-1: none or no step).
  std::uint64_t integrity_failed = 0;
  std::int64_t integrity_failed_step = -1;
};

// checkpoint_failed events of one (tier, job) within alerting.rules.
// CheckpointSavesFailing.window, from the event log.
struct SaveFailureFigures {
  std::string tier;
  std::string job;
  std::uint64_t recent = 0;
  double last_ts = 0;  // the newest failure in the window
  std::string last_reason;
};

// One tier's access findings by kind. known: its last walk finished (a
// walk cut short says nothing of the findings it did not reach).
struct AccessFigures {
  std::string tier;
  bool known = false;
  FindingCounts by_kind{};
};

// One tier's encryption as its probe detected it, against what the tier
// requires (tiers[].encryption_required).
struct EncryptionFigures {
  std::string tier;
  bool required = false;
  bool known = false;  // the tier is up and was probed; else nothing is judged
  std::string at_rest;
  std::string in_transit;
  std::string detail;
  // Required, and found unencrypted at rest ("none") or on the wire ("none":
  // a network file system in the clear). "unknown" is not a violation.
  bool violation = false;
};

struct RuleFigures {
  double now = 0;
  std::vector<DrainFigures> drain;                            // tiers with drains_to
  std::vector<CapacityFigures> capacity;                      // every tier
  std::vector<BandwidthFigures> bandwidth;                    // every tier
  std::vector<RetentionFigures> retention;                    // every (tier, job)
  std::map<std::string, double> cleanup_oldest_age_seconds;   // every tier but deletion tiers
  std::vector<DeletionQueueFigures> deletion_queue;           // role: deletion tiers
  std::vector<UnverifiedCleanupFigures> unverified_cleanups;  // (tier, job) with any
  // ckpt_cleanup_unverified_total, kept across cycles (set by the rules cycle
  // from its UnverifiedCleanupCounter).
  std::map<std::pair<std::string, std::string>, std::uint64_t> unverified_cleanup_totals;
  std::vector<RecoveryPoint> recovery;        // every job
  std::vector<DurabilityFigures> durability;  // every job, as recovery
  std::vector<LifecycleFigures> lifecycle;    // (tier, job) under move_after
  std::vector<ResidencyFigures> residency;    // (tier, job) with copies of a restricted job
  // Findings no single tier's walk can see: a tier that requires encryption
  // found unencrypted (not_encrypted, first), then copies outside their job's
  // residencies (by tier and job, newest version first), then checkpoints a
  // cleanup event said were removed and the walk still finds
  // (cleanup_unverified, by tier, job and step; at most
  // kMaxCleanupFindingsPerTierJob each).
  std::vector<AccessFinding> estate_findings;
  static constexpr std::size_t kMaxCleanupFindingsPerTierJob = 100;
  std::vector<EncryptionFigures> encryption;  // every tier
  std::vector<JobTierFigures> job_tiers;      // every (tier, job)
  // The integrity verifier runs: job_tiers' integrity_failed are facts, not
  // zeros for want of a verifier (set by the rules cycle).
  bool integrity_known = false;
  // Every (tier, job) the event log knows, on a configured tier; empty
  // without an event log (unknown, not none).
  std::vector<SaveFailureFigures> save_failures;
  // Every tier, filled by the rules cycle from the tiers' walks
  // (evaluate_rules leaves it empty).
  std::vector<AccessFigures> access;
  // GPU cost per job with a joined checkpoint; filled by the rules cycle from
  // its GpuCostTracker (evaluate_rules leaves it empty).
  std::vector<GpuJobFigures> gpu_jobs;
  // Slow checkpoints and restore estimates; filled by the rules cycle from
  // its StoragePathTracker (evaluate_rules leaves it empty).
  StoragePathFigures storage_path;
  // The last scheduled restore drill of each (tier, job) on a tier whose
  // drills are on; filled by the rules cycle from State::drills
  // (evaluate_rules leaves it empty).
  std::vector<DrillRecord> drills;
};

// `tiers` is State::tiers (configuration, up/down, statfs figures).
// Checkpoints on tiers not in `tiers` are ignored. `drained_totals`: the
// event log's cumulative drained bytes (shard_drained) by drain, where known.
// `events`: the event log's aggregates (State::events), for what it knows
// better than the files (a checkpoint's skew); null without one.
RuleFigures evaluate_rules(const std::map<std::string, TierState>& tiers,
                           const CheckpointView& checkpoints, const RulesHistory& history,
                           const Verifications& verified, const RulesPolicy& policy, double now,
                           const std::map<DrainKey, double>& drained_totals = {},
                           const EventCatalog* events = nullptr);

}  // namespace ckptmon
