#include "exporter/rules.hpp"

#include <set>
#include <string_view>

#include "exporter/family.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

std::vector<prometheus::MetricFamily> rule_families(const RuleFigures& figures) {
  std::vector<prometheus::MetricFamily> out;
  FamilyBuilder backlog = gauge("ckpt_drain_backlog_bytes",
                                "Bytes of committed checkpoints on the tier not yet copied to "
                                "to_tier (missing files, and the missing tail of short ones).");
  FamilyBuilder rate = gauge("ckpt_drain_rate_bytes_per_second",
                             "Bytes per second copied to to_tier over the drain rate window.");
  FamilyBuilder tte = gauge("ckpt_drain_time_to_empty_seconds",
                            "Backlog divided by the drain rate; +Inf when nothing is copied.");
  FamilyBuilder oldest = gauge("ckpt_drain_oldest_pending_age_seconds",
                               "Age of the oldest committed checkpoint not yet fully drained; 0 "
                               "when none is pending.");
  FamilyBuilder overlap = gauge("ckpt_drain_overlapping_checkpoints",
                                "Pending checkpoints beyond the oldest: checkpoints that arrived "
                                "before the previous one finished draining.");
  FamilyBuilder pending =
      gauge("ckpt_drain_pending_checkpoints", "Committed checkpoints not yet fully on to_tier.");
  for (const DrainFigures& d : figures.drain) {
    const Labels l{{"tier", d.tier}, {"to_tier", d.to_tier}, {kTrainingJobLabel, d.job}};
    backlog.add(l, static_cast<double>(d.backlog_bytes));
    if (d.rate_bytes_per_second) rate.add(l, *d.rate_bytes_per_second);
    if (d.time_to_empty_seconds) tte.add(l, *d.time_to_empty_seconds);
    oldest.add(l, d.oldest_pending_age);
    overlap.add(l, static_cast<double>(d.overlapping_checkpoints));
    pending.add(l, static_cast<double>(d.pending_checkpoints));
  }
  append(out, {&backlog, &rate, &tte, &oldest, &overlap, &pending});

  FamilyBuilder required = gauge("ckpt_tier_required_capacity_bytes",
                                 "Capacity the sizing rule asks of the tier: retained versions x "
                                 "replicas + temporary-write allowance + failed-run residue + "
                                 "growth headroom.");
  FamilyBuilder retained = gauge("ckpt_tier_required_retained_bytes",
                                 "Sizing rule term: sum over jobs of latest checkpoint x retained "
                                 "versions x replicas.");
  FamilyBuilder temp = gauge("ckpt_tier_temp_write_allowance_bytes",
                             "Sizing rule term: room for the next checkpoints of the concurrent "
                             "jobs before old ones go.");
  FamilyBuilder residue =
      gauge("ckpt_tier_residue_bytes", "Sizing rule term: partial checkpoints found on the tier.");
  FamilyBuilder growth =
      gauge("ckpt_tier_growth_headroom_bytes", "Sizing rule term: margin for growing checkpoints.");
  FamilyBuilder needed = gauge("ckpt_tier_still_needed_bytes",
                               "Part of the required capacity not yet on the tier: what "
                               "available space still has to hold.");
  FamilyBuilder headroom = gauge("ckpt_tier_capacity_headroom_ratio",
                                 "Available bytes divided by still-needed bytes; below 1 the tier "
                                 "cannot hold what the policy retains.");
  FamilyBuilder ttf = gauge("ckpt_tier_time_to_full_seconds",
                            "Seconds until the least-squares trend of available bytes reaches "
                            "zero; +Inf when it is not falling.");
  FamilyBuilder concurrent = gauge("ckpt_tier_concurrent_jobs",
                                   "Jobs assumed to checkpoint at the same time (observed or "
                                   "configured).");
  FamilyBuilder next_bytes = gauge("ckpt_tier_next_checkpoint_bytes",
                                   "Bytes the next checkpoints of the concurrent jobs still have "
                                   "to write on the tier.");
  FamilyBuilder next_fits = gauge("ckpt_tier_next_checkpoint_fits",
                                  "1 when the next checkpoints of the concurrent jobs fit in the "
                                  "available space.");
  FamilyBuilder job_next_bytes = gauge("ckpt_job_next_checkpoint_bytes",
                                       "Bytes the job's next checkpoint still has to write on "
                                       "the tier.");
  FamilyBuilder job_next_fits = gauge("ckpt_job_next_checkpoint_fits",
                                      "1 when the job's next checkpoint fits in the tier's "
                                      "available space.");
  // What `plan --prometheus` needs besides the terms: the retained versions
  // of each job (keep_last, max_age and milestones applied).
  FamilyBuilder job_retained = gauge("ckpt_job_retained_versions",
                                     "Versions of the job the sizing rule retains on the tier "
                                     "(keep_last, fewer under max_age, plus milestones kept).");
  FamilyBuilder req_files = gauge("ckpt_tier_required_files",
                                  "The sizing rule's inode term: files per checkpoint x retained "
                                  "versions of every job, plus the files of the concurrent jobs' "
                                  "next checkpoints. Absent where the file system has no fixed "
                                  "inode count (f_files 0).");
  FamilyBuilder needed_files = gauge("ckpt_tier_files_still_needed",
                                     "ckpt_tier_required_files less the retained checkpoints' "
                                     "and saves in progress' files already on the tier: what "
                                     "ckpt_tier_files_free must still hold.");
  for (const CapacityFigures& c : figures.capacity) {
    const Labels l{{"tier", c.tier}};
    if (c.files_known) {
      req_files.add(l, c.required_files);
      needed_files.add(l, c.still_needed_files);
    }
    required.add(l, c.required_bytes);
    retained.add(l, c.retained_required_bytes);
    temp.add(l, c.temp_write_allowance_bytes);
    residue.add(l, c.residue_bytes);
    growth.add(l, c.growth_headroom_bytes);
    needed.add(l, c.still_needed_bytes);
    if (c.headroom_ratio) headroom.add(l, *c.headroom_ratio);
    if (c.time_to_full_seconds) ttf.add(l, *c.time_to_full_seconds);
    concurrent.add(l, static_cast<double>(c.concurrent_jobs));
    next_bytes.add(l, c.next_checkpoint_bytes);
    if (c.next_fits) next_fits.add(l, *c.next_fits ? 1 : 0);
    for (const JobCapacity& j : c.jobs) {
      const Labels jl{{"tier", c.tier}, {kTrainingJobLabel, j.job}};
      job_next_bytes.add(jl, j.next_checkpoint_bytes);
      job_retained.add(jl, j.retained_versions);
      if (j.next_fits) job_next_fits.add(jl, *j.next_fits ? 1 : 0);
    }
  }
  append(out, {&required, &retained, &temp, &residue, &growth, &needed, &headroom, &ttf,
               &concurrent, &next_bytes, &next_fits, &job_next_bytes, &job_next_fits, &job_retained,
               &req_files, &needed_files});

  if (figures.integrity_known) {
    FamilyBuilder failed = gauge("ckpt_integrity_failed_checkpoints",
                                 "Committed checkpoints of the job on the tier that failed "
                                 "integrity verification (checksum mismatch or missing shard); "
                                 "absent while the integrity verifier has not run.");
    for (const JobTierFigures& j : figures.job_tiers) {
      failed.add({{"tier", j.tier}, {kTrainingJobLabel, j.job}},
                 static_cast<double>(j.integrity_failed));
    }
    append(out, std::move(failed));
  }
  {
    FamilyBuilder recent = gauge("ckpt_saves_failed_recent",
                                 "checkpoint_failed events of the job on the tier within "
                                 "alerting.rules.CheckpointSavesFailing.window; absent without "
                                 "an event log.");
    for (const SaveFailureFigures& f : figures.save_failures) {
      recent.add({{"tier", f.tier}, {kTrainingJobLabel, f.job}}, static_cast<double>(f.recent));
    }
    append(out, std::move(recent));
  }

  FamilyBuilder bw_req = gauge("ckpt_tier_required_write_bandwidth_bytes_per_second",
                               "Bytes per checkpoint / allowed window x concurrent writers x (1 + "
                               "overhead).");
  FamilyBuilder bw_obs = gauge("ckpt_tier_observed_write_bandwidth_bytes_per_second",
                               "Write throughput of the tier during recent checkpoint saves: "
                               "measured by its I/O counters where it has a source, else "
                               "ckpt_tier_mtime_write_bandwidth_bytes_per_second.");
  FamilyBuilder bw_mtime = gauge("ckpt_tier_mtime_write_bandwidth_bytes_per_second",
                                 "Bytes of recent committed checkpoints divided by the time the "
                                 "tier spent writing them (save intervals from mtimes, "
                                 "manifests or events).");
  FamilyBuilder bw_writers = gauge("ckpt_tier_concurrent_writers",
                                   "Jobs assumed to write checkpoints at the same time, for the "
                                   "bandwidth rule (observed or configured).");
  for (const BandwidthFigures& b : figures.bandwidth) {
    const Labels l{{"tier", b.tier}};
    bw_req.add(l, b.required_bytes_per_second);
    bw_writers.add(l, static_cast<double>(b.concurrent_writers));
    if (b.observed_bytes_per_second) bw_obs.add(l, *b.observed_bytes_per_second);
    auto m = figures.storage_path.mtime_write_bytes_per_second.find(b.tier);
    if (m != figures.storage_path.mtime_write_bytes_per_second.end()) {
      if (m->second) bw_mtime.add(l, *m->second);
    } else if (b.observed_bytes_per_second) {
      bw_mtime.add(l, *b.observed_bytes_per_second);
    }
  }
  append(out, {&bw_req, &bw_obs, &bw_writers, &bw_mtime});

  FamilyBuilder streak = gauge("ckpt_checkpoint_gpu_stalled_streak",
                               "The job's newest checkpoints in a row that dropped GPU "
                               "utilisation by more than CheckpointStallingGPUs' min_drop_ratio "
                               "and lost at least its min_lost_gpu_seconds.");
  FamilyBuilder lost_ratio = gauge("ckpt_checkpoint_gpu_lost_ratio",
                                   "GPU-seconds lost to the job's checkpoints over "
                                   "CheckpointGoodputLow's window, over the job's GPU-seconds "
                                   "in it; no sample while the GPU source saw none of it.");
  for (const GpuJobFigures& g : figures.gpu_jobs) {
    const Labels l{{kTrainingJobLabel, g.job}};
    streak.add(l, static_cast<double>(g.stalled_streak));
    if (g.lost_ratio) lost_ratio.add(l, *g.lost_ratio);
  }
  append(out, {&streak, &lost_ratio});

  const StoragePathFigures& sp = figures.storage_path;
  FamilyBuilder cause = gauge("ckpt_last_checkpoint_slow_cause",
                              "1 for the cause of the (tier, job)'s latest judged checkpoint "
                              "when it was slow (missed checkpoint_window or median_multiple), "
                              "0 for the other causes; all 0 when it was on time.");
  FamilyBuilder slow_total =
      counter("ckpt_slow_checkpoints_total",
              "Slow checkpoints by cause, counted once per checkpoint committed "
              "while this process runs.");
  for (const LastSlowFigures& l : sp.last_slow) {
    for (std::size_t i = 0; i < kSlowCauseCount; ++i) {
      const auto c = static_cast<SlowCause>(i);
      const Labels cl{
          {"tier", l.tier}, {kTrainingJobLabel, l.job}, {"cause", std::string(to_string(c))}};
      cause.add(cl, l.verdict.slow && l.verdict.cause == c ? 1 : 0);
      auto n = sp.slow_counts.find(SlowCountKey{l.tier, l.job, c});
      slow_total.add(cl, n == sp.slow_counts.end() ? 0 : static_cast<double>(n->second));
    }
  }
  append(out, {&cause, &slow_total});

  FamilyBuilder est = gauge("ckpt_estimated_restore_seconds",
                            "Estimated time to restore the job's newest restorable checkpoint "
                            "from the tier: bytes / best read throughput + files x 3 x the "
                            "measured mean metadata latency (NFS), else files x 3 / metadata "
                            "rate. Absent when no read throughput is known.");
  FamilyBuilder rto = gauge("ckpt_recovery_time_objective_seconds",
                            "The configured recovery_time_objective of the (tier, job).");
  for (const RestoreFigures& r : sp.restore) {
    const Labels l{{"tier", r.tier}, {kTrainingJobLabel, r.job}};
    if (r.estimate) est.add(l, r.estimate->seconds);
    if (r.objective_seconds > 0) rto.add(l, r.objective_seconds);
  }
  append(out, {&est, &rto});
  FamilyBuilder restore_rate = gauge("ckpt_last_restore_read_bytes_per_second",
                                     "Read throughput the job's last successful restore "
                                     "achieved: its bytes over restore_start to restore_done.");
  for (const MeasuredRestore& m : sp.measured_restores) {
    restore_rate.add({{"tier", m.tier}, {kTrainingJobLabel, m.job}}, m.bytes_per_second);
  }
  append(out, std::move(restore_rate));

  FamilyBuilder cl_bytes = gauge("ckpt_cleanup_pending_bytes",
                                 "Bytes of checkpoints the retention policy says should be gone "
                                 "(expired, and partial ones past their window).");
  FamilyBuilder cl_count = gauge("ckpt_cleanup_pending_checkpoints",
                                 "Checkpoints the retention policy says should be gone.");
  FamilyBuilder cl_age = gauge("ckpt_cleanup_oldest_age_seconds",
                               "How long the oldest entry of the tier's deletion queue has "
                               "waited since it became due; 0 when the queue is empty.");
  for (const RetentionFigures& r : figures.retention) {
    const Labels l{{"tier", r.tier}, {kTrainingJobLabel, r.job}};
    cl_bytes.add(l, static_cast<double>(r.pending_bytes()));
    cl_count.add(l, static_cast<double>(r.pending_checkpoints()));
  }
  for (const auto& [tier, age] : figures.cleanup_oldest_age_seconds)
    cl_age.add({{"tier", tier}}, age);
  append(out, {&cl_bytes, &cl_count, &cl_age});

  FamilyBuilder dq_bytes = gauge("ckpt_deletion_queue_bytes",
                                 "Bytes on a role: deletion tier: everything there is pending "
                                 "removal.");
  FamilyBuilder dq_count = gauge("ckpt_deletion_queue_checkpoints",
                                 "Checkpoints on a role: deletion tier, pending removal.");
  FamilyBuilder dq_age = gauge("ckpt_deletion_queue_oldest_age_seconds",
                               "How long the checkpoint the walk first saw earliest on the "
                               "deletion tier has been there; 0 when the queue is empty.");
  for (const DeletionQueueFigures& d : figures.deletion_queue) {
    const Labels l{{"tier", d.tier}};
    dq_bytes.add(l, static_cast<double>(d.bytes));
    dq_count.add(l, static_cast<double>(d.checkpoints));
    dq_age.add(l, d.oldest_age_seconds);
  }
  append(out, {&dq_bytes, &dq_count, &dq_age});
  FamilyBuilder unverified = gauge("ckpt_cleanup_unverified_checkpoints",
                                   "Checkpoints a cleanup event said were removed that the walk "
                                   "still finds on the tier cleanup_verify_after later.");
  for (const UnverifiedCleanupFigures& u : figures.unverified_cleanups) {
    unverified.add({{"tier", u.tier}, {kTrainingJobLabel, u.job}},
                   static_cast<double>(u.checkpoints));
  }
  FamilyBuilder unverified_total =
      counter("ckpt_cleanup_unverified_total",
              "Checkpoints judged unverified (ckpt_cleanup_unverified_checkpoints), each counted "
              "once when first judged, since the daemon started.");
  for (const auto& [key, n] : figures.unverified_cleanup_totals) {
    unverified_total.add({{"tier", key.first}, {kTrainingJobLabel, key.second}},
                         static_cast<double>(n));
  }
  append(out, {&unverified, &unverified_total});

  FamilyBuilder rts = gauge("ckpt_restorable_timestamp_seconds",
                            "Commit time of the job's newest restorable checkpoint on any tier.");
  FamilyBuilder rstep =
      gauge("ckpt_restorable_step", "Step of the job's newest restorable checkpoint on any tier.");
  FamilyBuilder runread = gauge("ckpt_restorable_unreadable",
                                "1 when every copy of the job's newest restorable checkpoint is a "
                                "record kept from an earlier walk because its directory cannot be "
                                "read now (ckpt_job_unreadable): the recovery point is stale.");
  FamilyBuilder rver = gauge("ckpt_restorable_verified",
                             "1 when a copy of the job's newest restorable checkpoint passed "
                             "integrity verification.");
  for (const RecoveryPoint& p : figures.recovery) {
    if (!p.restorable) continue;
    const Labels l{{kTrainingJobLabel, p.job}};
    rts.add(l, p.timestamp);
    if (p.step >= 0) rstep.add(l, static_cast<double>(p.step));
    rver.add(l, p.verified ? 1 : 0);
    runread.add(l, p.unreadable ? 1 : 0);
  }
  append(out, {&rts, &rstep, &rver, &runread});

  // The estate: none of these while this instance watches no durable tier
  // (a durable copy may lie where another instance looks: unknown, not 0).
  FamilyBuilder dts = gauge("ckpt_durable_restorable_timestamp_seconds",
                            "Commit time of the job's newest restorable checkpoint on a durable "
                            "tier (durable: true; role staging is node-local by default).");
  FamilyBuilder dstep = gauge("ckpt_durable_restorable_step",
                              "Step of the job's newest restorable checkpoint on a durable tier.");
  FamilyBuilder risk = gauge("ckpt_steps_at_risk",
                             "ckpt_restorable_step minus ckpt_durable_restorable_step: the steps "
                             "a node loss would cost (the whole step while nothing is durable).");
  FamilyBuilder lag = gauge("ckpt_recovery_point_durable_lag_seconds",
                            "How long the job's oldest restorable checkpoint newer than the "
                            "durable recovery point has waited for a durable copy; 0 when none "
                            "waits.");
  FamilyBuilder within = gauge("ckpt_durable_within_seconds",
                               "The job's estate durable_within: how soon a commit should have a "
                               "durable copy.");
  FamilyBuilder versions =
      gauge("ckpt_versions", "Versions (steps) of the job with a restorable copy on some tier.");
  FamilyBuilder under = gauge("ckpt_versions_under_copied",
                              "Restorable versions of the job committed more than durable_within "
                              "ago with fewer complete durable copies than copies_required.");
  FamilyBuilder mismatch = gauge("ckpt_copies_mismatched",
                                 "Committed copies whose size differs from their version's first "
                                 "complete copy (not counted as copies).");
  for (const DurabilityFigures& d : figures.durability) {
    if (!d.durable_known) continue;
    const Labels l{{kTrainingJobLabel, d.job}};
    if (d.durable.restorable) {
      dts.add(l, d.durable.timestamp);
      if (d.durable.step >= 0) dstep.add(l, static_cast<double>(d.durable.step));
    }
    if (d.steps_at_risk) risk.add(l, static_cast<double>(*d.steps_at_risk));
    lag.add(l, d.durable_lag_seconds);
    within.add(l, d.policy.durable_within_seconds);
    versions.add(l, static_cast<double>(d.versions));
    under.add(l, static_cast<double>(d.versions_under_copied));
    mismatch.add(l, static_cast<double>(d.mismatched_copies));
  }
  append(out, {&dts, &dstep, &risk, &lag, &within, &versions, &under, &mismatch});

  FamilyBuilder overdue = gauge("ckpt_lifecycle_overdue_versions",
                                "Versions with a restorable copy on the tier committed more than "
                                "its drain.move_after ago and no copy on the tier it drains to.");
  FamilyBuilder move_after =
      gauge("ckpt_lifecycle_move_after_seconds",
            "The tier's drain.move_after: how soon after its commit a version should have a copy "
            "on the tier it drains to.");
  std::set<std::string_view> tiers_with_rule;
  for (const LifecycleFigures& f : figures.lifecycle) {
    overdue.add({{"tier", f.tier}, {kTrainingJobLabel, f.job}}, static_cast<double>(f.overdue));
    if (tiers_with_rule.insert(f.tier).second) {
      move_after.add({{"tier", f.tier}}, f.move_after_seconds);
    }
  }
  FamilyBuilder residency =
      gauge("ckpt_residency_violations",
            "Copies of the job's versions on the tier whose residency the job's namespaces do "
            "not allow (residency follows every copy); only jobs some namespace restricts.");
  for (const ResidencyFigures& f : figures.residency) {
    residency.add({{"tier", f.tier}, {kTrainingJobLabel, f.job}},
                  static_cast<double>(f.violations));
  }
  append(out, {&overdue, &move_after, &residency});
  return out;
}

