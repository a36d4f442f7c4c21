#include "exporter/catalog.hpp"

#include <array>

#include "exporter/family.hpp"
#include "model/checkpoint_skew.hpp"
#include "model/walk_live.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

namespace {

using prometheus::MetricType;

// The families with a sample per job: most of a scrape's bytes. A tier's
// share of them depends only on its catalog and the event catalog, so
// CatalogRenderCache renders it once per change of either.
struct JobFamilies {
  FamilyBuilder count{"ckpt_checkpoints", "Checkpoints on the tier by job and state.",
                      MetricType::Gauge};
  FamilyBuilder unreadable{"ckpt_job_unreadable",
                           "1 when the job directory, or a directory in it, could not be read in "
                           "the tier's last walk (EACCES, EIO, ESTALE...): the job's last known "
                           "checkpoints are kept; /api/v1/findings?kind=unreadable lists paths.",
                           MetricType::Gauge};
  FamilyBuilder stored{"ckpt_job_stored_bytes",
                       "Bytes of all the job's checkpoints on the tier, every state.",
                       MetricType::Gauge};
  FamilyBuilder latest_step{"ckpt_latest_committed_step",
                            "Step of the job's newest committed checkpoint on the tier.",
                            MetricType::Gauge};
  FamilyBuilder last_bytes{"ckpt_last_checkpoint_bytes",
                           "Bytes of the job's newest committed checkpoint on the tier.",
                           MetricType::Gauge};
  FamilyBuilder last_allocated{"ckpt_last_checkpoint_allocated_bytes",
                               "Bytes the job's newest committed checkpoint on the tier occupies "
                               "on disk (st_blocks x 512): below ckpt_last_checkpoint_bytes where "
                               "the file system compresses or files are sparse.",
                               MetricType::Gauge};
  FamilyBuilder last_components{
      "ckpt_last_checkpoint_component_bytes",
      "Bytes of the job's newest committed checkpoint on the tier by "
      "what its files hold (model, optimizer, scheduler, scaler, rng, "
      "dataloader, metadata, other), as the checkpoint's own metadata (DCP's "
      ".metadata) or else the layout's file names tell.",
      MetricType::Gauge};
  FamilyBuilder last_files{"ckpt_last_checkpoint_files",
                           "Files of the job's newest committed checkpoint on the tier.",
                           MetricType::Gauge};
  FamilyBuilder last_skew{"ckpt_last_checkpoint_completion_skew_seconds",
                          "Newest minus oldest shard write of the job's newest committed "
                          "checkpoint on the tier.",
                          MetricType::Gauge};
  FamilyBuilder last_duration{"ckpt_last_checkpoint_duration_seconds",
                              "Save duration of the job's newest committed checkpoint, where a "
                              "manifest or the event log tells.",
                              MetricType::Gauge};
  FamilyBuilder last_ts{"ckpt_last_checkpoint_timestamp_seconds",
                        "Commit time of the job's newest committed checkpoint on the tier.",
                        MetricType::Gauge};
  FamilyBuilder partial{"ckpt_partial_checkpoints",
                        "Partial (unrestorable) checkpoints of the job on the tier.",
                        MetricType::Gauge};
  FamilyBuilder partial_bytes{"ckpt_partial_bytes",
                              "Bytes held by the job's partial checkpoints on the tier.",
                              MetricType::Gauge};
  FamilyBuilder skew{"ckpt_completion_skew_seconds",
                     "Completion skew of committed checkpoints (newest minus oldest shard "
                     "write), each counted once when first seen committed.",
                     MetricType::Histogram};

