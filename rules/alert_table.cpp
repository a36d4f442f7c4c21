#include "rules/alert_table.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>

#include "prom/sample_value.hpp"
#include "util/duration.hpp"

namespace ckptmon {
namespace {

using G = AlertGroup;
constexpr Severity kWarn = Severity::kWarning;
constexpr Severity kCrit = Severity::kCritical;

constexpr std::string_view kTier = "instance, job, tier";
constexpr std::string_view kTierJob = "instance, job, tier, training_job";
constexpr std::string_view kDrain = "instance, job, tier, to_tier, training_job";
constexpr std::string_view kJob = "instance, job, training_job";
constexpr std::string_view kInstance = "instance, job";

// Order: AlertId's. The Prometheus texts are Go templates ({{ $labels.x }},
// {{ $value }}); ${param} is filled from the policy (alert_params), ${for}
// with the rule's `for:`.
const std::array<AlertSpec, kAlertCount> kTable = {{
    {AlertId::kDrainBacklogGrowing, G::kCheckpoints, true, 0, kWarn, kDrain,
     "At least ${min_overlapping} checkpoint(s) of the job committed on the tier before the "
     "previous one finished draining to to_tier; clears when none overlaps.",
     "ckpt_drain_overlapping_checkpoints >= ${min_overlapping}",
     "ckpt_drain_overlapping_checkpoints > 0",
     "Drain from {{ $labels.tier }} to {{ $labels.to_tier }} is falling behind for job "
     "{{ $labels.training_job }}",
     "{{ $value | printf \"%.0f\" }} checkpoint(s) of job {{ $labels.training_job }} arrived on "
     "{{ $labels.tier }} before the previous one finished copying to {{ $labels.to_tier }} (seen "
     "by {{ $labels.instance }}, for ${for}). Staging fills and the durable recovery point falls "
     "behind.",
     "", "", "", ""},
    {AlertId::kDrainTooSlow, G::kCheckpoints, true, 0, kWarn, kDrain,
     "The oldest checkpoint of the job waiting to drain has waited more than ${max_pending_age}, "
     "or the backlog takes more than ${max_time_to_empty} to empty at the measured drain rate.",
     "ckpt_drain_oldest_pending_age_seconds > ${max_pending_age_seconds}\n"
     "  or on (instance, job, tier, to_tier, training_job)\n"
     "ckpt_drain_time_to_empty_seconds > ${max_time_to_empty_seconds}",
     "",
     "Drain of job {{ $labels.training_job }} from {{ $labels.tier }} to {{ $labels.to_tier }} is "
     "too slow",
     "The oldest pending checkpoint of job {{ $labels.training_job }} on {{ $labels.tier }} has "
     "waited more than ${max_pending_age}, or its backlog takes more than ${max_time_to_empty} to "
     "drain to {{ $labels.to_tier }} at the current rate ({{ $value | humanizeDuration }}, seen by "
     "{{ $labels.instance }}).",
     "", "", "", ""},
    {AlertId::kTierFillingUp, G::kCheckpoints, true, 0, kWarn, kTier,
     "The linear trend of the tier's available space (sizing.trend_window) reaches zero within "
     "${horizon}; clears beyond ${clear_horizon}.",
     "ckpt_tier_time_to_full_seconds < ${horizon_seconds}",
     "ckpt_tier_time_to_full_seconds < ${clear_horizon_seconds}",
     "Tier {{ $labels.tier }} is predicted to be full in {{ $value | humanizeDuration }}",
     "At the trend of its available space ckptmon on {{ $labels.instance }} measures, tier "
     "{{ $labels.tier }} fills up in {{ $value | humanizeDuration }}, within the horizon of "
     "${horizon}.",
     "", "", "",
     "While too little history gives no trend the daemon's alert holds; Prometheus has no "
     "ckpt_tier_time_to_full_seconds sample then, and its alert resolves."},
    {AlertId::kTierAlmostFull, G::kCheckpoints, true, 0, kCrit, kTier,
     "The tier's used fraction (1 - avail/size) is above ${used_ratio}; clears at or below "
     "${clear_used_ratio}.",
     "1 - ckpt_tier_avail_bytes / (ckpt_tier_size_bytes > 0) > ${used_ratio}",
     "1 - ckpt_tier_avail_bytes / (ckpt_tier_size_bytes > 0) > ${clear_used_ratio}",
     "Tier {{ $labels.tier }} is {{ $value | humanizePercentage }} full",
     "Tier {{ $labels.tier }} (as {{ $labels.instance }} sees it) has less than ${avail_percent} "
     "of its space available to unprivileged writers. The next checkpoint may fail to save.",
     "", "", "", ""},
    {AlertId::kNextWontFit, G::kCheckpoints, true, 0, kCrit, kTierJob,
     "The bytes the job's next checkpoint still has to write on the tier (or, with several jobs "
     "checkpointing at once, those of all of them) exceed the tier's available space; clears "
     "once the space exceeds the need by clear_margin_ratio (${clear_margin_ratio}).",
     "ckpt_job_next_checkpoint_bytes > on (instance, job, tier) group_left ckpt_tier_avail_bytes\n"
     "  or\n"
     "(ckpt_tier_next_checkpoint_bytes > on (instance, job, tier) ckpt_tier_avail_bytes\n"
     "  and on (instance, job, tier)\n"
     "ckpt_tier_concurrent_jobs > 1)",
     "ckpt_job_next_checkpoint_bytes > on (instance, job, tier) group_left "
     "ckpt_tier_avail_bytes / ${clear_factor}\n"
     "  or\n"
     "(ckpt_tier_next_checkpoint_bytes > on (instance, job, tier) "
     "ckpt_tier_avail_bytes / ${clear_factor}\n"
     "  and on (instance, job, tier)\n"
     "ckpt_tier_concurrent_jobs > 1)",
     "Next checkpoint{{ if $labels.training_job }} of job {{ $labels.training_job }}{{ else }}s "
     "of concurrent jobs{{ end }} will not fit on tier {{ $labels.tier }}",
     "The next checkpoint{{ if $labels.training_job }} of job {{ $labels.training_job }} needs{{ "
     "else }}s of the jobs that checkpoint at the same time need{{ end }} {{ $value | humanize1024 "
     "}}B on tier {{ $labels.tier }}, more than it has available (seen by {{ $labels.instance }}).",
     "", "", "",
     "The daemon sums the concurrent jobs' next checkpoints only when the tier holds more than "
     "one job; Prometheus when ckpt_tier_concurrent_jobs is above 1."},
    {AlertId::kPartial, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "At least ${min_partial} checkpoint(s) of the job on the tier stayed incomplete past "
     "partial_after; clears when none is left.",
     "ckpt_partial_checkpoints >= ${min_partial}", "ckpt_partial_checkpoints > 0",
     "Job {{ $labels.training_job }} has partial checkpoints on {{ $labels.tier }}",
     "{{ $value | printf \"%.0f\" }} checkpoint(s) of job {{ $labels.training_job }} on "
     "{{ $labels.tier }} are incomplete past partial_after (seen by {{ $labels.instance }}): they "
     "cannot be restored and hold space.",
     "", "", "", ""},
    {AlertId::kCleanupStalled, G::kCheckpoints, true, 0, kWarn, kTier,
     "The oldest checkpoint the retention policy says should be gone from the tier has waited "
     "more than ${max_age}.",
     "ckpt_cleanup_oldest_age_seconds > ${max_age_seconds}", "",
     "Cleanup of tier {{ $labels.tier }} is stalled",
     "The oldest checkpoint on tier {{ $labels.tier }} that the retention policy says should be "
     "gone has waited {{ $value | humanizeDuration }} (threshold ${max_age}, seen by "
     "{{ $labels.instance }}); ckpt_cleanup_pending_checkpoints and ckpt_cleanup_pending_bytes "
     "say how much is queued.",
     "", "", "", ""},
    {AlertId::kRecoveryPointStale, G::kCheckpoints, true, 0, kCrit, "training_job",
     "The job's newest restorable checkpoint (on any tier) is older than ${max_age} while the "
     "job still wrote checkpoint data within ${active_window}.",
     "max by (training_job) (time() - ckpt_restorable_timestamp_seconds) > ${max_age_seconds}\n"
     "  and on (training_job)\n"
     "max by (training_job) (changes(ckpt_job_stored_bytes[${active_window}])) > 0",
     "", "Job {{ $labels.training_job }} could lose {{ $value | humanizeDuration }} of training",
     "The newest restorable checkpoint of job {{ $labels.training_job }} is {{ $value | "
     "humanizeDuration }} old while the job is still writing checkpoint data: a failure now would "
     "roll it back that far.",
     "", "",
     "The stalest view across instances counts (a node-local checkpoint of a\n"
     "multi-node job restores only when every node holds it).",
     "A job with no restorable checkpoint at all has no ckpt_restorable_timestamp_seconds: the "
     "daemon counts its age from its first checkpoint activity, Prometheus does not fire. "
     "Activity is the job's events and writes for the daemon, a change of ckpt_job_stored_bytes "
     "for Prometheus."},
    {AlertId::kCompletionSkewHigh, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "The first and the last shard of the job's latest committed checkpoint on the tier landed "
     "more than ${max_skew} apart; clears at ${clear_skew} or less.",
     "ckpt_last_checkpoint_completion_skew_seconds > ${max_skew_seconds}",
     "ckpt_last_checkpoint_completion_skew_seconds > ${clear_skew_seconds}",
     "Shards of job {{ $labels.training_job }}'s latest checkpoint on {{ $labels.tier }} finished "
     "{{ $value | humanizeDuration }} apart",
     "The newest and the oldest shard of the latest committed checkpoint of job "
     "{{ $labels.training_job }} on {{ $labels.tier }} were written {{ $value | humanizeDuration "
     "}} "
     "apart (over ${max_skew}): some ranks save much slower than the rest (seen by "
     "{{ $labels.instance }}).",
     "", "", "", ""},
    {AlertId::kTierDown, G::kCheckpoints, true, 0, kCrit, kTier,
     "The tier's probe fails or is stuck (ckpt_tier_up 0).", "ckpt_tier_up == 0", "",
     "Tier {{ $labels.tier }} is down",
     "ckptmon on {{ $labels.instance }} cannot probe tier {{ $labels.tier }} (the reason is in "
     "/api/v1/tiers and its log): the tier's figures are stale and checkpoints written there may "
     "fail.",
     "", "", "", ""},
    {AlertId::kBandwidthShortfall, G::kCheckpoints, true, 0, kWarn, kTier,
     "The tier's observed checkpoint write bandwidth, over the one its concurrent writers need "
     "to finish within the allowed window, is below ${min_ratio}; clears at ${clear_ratio} or "
     "more.",
     "ckpt_tier_observed_write_bandwidth_bytes_per_second\n"
     "  / (ckpt_tier_required_write_bandwidth_bytes_per_second > 0) < ${min_ratio}",
     "ckpt_tier_observed_write_bandwidth_bytes_per_second\n"
     "  / (ckpt_tier_required_write_bandwidth_bytes_per_second > 0) < ${clear_ratio}",
     "Write bandwidth of tier {{ $labels.tier }} falls short of what checkpoints need",
     "Checkpoints on tier {{ $labels.tier }} were written at {{ $value | humanizePercentage }} of "
     "the bandwidth their concurrent writers need to finish within the allowed window (threshold "
     "${min_ratio_percent}, seen by {{ $labels.instance }}).",
     "", "", "", ""},
    {AlertId::kStateWriteFailing, G::kDaemon, true, 0, kCrit, kInstance,
     "${failing_after} or more writes in a row to ckptmon's state database failed; clears at the "
     "next that succeeds.",
     "ckptmon_store_consecutive_errors >= ${failing_after}", "ckptmon_store_consecutive_errors > 0",
     "ckptmon on {{ $labels.instance }} cannot write its state database",
     "The last {{ $value | printf \"%.0f\" }} writes of ckptmon on {{ $labels.instance }} to its "
     "state database failed: catalog changes, event-log positions and history are not kept, and "
     "a restart would lose them. /-/ready fails meanwhile.",
     "", "", "", ""},
    {AlertId::kStallingGpus, G::kGpu, true, 0, kWarn, kJob,
     "Each of the job's last ${consecutive} checkpoints with a known cost dropped GPU utilisation "
     "by more than ${min_drop_ratio} of its baseline and lost at least ${min_lost_gpu_seconds} "
     "GPU-seconds; clears once the last one dropped ${clear_drop_ratio} or less or lost "
     "${clear_lost_gpu_seconds} GPU-seconds or less.",
     "ckpt_checkpoint_gpu_stalled_streak >= ${consecutive}",
     "1 - ckpt_checkpoint_gpu_utilization_ratio / ckpt_checkpoint_gpu_baseline_utilization_ratio "
     "> ${clear_drop_ratio}\n"
     "  and on (instance, job, training_job)\n"
     "ckpt_last_checkpoint_gpu_idle_seconds > ${clear_lost_gpu_seconds}",
     "Checkpoints of job {{ $labels.training_job }} stall its GPUs",
     "GPU utilisation of job {{ $labels.training_job }} dropped by more than ${min_drop_percent} "
     "of its baseline, losing at least ${min_lost_gpu_seconds} GPU-seconds, during each of its "
     "last ${consecutive} checkpoints (seen by {{ $labels.instance }}): the ranks wait on the "
     "save instead of training.",
     "", "",
     "ckpt_checkpoint_gpu_stalled_streak is the daemon's count of the job's latest\n"
     "checkpoints in a row past both thresholds.",
     ""},
    {AlertId::kGoodputLow, G::kGpu, true, 0, kWarn, kJob,
     "GPU-seconds lost to the job's checkpoints over the last ${window} are more than "
     "${max_lost_ratio} of its GPU-seconds in that time; clears at ${clear_lost_ratio} or less.",
     "ckpt_checkpoint_gpu_lost_ratio > ${max_lost_ratio}",
     "ckpt_checkpoint_gpu_lost_ratio > ${clear_lost_ratio}",
     "Checkpoints cost job {{ $labels.training_job }} {{ $value | humanizePercentage }} of its GPU "
     "time",
     "Over the last ${window}, checkpoints of job {{ $labels.training_job }} left its GPUs idle "
     "for {{ $value | humanizePercentage }} of their time (threshold ${max_lost_percent}, seen by "
     "{{ $labels.instance }}).",
     "", "", "", ""},
    {AlertId::kWindowMissed, G::kStoragePath, true, 0, kWarn, kTierJob,
     "The job's latest committed checkpoint on the tier took longer than its checkpoint_window "
     "or median_multiple (storage_path); clears when a later one is on time.",
     "ckpt_last_checkpoint_slow_cause == 1", "",
     "The latest checkpoint of job {{ $labels.training_job }} on {{ $labels.tier }} missed its "
     "window (cause: {{ $labels.cause }})",
     "The latest committed checkpoint of job {{ $labels.training_job }} on tier {{ $labels.tier }} "
     "took longer than its checkpoint_window or median_multiple (seen by {{ $labels.instance }}); "
     "its cause is {{ $labels.cause }}. /api/v1/checkpoints on that instance has the evidence.",
     "cause", "{{ $labels.cause }}",
     "The latest judged checkpoint of the (tier, job) was slow; the cause is the\n"
     "label set to 1 in the state set.",
     ""},
    {AlertId::kRtoAtRisk, G::kStoragePath, true, 0, kWarn, kTierJob,
     "The estimated restore time of the job's newest restorable checkpoint on the tier exceeds "
     "its recovery_time_objective; clears at ${clear_ratio} x the objective or less.",
     "ckpt_estimated_restore_seconds\n"
     "  > on (instance, job, tier, training_job)\n"
     "ckpt_recovery_time_objective_seconds",
     "ckpt_estimated_restore_seconds\n"
     "  > on (instance, job, tier, training_job)\n"
     "${clear_ratio} * ckpt_recovery_time_objective_seconds",
     "Restoring job {{ $labels.training_job }} from {{ $labels.tier }} would take {{ $value | "
     "humanizeDuration }}, over its objective",
     "The newest restorable checkpoint of job {{ $labels.training_job }} on tier "
     "{{ $labels.tier }} is estimated to restore in {{ $value | humanizeDuration }}, longer than "
     "its recovery_time_objective (seen by {{ $labels.instance }}, for ${for}).",
     "", "", "",
     "While no read throughput is known the daemon's alert holds; Prometheus has no "
     "ckpt_estimated_restore_seconds sample then, and its alert resolves."},

    {AlertId::kRecoveryPointNotDurable, G::kCheckpoints, true, 0, kWarn, kJob,
     "The oldest restorable checkpoint of the job newer than its durable recovery point (the "
     "newest restorable copy on a durable tier) has waited longer than the job's durable_within "
     "for a durable copy; clears when it has one.",
     "ckpt_recovery_point_durable_lag_seconds\n"
     "  > on (instance, job, training_job)\n"
     "ckpt_durable_within_seconds",
     "", "Job {{ $labels.training_job }}'s newest checkpoints are only on node-local tiers",
     "The oldest checkpoint of job {{ $labels.training_job }} newer than its durable recovery "
     "point has waited {{ $value | humanizeDuration }} for a copy on a durable tier, longer than "
     "its durable_within (seen by {{ $labels.instance }}, for ${for}). A node loss now rolls the "
     "job back by ckpt_steps_at_risk steps.",
     "", "",
     "durable_within is the job's (estate.durable_within, exported as\n"
     "ckpt_durable_within_seconds); an instance that watches no durable tier\n"
     "exports neither series.",
     ""},
    {AlertId::kUnderCopied, G::kCheckpoints, true, 0, kWarn, kJob,
     "Restorable checkpoints of the job committed more than its durable_within ago have fewer "
     "complete durable copies (same size as the first copy) than its copies_required.",
     "ckpt_versions_under_copied > 0", "",
     "Job {{ $labels.training_job }} has checkpoints with too few durable copies",
     "{{ $value | printf \"%.0f\" }} restorable checkpoint(s) of job {{ $labels.training_job }} "
     "older than its durable_within have fewer complete copies on durable tiers than its "
     "copies_required (seen by {{ $labels.instance }}, for ${for}).",
     "", "", "", ""},
    {AlertId::kIntegrityFailed, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "At least one committed checkpoint of the job on the tier failed integrity verification (a "
     "checksum mismatch or a listed shard missing); clears when none is left in the catalog.",
     "ckpt_integrity_failed_checkpoints > 0", "",
     "A checkpoint of job {{ $labels.training_job }} on {{ $labels.tier }} is corrupt",
     "{{ $value | printf \"%.0f\" }} committed checkpoint(s) of job {{ $labels.training_job }} on "
     "{{ $labels.tier }} failed integrity verification (seen by {{ $labels.instance }}): they are "
     "no longer counted as restorable, and the recovery point stepped back past them. "
     "ckpt_integrity_checks_total says which result (mismatch, missing).",
     "", "",
     "Only where the integrity verifier runs (checksums from event logs or\n"
     "integrity.json); elsewhere the series is absent, not 0.",
     ""},
    {AlertId::kTierInodesLow, G::kCheckpoints, true, 0, kCrit, kTier,
     "The tier's free inodes are fewer than the files the sizing rule still needs (files per "
     "checkpoint x retained versions, plus the next checkpoints of the concurrent jobs, less what "
     "is on the tier), or fewer than ${min_free_ratio} of its inodes; clears once they exceed the "
     "need by clear_margin_ratio (${clear_margin_ratio}) and ${clear_free_ratio} of the inodes.",
     "ckpt_tier_files_free < on (instance, job, tier) ckpt_tier_files_still_needed\n"
     "  or\n"
     "ckpt_tier_files_free < on (instance, job, tier) ckpt_tier_files * ${min_free_ratio}",
     "ckpt_tier_files_free < on (instance, job, tier) ckpt_tier_files_still_needed * "
     "${clear_factor}\n"
     "  or\n"
     "ckpt_tier_files_free < on (instance, job, tier) ckpt_tier_files * ${clear_free_ratio}",
     "Tier {{ $labels.tier }} is running out of inodes",
     "Tier {{ $labels.tier }} has {{ $value | printf \"%.0f\" }} free inodes (seen by "
     "{{ $labels.instance }}): fewer than its checkpoints still need by the sizing rule "
     "(ckpt_tier_files_still_needed) or than ${min_free_percent} of its inodes. Saves fail "
     "with ENOSPC while bytes are still free.",
     "", "",
     "A file system without a fixed inode count (f_files 0: btrfs, some NFS\n"
     "servers) exports no ckpt_tier_files_still_needed and never fires.",
     ""},
    {AlertId::kSavesFailing, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "At least ${min_failures} checkpoint_failed event(s) of the job on the tier within the last "
     "${window}; clears when none is left in the window.",
     "ckpt_saves_failed_recent >= ${min_failures}", "ckpt_saves_failed_recent > 0",
     "Checkpoint saves of job {{ $labels.training_job }} on {{ $labels.tier }} are failing",
     "{{ $value | printf \"%.0f\" }} save(s) of job {{ $labels.training_job }} on "
     "{{ $labels.tier }} failed within the last ${window} (checkpoint_failed events, seen by "
     "{{ $labels.instance }}); /api/v1/events/summary lists the reasons. The recovery point "
     "stops moving "
     "while they fail.",
     "", "",
     "ckpt_saves_failed_recent is the daemon's count over alerting.rules.\n"
     "CheckpointSavesFailing.window (at most the last 10 failures of a job are\n"
     "kept with their times), not increase() of a counter that resets on restart.",
     ""},
    {AlertId::kAccessFinding, G::kCheckpoints, true, 0, kWarn, kTier,
     "The tier's access audit has findings of a kind listed in kinds (${kinds_list}); clears "
     "when the walk finds none.",
     "sum by (instance, job, tier) (ckpt_access_findings{kind=~\"${kinds_regex}\"}) > 0", "",
     "Checkpoints on tier {{ $labels.tier }} can be read or written by the wrong people",
     "The access audit of tier {{ $labels.tier }} has {{ $value | printf \"%.0f\" }} finding(s) "
     "of the kinds ${kinds_list} (seen by {{ $labels.instance }}); /api/v1/findings lists the "
     "paths and who can read them.",
     "", "", "", ""},
    {AlertId::kDeletionStalled, G::kCheckpoints, true, 0, kWarn, kTier,
     "The oldest checkpoint on the role: deletion tier (by when the walk first saw it there) has "
     "waited longer than ${deletion_within} to be removed; clears once it is gone.",
     "ckpt_deletion_queue_oldest_age_seconds > ${deletion_within_seconds}", "",
     "Deletion queue on tier {{ $labels.tier }} is not draining",
     "The oldest checkpoint on deletion tier {{ $labels.tier }} has waited "
     "{{ $value | humanizeDuration }} to be removed (deletion_within ${deletion_within}, seen by "
     "{{ $labels.instance }}); ckpt_deletion_queue_bytes says how much is held there.",
     "", "", "", ""},
    {AlertId::kOutsideAllowedResidency, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "Copies of the job's checkpoints lie on a tier whose residency the job's namespaces do not "
     "allow, however they got there (a drain, a backup, the deletion queue); clears once none "
     "is left there.",
     "ckpt_residency_violations > 0", "",
     "Checkpoints of job {{ $labels.training_job }} are on {{ $labels.tier }}, outside their "
     "allowed residency",
     "{{ $value | printf \"%.0f\" }} copies of job {{ $labels.training_job }}'s checkpoints are on "
     "tier {{ $labels.tier }}, whose residency the job's namespaces do not allow (seen by "
     "{{ $labels.instance }}). /api/v1/findings?kind=residency names each copy.",
     "", "",
     "Only for jobs some namespace rule restricts (namespaces[].residency); the\n"
     "allowed set is the intersection of the rules that claim the job on every tier.",
     ""},
    {AlertId::kTierNotEncrypted, G::kCheckpoints, true, 0, kWarn, kTier,
     "The tier requires encryption (encryption_required) and its probe finds its data "
     "unencrypted at rest, or sent in the clear on a network file system; an undetectable "
     "state is unknown and never fires. Clears once detection says otherwise.",
     "max by (instance, job, tier) (ckpt_tier_encryption_info{at_rest=\"none\"} or "
     "ckpt_tier_encryption_info{in_transit=\"none\"})\n"
     "  * on (instance, job, tier) ckpt_tier_encryption_required > 0",
     "", "Tier {{ $labels.tier }} requires encryption but is not encrypted",
     "Tier {{ $labels.tier }} has encryption_required, and ckptmon on {{ $labels.instance }} "
     "finds its data unencrypted at rest or in transit (ckpt_tier_encryption_info says which; "
     "/api/v1/tiers says how it was told).",
     "", "", "", ""},
    {AlertId::kRestoreDrillFailed, G::kCheckpoints, true, 0, kWarn, kTierJob,
     "The last scheduled restore drill of the job on the tier (restore_drill) could not read "
     "its newest committed checkpoint back (an unreadable, vanished or short file, or the "
     "drill's deadline) or took longer than the job's recovery_time_objective; clears when a "
     "later drill reads it all within the objective.",
     "ckpt_restore_drill_ok == 0", "",
     "A restore drill of job {{ $labels.training_job }} on {{ $labels.tier }} failed",
     "The last restore drill of job {{ $labels.training_job }} on {{ $labels.tier }} (run by "
     "ckptmon on {{ $labels.instance }}) did not read the checkpoint back within its recovery "
     "time objective: ckpt_restore_drill_seconds says how long each phase took, and the daemon's "
     "log (msg=\"restore drill failed\") names the file and why.",
     "", "", "Only where a tier sets restore_drill.every; elsewhere the series is absent.", ""},

    // Prometheus only.
    {AlertId::kCkptmonDown, G::kDaemon, false, 300, kCrit, kInstance,
     "Prometheus cannot scrape ckptmon.", "up{job=\"ckptmon\"} == 0", "",
     "ckptmon on {{ $labels.instance }} does not answer scrapes",
     "Prometheus has not been able to scrape ckptmon at {{ $labels.instance }} for ${for}. The "
     "checkpoint figures of the tiers it watches are missing, and its own alerts (tier down, "
     "recovery point stale, ...) cannot fire.",
     "", "", "", ""},
    {AlertId::kCollectorFailing, G::kDaemon, false, 900, kWarn, "instance, job, collector",
     "A collector's last run did not finish successfully and in time.",
     "ckptmon_collector_success == 0", "",
     "ckptmon collector {{ $labels.collector }} on {{ $labels.instance }} keeps failing",
     "The {{ $labels.collector }} collector of ckptmon on {{ $labels.instance }} has not finished "
     "a run successfully and in time for ${for}. The figures it feeds are stale or missing.",
     "", "", "", ""},
    {AlertId::kConfigReloadFailed, G::kDaemon, false, 600, kWarn, kInstance,
     "The last configuration reload was rejected.", "ckptmon_config_last_reload_successful == 0",
     "", "ckptmon on {{ $labels.instance }} rejected its new configuration",
     "The last configuration reload of ckptmon on {{ $labels.instance }} failed. It keeps running "
     "with the previous configuration, so the change you made is not in effect.",
     "", "", "", ""},
    {AlertId::kCatalogStale, G::kDaemon, false, 900, kWarn, kTier,
     "The walk of a tier has run past scan_timeout.", "ckptmon_catalog_stale == 1", "",
     "ckptmon on {{ $labels.instance }} cannot finish walking tier {{ $labels.tier }}",
     "The walk of tier {{ $labels.tier }} by ckptmon on {{ $labels.instance }} has run past "
     "scan_timeout for ${for}. Checkpoint counts, partial checkpoints, drain backlog and the "
     "recovery point of that tier come from an older walk.",
     "", "", "", ""},
    {AlertId::kAlertmanagerUnreachable, G::kDaemon, false, 300, kWarn, kInstance,
     "POSTs of ckptmon's alerts to Alertmanager failed in the last 15 minutes and none was "
     "accepted.",
     "increase(ckptmon_alertmanager_post_errors_total[15m]) > 0\n"
     "  unless on (instance, job)\n"
     "(time() - ckptmon_alertmanager_last_success_timestamp_seconds < 900)",
     "", "ckptmon on {{ $labels.instance }} cannot deliver its alerts to Alertmanager",
     "ckptmon on {{ $labels.instance }} failed to POST alerts to Alertmanager ({{ $value | printf "
     "\"%.0f\" }} failures in 15 minutes) and none was accepted. Checkpoint alerts it raises do "
     "not page anyone.",
     "", "",
     "Errors in the last 15 minutes and no POST accepted in that time: the\n"
     "daemon's own alerts do not reach Alertmanager.",
     ""},
}};

std::string duration(double seconds) {
  if (seconds <= 0) return "0s";
  return format_duration(std::chrono::milliseconds(std::llround(seconds * 1000)));
}

using Params = std::vector<std::pair<std::string, std::string>>;

// ${name} -> its value; an unknown name is left as written (the table test
// finds it: promtool rejects "${").
std::string fill(std::string_view text, const Params& params) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "${") == 0) {
      const std::size_t end = text.find('}', i + 2);
      if (end != std::string_view::npos) {
        const std::string_view key = text.substr(i + 2, end - i - 2);
        bool found = false;
        for (const auto& [k, v] : params) {
          if (k == key) {
            out += v;
            found = true;
            break;
          }
        }
        if (found) {
          i = end + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

double for_seconds(const AlertRules& rules, const AlertSpec& s) {
  const AlertRuleCommon* rule = alert_rule(rules, s.id);
  return rule ? rule->for_seconds : s.for_seconds;
}

Severity severity(const AlertRules& rules, const AlertSpec& s) {
  const AlertRuleCommon* rule = alert_rule(rules, s.id);
  return rule ? rule->severity : s.severity;
}

bool enabled(const AlertRules& rules, const AlertSpec& s) {
  const AlertRuleCommon* rule = alert_rule(rules, s.id);
  return !rule || rule->enabled;
}

Params all_params(const AlertRules& rules, const AlertSpec& s) {
  Params p = alert_params(rules, s.id);
  p.emplace_back("for", duration(for_seconds(rules, s)));
  return p;
}

// The PromQL expression with the hysteresis join.
std::string expression(const AlertSpec& s, const Params& p) {
  std::string fire = fill(s.fire, p);
  if (s.hold.empty()) return fire;
  return "(" + fire + ")\n  or\n((" + fill(s.hold, p) + ")\n  and on (" + std::string(s.scope) +
         ")\nALERTS{alertname=\"" + std::string(s.name()) + "\"})";
}

// A YAML double-quoted scalar.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// `key: value` at `indent`, a literal block when the value has line breaks.
void scalar(std::string& out, std::string_view indent, std::string_view key,
            const std::string& value) {
  out += std::string(indent) + std::string(key) + ":";
  if (value.find('\n') == std::string::npos) {
    out += " " + value + "\n";
    return;
  }
  out += " |\n";
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t nl = value.find('\n', start);
    const std::string_view line =
        std::string_view(value).substr(start, nl == std::string::npos ? nl : nl - start);
    out += std::string(indent) + "  " + std::string(line) + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
}

void comment(std::string& out, std::string_view indent, std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    out += std::string(indent) + "# " +
           std::string(text.substr(start, nl == std::string_view::npos ? nl : nl - start)) + "\n";
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

struct GroupInfo {
  AlertGroup group;
  std::string_view name;
  std::string_view comment;
};

constexpr std::array<GroupInfo, 4> kGroups = {{
    {G::kDaemon, "ckptmon-daemon",
     "About ckptmon itself. The alerts the daemon evaluates (ckpt_alert, pushed to\n"
     "Alertmanager by ckptmon) cannot fire when ckptmon is down, blind or\n"
     "misconfigured, which is what most of these catch."},
    {G::kCheckpoints, "ckptmon-checkpoints",
     "The domain alerts in PromQL over ckptmon's metrics, for a fleet watched by\n"
     "Prometheus: they page even where no ckptmon pushes to Alertmanager. Same\n"
     "names, thresholds, `for:` and hysteresis as the daemon's evaluator (an\n"
     "active alert holds while ALERTS says it is active and the clear threshold is\n"
     "not reached); enable one of the two per fleet (docs/operations.md\n"
     "\"Prometheus-side alerts\")."},
    {G::kGpu, "ckptmon-gpu", "The GPU alerts, on the figures the daemon derives per job."},
    {G::kStoragePath, "ckptmon-storage-path",
     "The storage-path alerts (docs/rules.md \"The storage path\"), on the daemon's\n"
     "exported verdicts and restore estimates."},
}};

}  // namespace

std::span<const AlertSpec> alert_table() { return kTable; }

const AlertSpec& alert_spec(AlertId id) { return kTable[static_cast<std::size_t>(id)]; }

const AlertRuleCommon* alert_rule(const AlertRules& r, AlertId id) {
  switch (id) {
    case AlertId::kDrainBacklogGrowing:
      return &r.drain_backlog_growing;
    case AlertId::kDrainTooSlow:
      return &r.drain_too_slow;
    case AlertId::kTierFillingUp:
      return &r.tier_filling_up;
    case AlertId::kTierAlmostFull:
      return &r.tier_almost_full;
    case AlertId::kNextWontFit:
      return &r.next_wont_fit;
    case AlertId::kPartial:
      return &r.partial;
    case AlertId::kCleanupStalled:
      return &r.cleanup_stalled;
    case AlertId::kDeletionStalled:
      return &r.deletion_stalled;
    case AlertId::kOutsideAllowedResidency:
      return &r.outside_allowed_residency;
    case AlertId::kTierNotEncrypted:
      return &r.tier_not_encrypted;
    case AlertId::kRestoreDrillFailed:
      return &r.restore_drill_failed;
    case AlertId::kRecoveryPointStale:
      return &r.recovery_point_stale;
    case AlertId::kCompletionSkewHigh:
      return &r.completion_skew_high;
    case AlertId::kTierDown:
      return &r.tier_down;
    case AlertId::kBandwidthShortfall:
      return &r.bandwidth_shortfall;
    case AlertId::kStateWriteFailing:
      return &r.state_write_failing;
    case AlertId::kStallingGpus:
      return &r.stalling_gpus;
    case AlertId::kGoodputLow:
      return &r.goodput_low;
    case AlertId::kWindowMissed:
      return &r.window_missed;
    case AlertId::kRtoAtRisk:
      return &r.rto_at_risk;
    case AlertId::kRecoveryPointNotDurable:
      return &r.recovery_point_not_durable;
    case AlertId::kUnderCopied:
      return &r.under_copied;
    case AlertId::kIntegrityFailed:
      return &r.integrity_failed;
    case AlertId::kTierInodesLow:
      return &r.tier_inodes_low;
    case AlertId::kSavesFailing:
      return &r.saves_failing;
    case AlertId::kAccessFinding:
      return &r.access_finding;
    case AlertId::kCkptmonDown:
    case AlertId::kCollectorFailing:
    case AlertId::kConfigReloadFailed:
    case AlertId::kCatalogStale:
    case AlertId::kAlertmanagerUnreachable:
      return nullptr;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> alert_params(const AlertRules& r, AlertId id) {
  const auto secs = [](Params& p, const std::string& key, double s) {
    p.emplace_back(key + "_seconds", alert_number(s));
    p.emplace_back(key, duration(s));
  };
  Params p;
  switch (id) {
    case AlertId::kDrainBacklogGrowing:
      p.emplace_back("min_overlapping",
                     alert_number(static_cast<double>(r.drain_backlog_growing.min_overlapping)));
      break;
    case AlertId::kDrainTooSlow:
      secs(p, "max_pending_age", r.drain_too_slow.max_pending_age_seconds);
      secs(p, "max_time_to_empty", r.drain_too_slow.max_time_to_empty_seconds);
      break;
    case AlertId::kTierFillingUp:
      secs(p, "horizon", r.tier_filling_up.horizon_seconds);
      secs(p, "clear_horizon", r.tier_filling_up.clear_horizon_seconds);
      break;
    case AlertId::kTierAlmostFull:
      p.emplace_back("used_ratio", alert_number(r.tier_almost_full.used_ratio));
      p.emplace_back("clear_used_ratio", alert_number(r.tier_almost_full.clear_used_ratio));
      p.emplace_back("avail_percent", alert_percent(1 - r.tier_almost_full.used_ratio));
      break;
    case AlertId::kNextWontFit:
      p.emplace_back("clear_margin_ratio", alert_number(r.next_wont_fit.clear_margin_ratio));
      p.emplace_back("clear_factor", alert_number(1 + r.next_wont_fit.clear_margin_ratio));
      break;
    case AlertId::kPartial:
      p.emplace_back("min_partial", alert_number(static_cast<double>(r.partial.min_partial)));
      break;
    case AlertId::kCleanupStalled:
      secs(p, "max_age", r.cleanup_stalled.max_age_seconds);
      break;
    case AlertId::kDeletionStalled:
      secs(p, "deletion_within", r.deletion_stalled.deletion_within_seconds);
      break;
    case AlertId::kRecoveryPointStale:
      secs(p, "max_age", r.recovery_point_stale.max_age_seconds);
      secs(p, "active_window", r.recovery_point_stale.active_window_seconds);
      break;
    case AlertId::kCompletionSkewHigh:
      secs(p, "max_skew", r.completion_skew_high.max_skew_seconds);
      secs(p, "clear_skew", r.completion_skew_high.clear_skew_seconds);
      break;
    case AlertId::kBandwidthShortfall:
      p.emplace_back("min_ratio", alert_number(r.bandwidth_shortfall.min_ratio));
      p.emplace_back("clear_ratio", alert_number(r.bandwidth_shortfall.clear_ratio));
      p.emplace_back("min_ratio_percent", alert_percent(r.bandwidth_shortfall.min_ratio));
      break;
    case AlertId::kStateWriteFailing:
      p.emplace_back("failing_after", alert_number(static_cast<double>(kStoreFailingAfter)));
      break;
    case AlertId::kStallingGpus: {
      const auto& g = r.stalling_gpus;
      p.emplace_back("consecutive", alert_number(static_cast<double>(g.consecutive)));
      p.emplace_back("min_drop_ratio", alert_number(g.min_drop_ratio));
      p.emplace_back("clear_drop_ratio", alert_number(g.clear_drop_ratio));
      p.emplace_back("min_drop_percent", alert_percent(g.min_drop_ratio));
      p.emplace_back("min_lost_gpu_seconds", alert_number(g.min_lost_gpu_seconds));
      p.emplace_back("clear_lost_gpu_seconds", alert_number(g.clear_lost_gpu_seconds));
      break;
    }
    case AlertId::kGoodputLow:
      secs(p, "window", r.goodput_low.window_seconds);
      p.emplace_back("max_lost_ratio", alert_number(r.goodput_low.max_lost_ratio));
      p.emplace_back("clear_lost_ratio", alert_number(r.goodput_low.clear_lost_ratio));
      p.emplace_back("max_lost_percent", alert_percent(r.goodput_low.max_lost_ratio));
      break;
    case AlertId::kRtoAtRisk:
      p.emplace_back("clear_ratio", alert_number(r.rto_at_risk.clear_ratio));
      break;
    case AlertId::kTierInodesLow: {
      const auto& i = r.tier_inodes_low;
      p.emplace_back("min_free_ratio", alert_number(i.min_free_ratio));
      p.emplace_back("clear_free_ratio", alert_number(i.clear_free_ratio));
      p.emplace_back("min_free_percent", alert_percent(i.min_free_ratio));
      p.emplace_back("clear_margin_ratio", alert_number(i.clear_margin_ratio));
      p.emplace_back("clear_factor", alert_number(1 + i.clear_margin_ratio));
      break;
    }
    case AlertId::kSavesFailing:
      secs(p, "window", r.saves_failing.window_seconds);
      p.emplace_back("min_failures",
                     alert_number(static_cast<double>(r.saves_failing.min_failures)));
      break;
    case AlertId::kAccessFinding: {
      std::string regex, list;
      for (FindingKind k : r.access_finding.kinds) {
        if (!regex.empty()) {
          regex += "|";
          list += ", ";
        }
        regex += to_string(k);
        list += to_string(k);
      }
      p.emplace_back("kinds_regex", regex);
      p.emplace_back("kinds_list", list);
      break;
    }
    case AlertId::kTierDown:
    case AlertId::kWindowMissed:
    case AlertId::kRecoveryPointNotDurable:
    case AlertId::kUnderCopied:
    case AlertId::kIntegrityFailed:
    case AlertId::kOutsideAllowedResidency:
    case AlertId::kTierNotEncrypted:
    case AlertId::kRestoreDrillFailed:
    case AlertId::kCkptmonDown:
    case AlertId::kCollectorFailing:
    case AlertId::kConfigReloadFailed:
    case AlertId::kCatalogStale:
    case AlertId::kAlertmanagerUnreachable:
      break;
  }
  return p;
}

std::string alert_number(double v) { return prom_value(v); }

std::string alert_percent(double ratio) {
  return alert_number(std::round(ratio * 1000) / 10) + "%";
}

std::string runbook_url(std::string_view base, std::string_view name) {
  return std::string(base) + "#" + lower(name);
}

std::string render_prometheus_rules(const AlertingConfig& alerting) {
  const AlertRules& rules = alerting.rules;
  std::string out =
      "# GENERATED by `ckptmon alerts --format prometheus-rules` from the alert\n"
      "# table (rules/alert_table.cpp) and the thresholds of alerting.rules; do not\n"
      "# edit: change the table or pass --config.file with your thresholds.\n"
      "# runbook_url points at " +
      alerting.runbook_url +
      " (alerting.runbook_url). The scrape job must be\n"
      "# named \"ckptmon\" (prometheus.yml).\n"
      "groups:\n";
  bool first_group = true;
  for (const GroupInfo& g : kGroups) {
    if (!first_group) out += "\n";
    first_group = false;
    comment(out, "  ", g.comment);
    out += "  - name: " + std::string(g.name) + "\n    rules:\n";
    bool first = true;
    for (const AlertSpec& s : kTable) {
      if (s.group != g.group || !enabled(rules, s)) continue;
      if (!first) out += "\n";
      first = false;
      const Params p = all_params(rules, s);
      if (!s.comment.empty()) comment(out, "      ", s.comment);
      out += "      - alert: " + std::string(s.name()) + "\n";
      scalar(out, "        ", "expr", expression(s, p));
      // Always written, 0s too: tools that rewrite `for:` find every rule's.
      out += "        for: " + duration(for_seconds(rules, s)) + "\n";
      out += "        labels:\n          severity: " + std::string(to_string(severity(rules, s))) +
             "\n        annotations:\n";
      out += "          summary: " + quoted(fill(s.summary, p)) + "\n";
      out += "          description: " + quoted(fill(s.description, p)) + "\n";
      if (!s.extra_annotation.empty()) {
        out += "          " + std::string(s.extra_annotation) + ": " +
               quoted(fill(s.extra_annotation_value, p)) + "\n";
      }
      out += "          runbook_url: " + quoted(runbook_url(alerting.runbook_url, s.name())) + "\n";
    }
  }
  return out;
}

std::string render_runbook_index(const AlertingConfig& alerting) {
  const AlertRules& rules = alerting.rules;
  std::string out =
      "| Alert | Severity | For | Evaluated by | Fires when |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const AlertSpec& s : kTable) {
    const Params p = all_params(rules, s);
    std::string fires = fill(s.condition, p);
    if (!s.promql_differs.empty()) fires += " PromQL: " + fill(s.promql_differs, p);
    out += "| [" + std::string(s.name()) + "](#" + lower(s.name()) + ") | " +
           std::string(to_string(severity(rules, s))) + " | " + duration(for_seconds(rules, s)) +
           " | " + (s.daemon ? "daemon, Prometheus" : "Prometheus") + " | " + fires + " |\n";
  }
  return out;
}

std::string render_alert_listing(const AlertingConfig& alerting) {
  const AlertRules& rules = alerting.rules;
  std::string out;
  for (const AlertSpec& s : kTable) {
    const Params p = all_params(rules, s);
    out += std::string(s.name()) + "  " + std::string(to_string(severity(rules, s))) + "  for " +
           duration(for_seconds(rules, s)) + "  " +
           (s.daemon ? "daemon and Prometheus" : "Prometheus only") +
           (enabled(rules, s) ? "" : "  DISABLED") + "\n";
    out += "  fires when: " + fill(s.condition, p) + "\n";
    std::string expr = expression(s, p);
    for (std::size_t i = 0; (i = expr.find('\n', i)) != std::string::npos; i += 1) {
      expr.insert(i + 1, "    ");
    }
    out += "  PromQL:\n    " + expr + "\n";
    if (!s.promql_differs.empty()) out += "  PromQL differs: " + fill(s.promql_differs, p) + "\n";
    out += "  runbook: " + runbook_url(alerting.runbook_url, s.name()) + "\n\n";
  }
  return out;
}

}  // namespace ckptmon
