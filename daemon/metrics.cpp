#include "daemon/metrics.hpp"

#include "model/walk_live.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "daemon/gpu_metrics.hpp"
#include "daemon/io_metrics.hpp"
#include "model/checkpoint_skew.hpp"
#include "util/label.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

FamilyBuilder::FamilyBuilder(std::string name, std::string help, prometheus::MetricType type) {
  family_.name = std::move(name);
  family_.help = std::move(help);
  family_.type = type;
}

FamilyBuilder& FamilyBuilder::add(const Labels& labels, double value) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, label_value(v)});
  switch (family_.type) {
    case prometheus::MetricType::Counter:
      m.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      m.gauge.value = value;
      break;
    default:
      m.untyped.value = value;
      break;
  }
  family_.metric.push_back(std::move(m));
  return *this;
}

FamilyBuilder& FamilyBuilder::add_histogram(const Labels& labels, const HistogramData& h) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, label_value(v)});
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < h.bounds.size() ? h.bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back(b);
  }
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  family_.metric.push_back(std::move(m));
  return *this;
}

void append(std::vector<prometheus::MetricFamily>& out, FamilyBuilder&& b) {
  if (!b.empty()) out.push_back(b.take());
}

void append_scalar(std::vector<prometheus::MetricFamily>& out, std::string name, std::string help,
                   prometheus::MetricType type, double value) {
  FamilyBuilder b(std::move(name), std::move(help), type);
  b.add({}, value);
  append(out, std::move(b));
}

std::vector<prometheus::MetricFamily> state_families(const State& state) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;

  FamilyBuilder up("ckpt_tier_up",
                   "1 when the tier root answered its last probe in time, 0 when it is missing, "
                   "unreadable or stuck.",
                   MetricType::Gauge);
  FamilyBuilder info("ckpt_tier_info", "Tier identity: role and the mount it lives on. Always 1.",
                     MetricType::Gauge);
  FamilyBuilder size("ckpt_tier_size_bytes", "Size of the file system holding the tier.",
                     MetricType::Gauge);
  FamilyBuilder avail("ckpt_tier_avail_bytes",
                      "Space available to unprivileged writers on the tier's file system.",
                      MetricType::Gauge);
  FamilyBuilder free_b("ckpt_tier_free_bytes",
                       "Free space on the tier's file system, root-reserved blocks included.",
                       MetricType::Gauge);
  FamilyBuilder files("ckpt_tier_files", "Inodes (file nodes) of the tier's file system.",
                      MetricType::Gauge);
  FamilyBuilder files_free("ckpt_tier_files_free", "Free inodes of the tier's file system.",
                           MetricType::Gauge);
  FamilyBuilder ro("ckpt_tier_readonly",
                   "1 when the tier's file system is mounted read-only (superblock options).",
                   MetricType::Gauge);
  FamilyBuilder last_ok("ckpt_tier_last_success_timestamp_seconds",
                        "When the tier last answered a probe successfully.", MetricType::Gauge);
  FamilyBuilder shards("ckpt_tier_shards",
                       "Instances the tier's jobs are split between (shard: i/n gives n; 1 when "
                       "not sharded). Above 1 this instance's required capacity, still-needed "
                       "bytes and headroom cover only its own jobs: partial figures that the "
                       "fleet recording rules sum per tier.",
                       MetricType::Gauge);

  for (const auto& [name, t] : state.tiers) {
    const Labels tier{{"tier", name}};
    up.add(tier, t.up ? 1 : 0);
    info.add({{"tier", name},
              {"role", std::string(to_string(t.config.role))},
              {"mountpoint", t.has_stats ? t.stats.mountpoint : ""},
              {"fstype", t.has_stats ? t.stats.fstype : ""},
              {"device", t.has_stats ? t.stats.device : ""}},
             1);
    if (t.last_success > 0) last_ok.add(tier, t.last_success);
    shards.add(tier, static_cast<double>(std::max<std::uint32_t>(1, t.config.shard_count)));
    // Like node_exporter for a stuck mount: no figures rather than stale ones.
    if (!t.up || !t.has_stats) continue;
    size.add(tier, t.stats.size_bytes);
    avail.add(tier, t.stats.avail_bytes);
    free_b.add(tier, t.stats.free_bytes);
    files.add(tier, t.stats.files);
    files_free.add(tier, t.stats.files_free);
    ro.add(tier, t.stats.readonly ? 1 : 0);
  }
  append(out, std::move(up));
  append(out, std::move(info));
  append(out, std::move(size));
  append(out, std::move(avail));
  append(out, std::move(free_b));
  append(out, std::move(files));
  append(out, std::move(files_free));
  append(out, std::move(ro));
  append(out, std::move(last_ok));
  append(out, std::move(shards));

  catalog_families(state, out);
  event_families(state, out);
  gpu_families(state, out);
  io_families(state, out);

  FamilyBuilder dur("ckptmon_collector_duration_seconds",
                    "Duration of the slowest target of the collector's last run (up to its "
                    "deadline while still running).",
                    MetricType::Gauge);
  FamilyBuilder ok("ckptmon_collector_success",
                   "1 when every target of the collector's last run succeeded in time.",
                   MetricType::Gauge);
  FamilyBuilder timeouts("ckptmon_collector_timeouts_total",
                         "Collector runs that passed their deadline.", MetricType::Counter);
  FamilyBuilder skipped("ckptmon_collector_skipped_total",
                        "Collector runs not started because the previous run of the same "
                        "target was still in flight.",
                        MetricType::Counter);
  FamilyBuilder not_started("ckptmon_collector_not_started_total",
                            "Collector runs that no worker ran: still queued at their deadline "
                            "(workers busy with stuck jobs) or refused because the target "
                            "already has a stuck job. The target was not probed.",
                            MetricType::Counter);
  FamilyBuilder errors("ckptmon_collector_errors_total", "Collector runs that failed.",
                       MetricType::Counter);
  for (const auto& [name, c] : state.collectors) {
    const Labels l{{"collector", name}};
    dur.add(l, c.duration_seconds());
    ok.add(l, c.success() ? 1 : 0);
    timeouts.add(l, static_cast<double>(c.timeouts));
    skipped.add(l, static_cast<double>(c.skipped));
    not_started.add(l, static_cast<double>(c.not_started));
    errors.add(l, static_cast<double>(c.errors));
  }
  append(out, std::move(dur));
  append(out, std::move(ok));
  append(out, std::move(timeouts));
  append(out, std::move(skipped));
  append(out, std::move(not_started));
  append(out, std::move(errors));
  return out;
}