  std::array<FamilyBuilder*, 14> all() {
    return {&count,          &unreadable,      &stored,        &latest_step, &last_bytes,
            &last_allocated, &last_components, &last_files,    &last_skew,   &last_duration,
            &last_ts,        &partial,         &partial_bytes, &skew};
  }
};

// The families with a sample (or a few) per tier: rendered every time.
struct TierFamilies {
  FamilyBuilder scan_dur{"ckptmon_scan_duration_seconds", "Duration of the tier's last walk.",
                         MetricType::Gauge};
  FamilyBuilder scan_dirs{"ckptmon_scan_directories_listed_total",
                          "Directories listed (readdir) while walking the tier.",
                          MetricType::Counter};
  FamilyBuilder scan_stats{"ckptmon_scan_stat_calls_total",
                           "stat calls made while walking the tier.", MetricType::Counter};
  FamilyBuilder scan_perm{"ckptmon_scan_permission_errors_total",
                          "Entries of the tier that could not be read for lack of permission.",
                          MetricType::Counter};
  FamilyBuilder scan_gone{"ckptmon_scan_vanished_total",
                          "Entries that disappeared between listing and stat (normal while "
                          "checkpoints are written or deleted).",
                          MetricType::Counter};
  FamilyBuilder scan_inflight{"ckptmon_scan_inflight_calls",
                              "Metadata calls (open, getdents, statx, readlink, read) of the "
                              "tier's walk issued and not returned yet; a stuck call stays.",
                              MetricType::Gauge};
  FamilyBuilder scan_slots{"ckptmon_scan_walk_concurrency",
                           "Metadata calls the tier's walk may have in flight at once.",
                           MetricType::Gauge};
  FamilyBuilder scan_call_dur{"ckptmon_scan_call_duration_seconds",
                              "Duration of the metadata calls of the tier's walks.",
                              MetricType::Histogram};
  FamilyBuilder scan_rate{"ckptmon_scan_calls_per_second",
                          "Metadata calls per second achieved by the tier's last walk.",
                          MetricType::Gauge};
  FamilyBuilder scan_ok{"ckptmon_scan_last_success_timestamp_seconds",
                        "When the tier's last complete walk finished.", MetricType::Gauge};
  FamilyBuilder findings{"ckpt_access_findings",
                         "Access audit findings on the tier by kind (checkpoints or job "
                         "directories); /api/v1/findings lists them.",
                         MetricType::Gauge};
  FamilyBuilder stale{"ckptmon_catalog_stale",
                      "1 while the tier's walk is past its deadline: its catalog figures are "
                      "from an older walk.",
                      MetricType::Gauge};
  FamilyBuilder removed{"ckpt_removed_checkpoints_total",
                        "Checkpoints a complete walk of the tier no longer found, where nothing "
                        "was unreadable: verified removals since ckptmon started.",
                        MetricType::Counter};
  FamilyBuilder removed_bytes{"ckpt_removed_bytes_total",
                              "Bytes of the verified removals (ckpt_removed_checkpoints_total), "
                              "as the catalog last saw them.",
                              MetricType::Counter};
  FamilyBuilder metadata_unusable{
      "ckpt_checkpoint_metadata_unusable",
      "Checkpoints on the tier whose own metadata (PyTorch DCP's .metadata) could not give "
      "their component bytes, by reason: refused (a global or opcode off the unpickler's "
      "allow-list), malformed, unread (too large or unreadable). Their components come from "
      "file names; /api/v1/checkpoints says why in metadata_note.",
      MetricType::Gauge};

  std::array<FamilyBuilder*, 15> all() {
    return {&scan_dur,      &scan_dirs,  &scan_stats,    &scan_perm,     &scan_gone,
            &scan_inflight, &scan_slots, &scan_call_dur, &scan_rate,     &scan_ok,
            &findings,      &stale,      &removed,       &removed_bytes, &metadata_unusable};
  }
};

void add_job_samples(const std::string& tier, const TierCatalog& cat, const State& state,
                     JobFamilies& f) {
  for (const auto& [job, s] : summarize_jobs(cat)) {
    const Labels tj{{"tier", tier}, {kTrainingJobLabel, job}};
    for (CkptState st : kAllCkptStates) {
      f.count.add({{"tier", tier}, {kTrainingJobLabel, job}, {"state", std::string(to_string(st))}},
                  static_cast<double>(s.count(st)));
    }
    f.stored.add(tj, static_cast<double>(s.stored_bytes));
    f.unreadable.add(tj, s.unreadable ? 1 : 0);
    f.partial.add(tj, static_cast<double>(s.count(CkptState::kPartial)));
    f.partial_bytes.add(tj, static_cast<double>(s.partial_bytes));
    if (s.latest_committed != nullptr) {
      const Checkpoint& c = *s.latest_committed;
      if (c.step >= 0) f.latest_step.add(tj, static_cast<double>(c.step));
      f.last_bytes.add(tj, static_cast<double>(c.bytes));
      f.last_files.add(tj, static_cast<double>(c.files));
      f.last_allocated.add(tj, static_cast<double>(c.allocated_bytes));
      for (std::size_t i = 0; i < kComponentCount; ++i) {
        f.last_components.add({{"tier", tier},
                               {kTrainingJobLabel, job},
                               {"component", std::string(to_string(static_cast<Component>(i)))}},
                              static_cast<double>(c.component_bytes[i]));
      }
      // The event log knows shard end times and the save's start and commit
      // exactly; file mtimes are the fallback.
      const EventStep* ev = state.event_step(c);
      f.last_skew.add(tj, completion_skew(c, ev));
      f.last_ts.add(tj, c.marker_time > 0 ? c.marker_time : c.last_write);
      if (c.save_end > c.save_start && c.save_start > 0) {
        f.last_duration.add(tj, c.save_end - c.save_start);
      } else if (auto d = ev != nullptr ? ev->duration() : std::nullopt) {
        f.last_duration.add(tj, *d);
      }
    }
  }
  for (const auto& [job, h] : cat.skew_by_job) {
    f.skew.add_histogram({{"tier", tier}, {kTrainingJobLabel, job}}, h);
  }
}

void add_tier_samples(const std::string& tier, const TierCatalog& cat, TierFamilies& f) {
  const Labels t{{"tier", tier}};
  f.scan_dur.add(t, cat.scan.last_duration_seconds);
  f.scan_dirs.add(t, static_cast<double>(cat.scan.dirs_listed));
  f.scan_stats.add(t, static_cast<double>(cat.scan.stat_calls));
  f.scan_perm.add(t, static_cast<double>(cat.scan.permission_errors));
  f.scan_gone.add(t, static_cast<double>(cat.scan.vanished));
  f.stale.add(t, cat.stale ? 1 : 0);
  if (cat.walk_live) {
    f.scan_inflight.add(t, static_cast<double>(cat.walk_live->inflight.load()));
    f.scan_slots.add(t, cat.walk_live->slots.load());
    f.scan_call_dur.add_histogram(t, cat.walk_live->histogram());
  }
  if (cat.scan.last_duration_seconds > 0) {
    f.scan_rate.add(t, static_cast<double>(cat.scan.last_calls) / cat.scan.last_duration_seconds);
  }
  if (cat.scan.last_finished > 0 && cat.scan.last_error.empty()) {
    f.scan_ok.add(t, cat.scan.last_finished);
  }
  if (!cat.scanned) return;
  f.removed.add(t, static_cast<double>(cat.removed_checkpoints_total));
  f.removed_bytes.add(t, static_cast<double>(cat.removed_bytes_total));
  std::array<std::uint64_t, 3> unusable{};
  static constexpr std::array<std::string_view, 3> kReasons = {"refused", "malformed", "unread"};
  for (const Checkpoint& c : cat.checkpoints) {
    for (std::size_t i = 0; i < kReasons.size(); ++i) {
      if (c.metadata.starts_with(kReasons[i]) && c.metadata.size() > kReasons[i].size() &&
          c.metadata[kReasons[i].size()] == ':') {
        ++unusable[i];
      }
    }
  }
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    f.metadata_unusable.add({{"tier", tier}, {"reason", std::string(kReasons[i])}},
                            static_cast<double>(unusable[i]));
  }
  const FindingCounts by_kind = cat.findings ? count_by_kind(*cat.findings) : FindingCounts{};
  for (int k = 0; k < kFindingKindCount; ++k) {
    if (!walk_finding_kind(static_cast<FindingKind>(k))) continue;  // the rules' (estate)
    f.findings.add({{"tier", tier}, {"kind", std::string(to_string(static_cast<FindingKind>(k)))}},
                   static_cast<double>(by_kind[static_cast<std::size_t>(k)]));
  }
}

