#pragma once
// What the rules need from configuration (a model type: config/ reads it,
// rules/ evaluates it), with the defaults the daemon uses
// when the YAML file says nothing. Every time is in seconds, every size in
// bytes, every ratio a plain fraction (0.2 = 20 %). Plain data; immutable once
// loaded, safe to read from several threads.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "model/access.hpp"
#include "model/http_client_config.hpp"

namespace ckptmon {

// Which committed checkpoints of one (tier, job) the policy keeps (YAML
// `tiers[].retention`). A committed checkpoint is kept when it is one of the
// newest `keep_last`, or a milestone (its step is a multiple of `keep_every`),
// unless it is older than `max_age`. The newest committed checkpoint is always
// kept, whatever the age.
struct RetentionPolicy {
  std::int64_t keep_last = 3;   // >= 1
  std::int64_t keep_every = 0;  // milestone every N steps; 0 = no milestones
  double max_age_seconds = 0;   // 0 = no age limit
  // A partial checkpoint whose last write is older than this is failed-run
  // residue waiting for cleanup (it is residue for capacity from the start).
  double partial_window_seconds = 3600;
  // A `cleanup` event whose checkpoint the walk still finds this long after
  // it is unverified (ckpt_cleanup_unverified_checkpoints). 0: not set, see
  // cleanup_verify_after().
  double cleanup_verify_after_seconds = 0;

  // cleanup_verify_after_seconds where set; else two scan intervals, at least
  // a minute (a walk must have had the chance to see the removal).
  double cleanup_verify_after(double scan_interval_seconds) const {
    if (cleanup_verify_after_seconds > 0) return cleanup_verify_after_seconds;
    return std::max(60.0, 2 * scan_interval_seconds);
  }
};

// The sizing rule's knobs (YAML `tiers[].sizing`).
struct SizingPolicy {
  // Copies the storage writes per byte the catalog sees (2 for application
  // replication, 1.25 for 8+2 erasure coding when df reports raw blocks).
  double replicas = 1;
  // Space for the next checkpoint written before an old one may go, as a
  // fraction of the latest checkpoint of each concurrent writer.
  double temp_write_allowance_ratio = 1.0;
  // Extra margin on the retained versions for checkpoints that grow.
  double growth_headroom_ratio = 0.2;
  // Jobs that checkpoint at the same time; 0 = as observed on the tier.
  std::int64_t concurrent_jobs = 0;
  // History window of the least-squares fit behind time to full.
  double trend_window_seconds = 6 * 3600;
  // Time to full stays unknown until the samples in the window span this long:
  // a line through samples seconds apart is noise (one save swings avail by
  // its own size).
  double min_trend_span_seconds = 30 * 60;
};

// The bandwidth rule's knobs (YAML `tiers[].bandwidth`).
struct BandwidthPolicy {
  // Time a checkpoint may take to land on the tier.
  double allowed_window_seconds = 120;
  // Jobs writing at the same time; 0 = as observed on the tier.
  std::int64_t concurrent_writers = 0;
  // Protocol and metadata overhead on top of the payload bytes.
  double overhead_ratio = 0.1;
  // Committed checkpoints that finished within this window give the observed rate.
  double observe_window_seconds = 24 * 3600;
};

// The drain rule's knobs (YAML `tiers[].drain`), for tiers with drains_to.
struct DrainPolicy {
  double rate_window_seconds = 15 * 60;
  // Lifecycle (YAML `drain.move_after`): a version on this tier should have a
  // copy on its drains_to tier this long after its commit (milestones moving
  // from rapid to capacity after 7d); later, it is overdue
  // (ckpt_lifecycle_overdue_versions). 0: no lifecycle rule.
  double move_after_seconds = 0;
};

// The storage path's knobs (YAML `tiers[].storage_path`, docs/rules.md
// "The storage path"): when a checkpoint counts as slow, how its cause is
// told, and the restore estimate against the recovery objective.
struct StoragePathPolicy {
  // A checkpoint whose save took longer than this missed its window; 0 = no window.
  double checkpoint_window_seconds = 0;
  // ... or longer than this multiple of the job's median save duration on the
  // tier (at least kSlowMedianMinCheckpoints other checkpoints); 0 = off.
  double median_multiple = 0;
  // The tier's write and read bandwidth, bytes per second; 0 = not stated
  // (the best observed is used).
  double write_bandwidth = 0;
  double read_bandwidth = 0;
  // Cause thresholds: tier write throughput (or an interface) at this share of
  // the reference counts as saturated; metadata ops/s at `metadata_ops_per_second`
  // (0 = no absolute threshold) or at `metadata_multiple` x the job's usual;
  // completion skew at `straggler_skew_ratio` of the save duration.
  double saturation_ratio = 0.8;
  double metadata_ops_per_second = 0;
  double metadata_multiple = 3;
  double straggler_skew_ratio = 0.5;
  // The node's full memory or I/O pressure (PSI) at this share of the window
  // counts as the cause node_pressure.
  double node_pressure_ratio = 0.1;
  // Restore estimate: the objective (0 = none) and the metadata rate assumed
  // for the per-file term when the tier's counters never showed a higher one.
  double recovery_time_objective_seconds = 0;
  double restore_metadata_ops_per_second = 1000;
};

// Scheduled restore drills on the tier (YAML `tiers[].restore_drill`,
// docs/rules.md "Restore drills"): every `every` seconds each job with a
// committed checkpoint here has its newest one read back as its ranks would
// (collectors/restore_drill.hpp), within the daily window, never while the
// job is saving. Off unless `every` is set.
struct RestoreDrillPolicy {
  double every_seconds = 0;  // 0 = no scheduled drills
  // A daily window in UTC, minutes after midnight, [start, end) and wrapping
  // past midnight when end < start; start == end: any time of day.
  int window_start_minute = 0;
  int window_end_minute = 0;
  double rate_bytes_per_second = 500.0 * 1024 * 1024;  // over all readers; 0 = no cap
  std::int64_t ranks = 0;                              // reader ranks; 0 = as written
  bool cold = true;                                    // drop the files' pages first
  double deadline_seconds = 3600;                      // one drill, at most