std::vector<prometheus::MetricFamily> alert_families(std::span<const AlertInstance> firing) {
  std::vector<prometheus::MetricFamily> out;
  FamilyBuilder b = gauge("ckpt_alert", "1 for each firing alert, like Prometheus' ALERTS.");
  for (const AlertInstance& a : firing) {
    Labels l{{"alertname", a.labels.alertname}};
    if (!a.labels.severity.empty()) l.emplace_back("severity", a.labels.severity);
    if (!a.labels.tier.empty()) l.emplace_back("tier", a.labels.tier);
    if (!a.labels.job.empty()) l.emplace_back(kTrainingJobLabel, a.labels.job);
    b.add(l, 1);
  }
  append(out, std::move(b));
  return out;
}

std::vector<prometheus::MetricFamily> alertmanager_families(const AlertmanagerStats& stats) {
  std::vector<prometheus::MetricFamily> out;
  append_counter(out, "ckptmon_alertmanager_posts_total", "POSTs to Alertmanager that finished.",
                 static_cast<double>(stats.posts_total));
  append_counter(out, "ckptmon_alertmanager_post_errors_total",
                 "POSTs to Alertmanager that failed (network, timeout, non-2xx).",
                 static_cast<double>(stats.post_errors_total));
  append_counter(out, "ckptmon_alertmanager_alerts_sent_total",
                 "Alerts in POSTs Alertmanager accepted.",
                 static_cast<double>(stats.alerts_sent_total));
  if (stats.last_success > 0) {
    append_gauge(out, "ckptmon_alertmanager_last_success_timestamp_seconds",
                 "When Alertmanager last accepted a POST.", stats.last_success);
  }
  return out;
}

void rules_cycle_families(const RulesCycleFigures& f, std::vector<prometheus::MetricFamily>& out) {
  append_counter(out, "ckptmon_rules_evaluations_total", "Rules evaluation cycles completed.",
                 static_cast<double>(f.cycles));
  append_counter(out, "ckptmon_rules_evaluation_errors_total",
                 "Rules evaluation cycles that failed (the previous figures stay).",
                 static_cast<double>(f.errors));
  append_gauge(out, "ckptmon_rules_evaluation_duration_seconds",
               "Loop-thread time of the last rules evaluation: figures, alerts, "
               "history and Alertmanager hand-off (rendering excluded).",
               f.last_duration_seconds);
  append_gauge(out, "ckptmon_rules_last_evaluation_timestamp_seconds",
               "When the rules were last evaluated.", f.evaluated_at);
  append_gauge(out, "ckptmon_alerts_pending",
               "Alerts whose condition holds but whose for: has not passed yet.",
               static_cast<double>(f.pending_alerts));
}

}  // namespace ckptmon