template <typename Families>
void append_all(std::vector<prometheus::MetricFamily>& out, Families& f) {
  for (FamilyBuilder* b : f.all()) append(out, std::move(*b));
}

// Splits one family's exposition into its # HELP / # TYPE lines and its samples.
void split_family(const std::string& text, std::string* head, std::string* samples) {
  std::size_t i = 0;
  while (i < text.size() && text[i] == '#') {
    const std::size_t nl = text.find('\n', i);
    if (nl == std::string::npos) break;
    i = nl + 1;
  }
  if (head->empty()) *head = text.substr(0, i);
  *samples = text.substr(i);
}

}  // namespace

void catalog_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  JobFamilies jobs;
  TierFamilies tiers;
  for (const auto& [tier, cat] : state.catalogs) {
    add_tier_samples(tier, *cat, tiers);
    if (cat->scanned) add_job_samples(tier, *cat, state, jobs);
  }
  append_all(out, jobs);
  append_all(out, tiers);
}

std::string CatalogRenderCache::render(const State& state) {
  std::erase_if(tiers_, [&](const auto& kv) { return !state.catalogs.contains(kv.first); });
  for (const auto& [tier, cat] : state.catalogs) {
    Entry& e = tiers_[tier];
    if (e.catalog == cat.shared() && e.events == state.events) continue;
    e.catalog = cat.shared();
    e.events = state.events;
    for (auto& s : e.samples) s.clear();
    ++renders_;
    if (!cat->scanned) continue;
    JobFamilies f;
    add_job_samples(tier, *cat, state, f);
    const auto all = f.all();
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i]->empty()) continue;
      split_family(serialize({all[i]->take()}), &heads_[i], &e.samples[i]);
    }
  }
  std::string out;
  std::size_t size = 0;
  for (const auto& [_, e] : tiers_) {
    for (const auto& s : e.samples) size += s.size();
  }
  out.reserve(size + std::size_t{64} * 1024);
  for (std::size_t i = 0; i < heads_.size(); ++i) {
    bool any = false;
    for (const auto& [_, e] : tiers_) {
      if (e.samples[i].empty()) continue;
      if (!any) out += heads_[i];
      any = true;
      out += e.samples[i];
    }
  }
  TierFamilies tiers;
  for (const auto& [tier, cat] : state.catalogs) add_tier_samples(tier, *cat, tiers);
  std::vector<prometheus::MetricFamily> rest;
  append_all(rest, tiers);
  out += serialize(rest);
  return out;
}

}  // namespace ckptmon
