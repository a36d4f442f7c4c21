#include "exporter/events.hpp"

#include "exporter/family.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

void event_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  if (state.events) {
    const EventCatalog& ev = *state.events;
    const ManifestTotals& t = ev.totals;
    FamilyBuilder lines("ckptmon_manifest_lines_total",
                        "Event log lines read, by result (ok, unknown_event, rejected, blank); "
                        "each line counted once across restarts.",
                        MetricType::Counter);
    for (std::size_t i = 0; i < t.lines.size(); ++i) {
      lines.add({{"result", std::string(line_status_label(static_cast<LineStatus>(i)))}},
                static_cast<double>(t.lines[i]));
    }
    FamilyBuilder errors("ckptmon_manifest_errors_total",
                         "Event log lines rejected, by reason (docs/events.md).",
                         MetricType::Counter);
    for (RejectReason r : kAllRejectReasons) {
      errors.add({{"reason", std::string(reject_reason_label(r))}},
                 static_cast<double>(t.errors[static_cast<std::size_t>(r)]));
    }
    FamilyBuilder changes("ckptmon_manifest_file_changes_total",
                          "Event logs truncated, rotated away, deleted or replaced (inode reuse) "
                          "under the tailer.",
                          MetricType::Counter);
    for (std::size_t i = 0; i < kFileChangeCount; ++i) {
      changes.add({{"change", std::string(to_string(static_cast<FileChange>(i)))}},
                  static_cast<double>(t.file_changes[i]));
    }
    FamilyBuilder bytes("ckptmon_manifest_read_bytes_total",
                        "Bytes of event logs consumed (whole lines).", MetricType::Counter);
    bytes.add({}, static_cast<double>(t.bytes));
    FamilyBuilder stale("ckptmon_manifest_stale_events_total",
                        "Events for checkpoints older than the ones kept step by step; counted "
                        "as lines, not aggregated.",
                        MetricType::Counter);
    stale.add({}, static_cast<double>(t.stale_events));
    FamilyBuilder unreadable("ckptmon_manifest_unreadable_rows",
                             "Event aggregates in the state database that did not decode when "
                             "it was loaded, by table; kept there, not aggregated.",
                             MetricType::Gauge);
    for (std::size_t i = 0; i < kEventTables.size(); ++i) {
      unreadable.add({{"table", std::string(kEventTables[i])}},
                     static_cast<double>(ev.unreadable_rows[i]));
    }
    FamilyBuilder files("ckptmon_manifest_files", "Event logs being tailed.", MetricType::Gauge);
    FamilyBuilder backlog("ckptmon_manifest_backlog_bytes",
                          "Bytes written to event logs and not read yet.", MetricType::Gauge);
    FamilyBuilder open_files("ckptmon_manifest_open_files",
                             "Event logs whose descriptor is held; quiet ones are closed and "
                             "opened again when they grow.",
                             MetricType::Gauge);
    FamilyBuilder unread("ckptmon_manifest_unread_files",
                         "Event logs with lines not read in the last pass because the "
                         "descriptors for event logs (half of RLIMIT_NOFILE) were spent.",
                         MetricType::Gauge);
    FamilyBuilder refused("ckptmon_manifest_refused_files",
                          "Glob matches not read because they are not regular files (fifo, "
                          "device, socket, symlink, directory) or cannot be opened.",
                          MetricType::Gauge);
    double n_files = 0;
    double n_open = 0;
    double n_unread = 0;
    double n_backlog = 0;
    std::map<std::string, double> by_reason{{"fifo", 0},    {"device", 0},    {"socket", 0},
                                            {"symlink", 0}, {"directory", 0}, {"unreadable", 0}};
    for (const auto& [_, tail] : ev.tails) {
      n_files += static_cast<double>(tail.files);
      n_open += static_cast<double>(tail.open);
      n_unread += static_cast<double>(tail.unread);
      n_backlog += static_cast<double>(tail.backlog_bytes);
      for (const auto& [reason, n] : tail.refused) by_reason[reason] += static_cast<double>(n);
    }
    files.add({}, n_files);
    open_files.add({}, n_open);
    unread.add({}, n_unread);
    backlog.add({}, n_backlog);
    for (const auto& [reason, n] : by_reason) refused.add({{"reason", reason}}, n);

    FamilyBuilder duration("ckpt_checkpoint_duration_seconds",
                           "Save duration from the event log (checkpoint_commit minus the "
                           "earliest checkpoint_start), once per checkpoint.",
                           MetricType::Histogram);
    FamilyBuilder pause("ckpt_checkpoint_pause_seconds",
                        "Time training was paused for a save (pause_start to pause_end), once "
                        "per checkpoint: the first rank's pair that completes.",
                        MetricType::Histogram);
    FamilyBuilder failures("ckpt_checkpoint_failures_total",
                           "Checkpoints with a checkpoint_failed event.", MetricType::Counter);
    for (const auto& [key, job] : ev.jobs) {
      const Labels tj{{"tier", key.first}, {kTrainingJobLabel, key.second}};
      duration.add_histogram(tj, job.duration);
      pause.add_histogram(tj, job.pause);
      failures.add(tj, static_cast<double>(job.failures));
    }
    FamilyBuilder restore("ckpt_restore_duration_seconds",
                          "Duration of successful restores (restore_start to restore_done).",
                          MetricType::Histogram);
    FamilyBuilder last_restore("ckpt_last_restore_timestamp_seconds",
                               "When the job last finished a successful restore.",
                               MetricType::Gauge);
    FamilyBuilder phase("ckpt_last_restore_phase_seconds",
                        "Phases of the job's latest restore, from its restore phase events "
                        "(locate, read, reshard, resume); a phase whose two ends were not both "
                        "seen has no series.",
                        MetricType::Gauge);
    for (const auto& [job, r] : ev.restores) {
      restore.add_histogram({{kTrainingJobLabel, job}}, r.duration);
      if (r.last_ok_ts > 0) last_restore.add({{kTrainingJobLabel, job}}, r.last_ok_ts);
      if (!r.phases) continue;
      for (std::size_t i = 0; i < kRestorePhaseNames.size(); ++i) {
        if (auto sec = phase_seconds(*r.phases, i)) {
          phase.add({{kTrainingJobLabel, job}, {"phase", std::string(kRestorePhaseNames[i])}},
                    *sec);
        }
      }
    }
    for (auto* b :
         {&lines, &errors, &changes, &bytes, &stale, &unreadable, &files, &open_files, &unread,
          &backlog, &refused, &duration, &pause, &failures, &restore, &last_restore, &phase}) {
      append(out, std::move(*b));
    }
  }
  if (state.integrity) {
    FamilyBuilder checks("ckpt_integrity_checks_total",
                         "Files re-read by the integrity verifier, by result (ok, mismatch, "
                         "missing, error).",
                         MetricType::Counter);
    // Every configured tier gets its series from the start, at 0.
    std::map<std::string, IntegrityCounts> totals = state.integrity->totals;
    for (const auto& [tier, _] : state.tiers) totals.try_emplace(tier);
    for (const auto& [tier, c] : totals) {
      for (std::size_t i = 0; i < kIntegrityResultCount; ++i) {
        checks.add(
            {{"tier", tier}, {"result", std::string(to_string(static_cast<IntegrityResult>(i)))}},
            static_cast<double>(c.by_result[i]));
      }
    }
    FamilyBuilder refused("ckptmon_integrity_refused_total",
                          "Paths named by events or integrity.json that the verifier refused to "
                          "open (outside the tier, .., symlink, ...), by reason.",
                          MetricType::Counter);
    auto refusals = state.integrity->refused;
    for (const auto& [tier, _] : state.tiers) refusals.try_emplace(tier);
    for (const auto& [tier, counts] : refusals) {
      for (std::size_t i = 0; i < kPathRefusalCount; ++i) {
        refused.add(
            {{"tier", tier}, {"reason", std::string(to_string(static_cast<PathRefusal>(i)))}},
            static_cast<double>(counts[i]));
      }
    }
    append(out, std::move(checks));
    append(out, std::move(refused));
  }
}

void integrity_live_families(const IntegrityProgress& progress, double now,
                             std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  FamilyBuilder pending("ckptmon_integrity_pending_shards",
                        "Shards with checksums queued for the integrity verifier.",
                        MetricType::Gauge);
  pending.add({}, static_cast<double>(progress.pending.load()));
  FamilyBuilder stuck("ckptmon_integrity_stuck_reads",
                      "1 while a verifier read has returned no bytes for longer than "
                      "integrity.read_deadline (a hung mount).",
                      MetricType::Gauge);
  stuck.add({}, static_cast<double>(progress.stuck(now)));
  append(out, std::move(pending));
  append(out, std::move(stuck));
}

}  // namespace ckptmon