  bool enabled() const { return every_seconds > 0; }
  bool has_window() const { return window_start_minute != window_end_minute; }
  // Seconds left in the window at unix time `now` (the deadline at most);
  // 0 when `now` is outside it.
  double window_left_seconds(double now) const;
};

// Everything the rules need for one tier.
struct TierPolicy {
  RetentionPolicy retention;
  SizingPolicy sizing;
  BandwidthPolicy bandwidth;
  DrainPolicy drain;
  StoragePathPolicy storage_path;
  RestoreDrillPolicy restore_drill;
  // Per-job storage-path policy (`storage_path.jobs.<job>`): the tier's with
  // the job's keys read over it.
  std::map<std::string, StoragePathPolicy> job_storage_path;

  const StoragePathPolicy& storage_path_for(const std::string& job) const {
    auto it = job_storage_path.find(job);
    return it == job_storage_path.end() ? storage_path : it->second;
  }
};

// One resolution step of the history (YAML `history.downsample[]`).
struct DownsampleLevel {
  double resolution_seconds = 300;        // one sample kept per bucket of this width
  double retention_seconds = 30 * 86400;  // samples older than this move to the next level
};

// How long tier samples are kept at which resolution (YAML `history`).
// Raw samples for `raw_retention`, then each level in turn; older than the
// last level's retention: deleted.
struct HistoryPolicy {
  double raw_retention_seconds = 86400;
  std::vector<DownsampleLevel> levels = {{300, 30 * 86400.0}, {3600, 365 * 86400.0}};
};

enum class Severity { kInfo, kWarning, kCritical };
std::string_view to_string(Severity s);

// The part every alert rule has (YAML `alerting.rules.<AlertName>`).
struct AlertRuleCommon {
  bool enabled = true;
  double for_seconds = 0;  // the condition must hold this long before the alert fires
  Severity severity = Severity::kWarning;
};

// A rule's defaults: how long it must hold and how bad it is.
template <int ForSeconds, Severity Sev>
struct AlertDefaults : AlertRuleCommon {
  AlertDefaults() {
    for_seconds = ForSeconds;
    severity = Sev;
  }
};

// Thresholds of the twenty-two alerts the daemon evaluates. Where a rule has a fire and a clear
// threshold, the alert fires past the first and resolves only past the second
// (hysteresis), so a value hovering at the threshold does not flap.
struct AlertRules {
  // A new checkpoint committed on the source before the previous one drained.
  struct DrainBacklogGrowing : AlertDefaults<600, Severity::kWarning> {
    std::int64_t min_overlapping = 1;
  } drain_backlog_growing;
  // The oldest pending checkpoint has waited too long, or the backlog will
  // take too long to empty at the current rate.
  struct DrainTooSlow : AlertDefaults<600, Severity::kWarning> {
    double max_pending_age_seconds = 3600;
    double max_time_to_empty_seconds = 3600;
  } drain_too_slow;
  // The linear trend of available bytes reaches zero within the horizon.
  struct TierFillingUp : AlertDefaults<1800, Severity::kWarning> {
    double horizon_seconds = 24 * 3600;
    double clear_horizon_seconds = 30 * 3600;
  } tier_filling_up;
  // Used fraction (1 - avail/size).
  struct TierAlmostFull : AlertDefaults<300, Severity::kCritical> {
    double used_ratio = 0.95;
    double clear_used_ratio = 0.93;
  } tier_almost_full;
  // The next checkpoint of a job needs more than the tier has available;
  // resolves once avail exceeds the need by clear_margin_ratio.
  struct NextWontFit : AlertDefaults<300, Severity::kCritical> {
    double clear_margin_ratio = 0.05;
  } next_wont_fit;
  // Partial checkpoints on a (tier, job).
  struct Partial : AlertDefaults<300, Severity::kWarning> {
    std::int64_t min_partial = 1;
  } partial;
  // The oldest checkpoint of the deletion queue has waited this long.
  struct CleanupStalled : AlertDefaults<900, Severity::kWarning> {
    double max_age_seconds = 6 * 3600;
  } cleanup_stalled;
  // The newest restorable checkpoint of a job that is still checkpointing
  // (wrote anything within active_window) is older than max_age.
  struct RecoveryPointStale : AlertDefaults<300, Severity::kCritical> {
    double max_age_seconds = 2 * 3600;
    double active_window_seconds = 6 * 3600;
  } recovery_point_stale;
  // Completion skew (last shard - first shard) of a job's latest committed checkpoint.
  struct CompletionSkewHigh : AlertDefaults<0, Severity::kWarning> {
    double max_skew_seconds = 120;
    double clear_skew_seconds = 90;
  } completion_skew_high;
  // The tier's probe fails or is stuck.
  struct TierDown : AlertDefaults<120, Severity::kCritical> {
  } tier_down;
  // Observed write bandwidth below the required one (ratio observed/required).
  struct BandwidthShortfall : AlertDefaults<1800, Severity::kWarning> {
    double min_ratio = 1.0;
    double clear_ratio = 1.1;
  } bandwidth_shortfall;
  // Writes to ckptmon's own state database keep failing (/-/ready fails too).
  struct StateWriteFailing : AlertDefaults<60, Severity::kCritical> {
  } state_write_failing;
  // GPU utilisation during checkpoints drops by more than min_drop_ratio of
  // its baseline, (baseline - during) / baseline, and each of those
  // checkpoints lost at least min_lost_gpu_seconds, for `consecutive`
  // checkpoints of a job in a row (rules/gpu_cost.hpp). The floor keeps a
  // save of milliseconds, whose drop over one sample bucket is large and
  // whose cost is nothing, from paging. Clears once the last checkpoint
  // dropped at most clear_drop_ratio or lost at most clear_lost_gpu_seconds;
  // between the two thresholds the alert holds (no flapping).
  struct StallingGpus : AlertDefaults<0, Severity::kWarning> {
    double min_drop_ratio = 0.5;
    double clear_drop_ratio = 0.4;
    double min_lost_gpu_seconds = 30;
    double clear_lost_gpu_seconds = 15;
    std::int64_t consecutive = 3;
  } stalling_gpus;
  // GPU-seconds lost to checkpoints exceed max_lost_ratio of the job's
  // GPU-seconds over `window`; resolves at clear_lost_ratio.
  struct GoodputLow : AlertDefaults<0, Severity::kWarning> {
    double window_seconds = 3600;
    double max_lost_ratio = 0.05;
    double clear_lost_ratio = 0.04;
  } goodput_low;
  // The latest committed checkpoint of a (tier, job) took longer than its
  // checkpoint_window or median_multiple (StoragePathPolicy); the cause is in
  // the annotations. Clears when a later checkpoint is on time.
  struct WindowMissed : AlertDefaults<0, Severity::kWarning> {
  } window_missed;
  // The estimated restore time of the newest restorable checkpoint of a
  // (tier, job) exceeds its recovery_time_objective; resolves at or below
  // clear_ratio x the objective.
  struct RtoAtRisk : AlertDefaults<300, Severity::kWarning> {
    double clear_ratio = 0.9;
  } rto_at_risk;
  // The oldest restorable version of a job newer than its durable recovery
  // point has waited longer than the job's estate.durable_within for a copy
  // on a durable tier (rules/estate.hpp).
  struct RecoveryPointNotDurable : AlertDefaults<300, Severity::kWarning> {
  } recovery_point_not_durable;
  // Versions committed more than durable_within ago with fewer complete
  // durable copies than the job's estate.copies_required.
  struct UnderCopied : AlertDefaults<900, Severity::kWarning> {
  } under_copied;
  // Committed checkpoints of a (tier, job) that the integrity verifier found
  // corrupt (a checksum mismatch) or incomplete (a listed shard missing):
  // they no longer count as restorable, so the recovery point stepped back.
  struct IntegrityFailed : AlertDefaults<0, Severity::kWarning> {
  } integrity_failed;
  // The tier's free inodes are fewer than the sizing rule's file term still
  // needs, or than min_free_ratio of its inodes. Clears once free inodes
  // exceed the need by clear_margin_ratio and clear_free_ratio of the inodes.
  struct TierInodesLow : AlertDefaults<300, Severity::kCritical> {
    double min_free_ratio = 0.05;
    double clear_free_ratio = 0.07;
    double clear_margin_ratio = 0.05;
  } tier_inodes_low;
  // At least min_failures checkpoint_failed events of a (tier, job) within
  // `window`; clears once none is left in the window.
  struct SavesFailing : AlertDefaults<0, Severity::kWarning> {
    double window_seconds = 3600;
    std::int64_t min_failures = 1;
  } saves_failing;
  // Access audit findings of these kinds on a tier.
  struct AccessFinding : AlertDefaults<0, Severity::kWarning> {
    std::vector<FindingKind> kinds = {
        FindingKind::kWorldWritable, FindingKind::kReadableOutsideProject, FindingKind::kResidency};
  } access_finding;
  // The oldest checkpoint on a role: deletion tier has been there (since the
  // walk first saw it) longer than deletion_within.
  struct DeletionStalled : AlertDefaults<900, Severity::kWarning> {
    double deletion_within_seconds = 24 * 3600;
  } deletion_stalled;
  // Copies of a job's versions on a tier whose residency the job's namespace
  // does not allow, wherever the copy came from (a drain, a backup).
  struct OutsideAllowedResidency : AlertDefaults<0, Severity::kWarning> {
  } outside_allowed_residency;
  // A tier with encryption_required whose probe finds it unencrypted at rest
  // or, on a network file system, in transit.
  struct TierNotEncrypted : AlertDefaults<0, Severity::kWarning> {
  } tier_not_encrypted;
  // The last scheduled restore drill of a (tier, job) could not read the
  // checkpoint back (an unreadable, vanished or short file, its deadline) or
  // took longer than the job's recovery_time_objective.
  struct RestoreDrillFailed : AlertDefaults<0, Severity::kWarning> {
  } restore_drill_failed;
};

// YAML `alerting`.
struct AlertingConfig {
  // Alertmanager base URL ("http://127.0.0.1:9093" or https://); empty = do not push.
  std::string alertmanager_url;
  // TLS, credentials and headers of the push (model/http_client_config.hpp).
  HttpClientConfig client;
  // Firing alerts are sent again this often while they fire.
  double resend_interval_seconds = 60;
  // Deadline of one POST, connect included.
  double timeout_seconds = 10;
  // Base of the generatorURL of pushed alerts; empty = the daemon's own address.
  std::string external_url;
  // Page the runbook_url annotation points into ("<runbook_url>#<alertname lowercased>").
  std::string runbook_url = "docs/runbook.md";
  AlertRules rules;
};

// The estate's policy (YAML `estate`, docs/rules.md "Durability and
// copies"): how many complete durable copies each retained version of a job
// should have and how soon after its commit. `sizing.replicas` is a
// different thing: the copies the storage itself writes per byte (RAID,
// erasure coding), which the catalog never sees.
struct EstateJobPolicy {
  std::int64_t copies_required = 1;      // complete copies on durable tiers, >= 1
  double durable_within_seconds = 3600;  // a commit should be durable this soon
};
struct EstateJobRule {
  std::string job_regex;
  std::shared_ptr<const std::regex> regex;  // matches the whole job name
  EstateJobPolicy policy;
};
struct EstatePolicy {
  EstateJobPolicy defaults;
  std::vector<EstateJobRule> jobs;  // first match wins

  const EstateJobPolicy& for_job(const std::string& job) const;
};

// Every policy the rules read, by tier name. A tier with no entry uses the defaults.
struct RulesPolicy {
  std::map<std::string, TierPolicy> tiers;
  AlertingConfig alerting;
  HistoryPolicy history;
  EstatePolicy estate;

  const TierPolicy& for_tier(const std::string& tier) const;
};

}  // namespace ckptmon