void catalog_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  FamilyBuilder count("ckpt_checkpoints", "Checkpoints on the tier by job and state.",
                      MetricType::Gauge);
  FamilyBuilder unreadable("ckpt_job_unreadable",
                           "1 when the job directory, or a directory in it, could not be read in "
                           "the tier's last walk (EACCES, EIO, ESTALE...): the job's last known "
                           "checkpoints are kept; /api/v1/findings?kind=unreadable lists paths.",
                           MetricType::Gauge);
  FamilyBuilder stored("ckpt_job_stored_bytes",
                       "Bytes of all the job's checkpoints on the tier, every state.",
                       MetricType::Gauge);
  FamilyBuilder latest_step("ckpt_latest_committed_step",
                            "Step of the job's newest committed checkpoint on the tier.",
                            MetricType::Gauge);
  FamilyBuilder last_bytes("ckpt_last_checkpoint_bytes",
                           "Bytes of the job's newest committed checkpoint on the tier.",
                           MetricType::Gauge);
  FamilyBuilder last_allocated("ckpt_last_checkpoint_allocated_bytes",
                               "Bytes the job's newest committed checkpoint on the tier occupies "
                               "on disk (st_blocks x 512): below ckpt_last_checkpoint_bytes where "
                               "the file system compresses or files are sparse.",
                               MetricType::Gauge);
  FamilyBuilder last_components("ckpt_last_checkpoint_component_bytes",
                                "Bytes of the job's newest committed checkpoint on the tier by "
                                "what its files hold (model, optimizer, scheduler, scaler, rng, "
                                "dataloader, metadata, other), as the layout's file names tell.",
                                MetricType::Gauge);
  FamilyBuilder last_files("ckpt_last_checkpoint_files",
                           "Files of the job's newest committed checkpoint on the tier.",
                           MetricType::Gauge);
  FamilyBuilder last_skew("ckpt_last_checkpoint_completion_skew_seconds",
                          "Newest minus oldest shard write of the job's newest committed "
                          "checkpoint on the tier.",
                          MetricType::Gauge);
  FamilyBuilder last_duration("ckpt_last_checkpoint_duration_seconds",
                              "Save duration of the job's newest committed checkpoint, where a "
                              "manifest or the event log tells.",
                              MetricType::Gauge);
  FamilyBuilder last_ts("ckpt_last_checkpoint_timestamp_seconds",
                        "Commit time of the job's newest committed checkpoint on the tier.",
                        MetricType::Gauge);
  FamilyBuilder partial("ckpt_partial_checkpoints",
                        "Partial (unrestorable) checkpoints of the job on the tier.",
                        MetricType::Gauge);
  FamilyBuilder partial_bytes("ckpt_partial_bytes",
                              "Bytes held by the job's partial checkpoints on the tier.",
                              MetricType::Gauge);
  FamilyBuilder skew("ckpt_completion_skew_seconds",
                     "Completion skew of committed checkpoints (newest minus oldest shard "
                     "write), each counted once when first seen committed.",
                     MetricType::Histogram);
  FamilyBuilder scan_dur("ckptmon_scan_duration_seconds", "Duration of the tier's last walk.",
                         MetricType::Gauge);
  FamilyBuilder scan_dirs("ckptmon_scan_directories_listed_total",
                          "Directories listed (readdir) while walking the tier.",
                          MetricType::Counter);
  FamilyBuilder scan_stats("ckptmon_scan_stat_calls_total",
                           "stat calls made while walking the tier.", MetricType::Counter);
  FamilyBuilder scan_perm("ckptmon_scan_permission_errors_total",
                          "Entries of the tier that could not be read for lack of permission.",
                          MetricType::Counter);
  FamilyBuilder scan_gone("ckptmon_scan_vanished_total",
                          "Entries that disappeared between listing and stat (normal while "
                          "checkpoints are written or deleted).",
                          MetricType::Counter);
  FamilyBuilder scan_inflight("ckptmon_scan_inflight_calls",
                              "Metadata calls (open, getdents, statx, readlink, read) of the "
                              "tier's walk issued and not returned yet; a stuck call stays.",
                              MetricType::Gauge);
  FamilyBuilder scan_slots("ckptmon_scan_walk_concurrency",
                           "Metadata calls the tier's walk may have in flight at once.",
                           MetricType::Gauge);
  FamilyBuilder scan_call_dur("ckptmon_scan_call_duration_seconds",
                              "Duration of the metadata calls of the tier's walks.",
                              MetricType::Histogram);
  FamilyBuilder scan_rate("ckptmon_scan_calls_per_second",
                          "Metadata calls per second achieved by the tier's last walk.",
                          MetricType::Gauge);
  FamilyBuilder scan_ok("ckptmon_scan_last_success_timestamp_seconds",
                        "When the tier's last complete walk finished.", MetricType::Gauge);
  FamilyBuilder findings("ckpt_access_findings",
                         "Access audit findings on the tier by kind (checkpoints or job "
                         "directories); /api/v1/findings lists them.",
                         MetricType::Gauge);
  FamilyBuilder stale("ckptmon_catalog_stale",
                      "1 while the tier's walk is past its deadline: its catalog figures are "
                      "from an older walk.",
                      MetricType::Gauge);

  for (const auto& [tier, cat] : state.catalogs) {
    const Labels t{{"tier", tier}};
    scan_dur.add(t, cat.scan.last_duration_seconds);
    scan_dirs.add(t, static_cast<double>(cat.scan.dirs_listed));
    scan_stats.add(t, static_cast<double>(cat.scan.stat_calls));
    scan_perm.add(t, static_cast<double>(cat.scan.permission_errors));
    scan_gone.add(t, static_cast<double>(cat.scan.vanished));
    stale.add(t, cat.stale ? 1 : 0);
    if (cat.walk_live) {
      scan_inflight.add(t, static_cast<double>(cat.walk_live->inflight.load()));
      scan_slots.add(t, cat.walk_live->slots.load());
      scan_call_dur.add_histogram(t, cat.walk_live->histogram());
    }
    if (cat.scan.last_duration_seconds > 0) {
      scan_rate.add(t, static_cast<double>(cat.scan.last_calls) / cat.scan.last_duration_seconds);
    }
    if (cat.scan.last_finished > 0 && cat.scan.last_error.empty()) {
      scan_ok.add(t, cat.scan.last_finished);
    }
    if (!cat.scanned) continue;
    std::array<double, kFindingKindCount> by_kind{};
    for (const auto& f : cat.findings) by_kind[static_cast<std::size_t>(f.kind)] += 1;
    for (int k = 0; k < kFindingKindCount; ++k) {
      findings.add({{"tier", tier}, {"kind", std::string(to_string(static_cast<FindingKind>(k)))}},
                   by_kind[static_cast<std::size_t>(k)]);
    }

    for (const auto& [job, f] : summarize_jobs(cat)) {
      const Labels tj{{"tier", tier}, {kTrainingJobLabel, job}};
      for (CkptState s : kAllCkptStates) {
        count.add({{"tier", tier}, {kTrainingJobLabel, job}, {"state", std::string(to_string(s))}},
                  static_cast<double>(f.count(s)));
      }
      stored.add(tj, static_cast<double>(f.stored_bytes));
      unreadable.add(tj, f.unreadable ? 1 : 0);
      partial.add(tj, static_cast<double>(f.count(CkptState::kPartial)));
      partial_bytes.add(tj, static_cast<double>(f.partial_bytes));
      if (f.latest_committed != nullptr) {
        const Checkpoint& c = *f.latest_committed;
        if (c.step >= 0) latest_step.add(tj, static_cast<double>(c.step));
        last_bytes.add(tj, static_cast<double>(c.bytes));
        last_files.add(tj, static_cast<double>(c.files));
        last_allocated.add(tj, static_cast<double>(c.allocated_bytes));
        for (std::size_t i = 0; i < kComponentCount; ++i) {
          last_components.add({{"tier", tier},
                               {kTrainingJobLabel, job},
                               {"component", std::string(to_string(static_cast<Component>(i)))}},
                              static_cast<double>(c.component_bytes[i]));
        }
        // The event log knows shard end times and the save's start and commit
        // exactly; file mtimes are the fallback.
        const EventStep* ev = state.event_step(c);
        last_skew.add(tj, completion_skew(c, ev));
        last_ts.add(tj, c.marker_time > 0 ? c.marker_time : c.last_write);
        if (c.save_end > c.save_start && c.save_start > 0) {
          last_duration.add(tj, c.save_end - c.save_start);
        } else if (auto d = ev != nullptr ? ev->duration() : std::nullopt) {
          last_duration.add(tj, *d);
        }
      }
    }
    for (const auto& [job, h] : cat.skew_by_job) {
      skew.add_histogram({{"tier", tier}, {kTrainingJobLabel, job}}, h);
    }
  }

  for (auto* b :
       {&count,           &unreadable,    &stored,     &latest_step,   &last_bytes, &last_allocated,
        &last_components, &last_files,    &last_skew,  &last_duration, &last_ts,    &partial,
        &partial_bytes,   &skew,          &scan_dur,   &scan_dirs,     &scan_stats, &scan_perm,
        &scan_gone,       &scan_inflight, &scan_slots, &scan_call_dur, &scan_rate,  &scan_ok,
        &findings,        &stale}) {
    append(out, std::move(*b));
  }
}

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
    FamilyBuilder files("ckptmon_manifest_files", "Event logs being tailed.", MetricType::Gauge);
    FamilyBuilder backlog("ckptmon_manifest_backlog_bytes",
                          "Bytes written to event logs and not read yet.", MetricType::Gauge);
    FamilyBuilder refused("ckptmon_manifest_refused_files",
                          "Glob matches not read because they are not regular files (fifo, "
                          "device, socket, symlink, directory) or cannot be opened.",
                          MetricType::Gauge);
    double n_files = 0;
    double n_backlog = 0;
    std::map<std::string, double> by_reason{{"fifo", 0},    {"device", 0},    {"socket", 0},
                                            {"symlink", 0}, {"directory", 0}, {"unreadable", 0}};
    for (const auto& [_, tail] : ev.tails) {
      n_files += static_cast<double>(tail.files);
      n_backlog += static_cast<double>(tail.backlog_bytes);
      for (const auto& [reason, n] : tail.refused) by_reason[reason] += static_cast<double>(n);
    }
    files.add({}, n_files);
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
    for (const auto& [job, r] : ev.restores) {
      restore.add_histogram({{kTrainingJobLabel, job}}, r.duration);
      if (r.last_ok_ts > 0) last_restore.add({{kTrainingJobLabel, job}}, r.last_ok_ts);
    }
    for (auto* b : {&lines, &errors, &changes, &bytes, &stale, &files, &backlog, &refused,
                    &duration, &pause, &failures, &restore, &last_restore}) {
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

std::vector<prometheus::MetricFamily> process_families(const std::string& proc_path,
                                                       double start_time) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  std::ifstream in(proc_path + "/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  auto close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(stat.substr(close + 2));
    std::vector<std::string> f;
    for (std::string tok; rest >> tok;) f.push_back(tok);
    // f[0] is field 3 (state): utime is field 14, stime 15, rss 24.
    auto num = [](const std::string& t) {
      double v = 0;
      std::from_chars(t.data(), t.data() + t.size(), v);
      return v;
    };
    if (f.size() > 21) {
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      const double cpu = (num(f[11]) + num(f[12])) / ticks;
      const double rss = num(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE));
      FamilyBuilder c("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", MetricType::Counter);
      c.add({}, cpu);
      append(out, std::move(c));
      FamilyBuilder r("process_resident_memory_bytes", "Resident memory size in bytes.",
                      MetricType::Gauge);
      r.add({}, rss);
      append(out, std::move(r));
    }
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator(proc_path + "/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    FamilyBuilder f("process_open_fds", "Number of open file descriptors.", MetricType::Gauge);
    f.add({}, fds);
    append(out, std::move(f));
  }
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    FamilyBuilder f("process_max_fds", "Maximum number of open file descriptors.",
                    MetricType::Gauge);
    f.add({}, static_cast<double>(rl.rlim_cur));
    append(out, std::move(f));
  }
  FamilyBuilder st("process_start_time_seconds",
                   "Start time of the process since unix epoch in seconds.", MetricType::Gauge);
  st.add({}, start_time);
  append(out, std::move(st));
  return out;
}

std::string serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, families);
  return os.str();
}

}  // namespace ckptmon
