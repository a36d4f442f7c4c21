#include "model/catalog.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "util/saturating.hpp"

namespace ckptmon {

void HistogramData::observe(double v) {
  std::size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++buckets[i];
  sum += v;
  ++count;
}

std::vector<double> skew_buckets() {
  return {0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
}

bool same_record(const Checkpoint& a, const Checkpoint& b) {
  return a.tier == b.tier && a.path == b.path && a.job == b.job && a.step == b.step &&
         a.framework == b.framework && a.state == b.state && a.reason == b.reason &&
         a.files == b.files && a.bytes == b.bytes && a.allocated_bytes == b.allocated_bytes &&
         a.first_write == b.first_write && a.last_write == b.last_write &&
         a.marker_time == b.marker_time && a.component_bytes == b.component_bytes &&
         a.metadata == b.metadata && a.expected_files == b.expected_files &&
         a.save_start == b.save_start && a.save_end == b.save_end && a.dir_mtime == b.dir_mtime &&
         a.first_seen == b.first_seen && a.skew_observed == b.skew_observed;
}

bool paths_overlap(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  if (shorter.empty()) return true;  // the tier root
  return longer.compare(0, shorter.size(), shorter) == 0 &&
         (longer.size() == shorter.size() || longer[shorter.size()] == '/');
}

namespace {

// merge_scan with the catalog's checkpoints before the walk in `previous`
// (cat.checkpoints itself, or the shared catalog's).
void merge_from(TierCatalog& cat, const std::vector<Checkpoint>& previous, ScanOutcome scan,
                double now) {
  cat.scan.scans += 1;
  cat.scan.dirs_listed += scan.dirs_listed;
  cat.scan.stat_calls += scan.stat_calls;
  cat.scan.permission_errors += scan.permission_errors;
  cat.scan.vanished += scan.vanished;
  cat.scan.last_duration_seconds = scan.duration_seconds;
  cat.scan.last_calls = scan.calls;
  cat.scan.last_finished = now;
  cat.stale = scan.stalled;  // a walk given up leaves the figures of an older one
  if (!scan.root_ok) {
    cat.scan.last_error = scan.error;
    if (!scan.root_changed.empty()) {
      // Another tree is where the tier was: what the tier holds is unknown now.
      cat.root_changed = std::move(scan.root_changed);
      for (auto& c : cat.checkpoints) c.unreadable = true;
    }
    return;
  }
  cat.scan.last_error.clear();
  cat.root_changed.clear();
  cat.scanned = true;
  cat.jobs = std::move(scan.jobs);
  cat.findings = std::move(scan.findings);
  std::sort(scan.unreadable.begin(), scan.unreadable.end(),
            [](const UnreadableDir& a, const UnreadableDir& b) { return a.path < b.path; });
  cat.unreadable = std::move(scan.unreadable);

  std::unordered_map<std::string_view, const Checkpoint*> before;
  before.reserve(previous.size());
  for (const auto& c : previous) before.emplace(c.path, &c);

  std::vector<Checkpoint> next = std::move(scan.checkpoints);
  for (auto& c : next) {
    auto it = before.find(c.path);
    const Checkpoint* old = it == before.end() ? nullptr : it->second;
    c.first_seen = old != nullptr && old->first_seen > 0 ? old->first_seen : now;
    c.skew_observed = old != nullptr && old->skew_observed;
    c.last_seen = now;
    if (c.state == CkptState::kCommitted && !c.skew_observed) {
      auto h = cat.skew_by_job.try_emplace(c.job, skew_buckets()).first;
      h->second.observe(c.completion_skew());
      c.skew_observed = true;
    }
    if (old == nullptr || !same_record(*old, c)) cat.changed.push_back(c);
    if (old != nullptr) before.erase(it);
  }
  for (const auto& entry : before) {
    const Checkpoint* old = entry.second;
    const std::string& path = old->path;
    const bool unknown =
        std::any_of(cat.unreadable.begin(), cat.unreadable.end(),
                    [&](const UnreadableDir& u) { return paths_overlap(u.path, path); });
    if (!unknown) {
      cat.removed.push_back(path);
      ++cat.removed_checkpoints_total;
      sat_add_to(cat.removed_bytes_total, old->bytes);
      continue;
    }
    Checkpoint kept = *old;  // as last seen: no new last_seen, no recount
    kept.unreadable = true;
    next.push_back(std::move(kept));
  }
  std::sort(next.begin(), next.end(), [](const Checkpoint& a, const Checkpoint& b) {
    return a.job != b.job ? a.job < b.job : a.path < b.path;
  });
  // The walk appended one job's checkpoints after another: up to twice the
  // capacity it needs, kept by the catalog until the next walk.
  next.shrink_to_fit();
  cat.checkpoints = std::move(next);
}

}  // namespace

void merge_scan(TierCatalog& cat, ScanOutcome scan, double now) {
  merge_from(cat, cat.checkpoints, std::move(scan), now);
}

void merge_scan(CopyOnWrite<TierCatalog>& cat, ScanOutcome scan, double now) {
  if (!scan.root_ok) {
    merge_scan(cat.edit(), std::move(scan), now);  // the checkpoints stay as they are
    return;
  }
  const std::shared_ptr<const TierCatalog> before = cat.shared();
  const TierCatalog& b = *before;
  TierCatalog next;
  next.findings = b.findings;
  next.jobs = b.jobs;
  next.unreadable = b.unreadable;
  next.scan = b.scan;
  next.scanned = b.scanned;
  next.stale = b.stale;
  next.root_changed = b.root_changed;
  next.walk_live = b.walk_live;
  next.skew_by_job = b.skew_by_job;
  next.changed = b.changed;
  next.removed = b.removed;
  next.removed_checkpoints_total = b.removed_checkpoints_total;
  next.removed_bytes_total = b.removed_bytes_total;
  merge_from(next, b.checkpoints, std::move(scan), now);
  cat = CopyOnWrite<TierCatalog>(std::move(next));
}

std::map<std::string, JobSummary> summarize_jobs(const TierCatalog& cat) {
  std::map<std::string, JobSummary> jobs;
  for (const auto& j : cat.jobs) jobs[j];
  for (const auto& u : cat.unreadable) {
    if (!u.job.empty()) jobs[u.job].unreadable = true;
  }
  for (const auto& c : cat.checkpoints) {
    JobSummary& f = jobs[c.job];
    if (c.unreadable) f.unreadable = true;
    ++f.by_state[static_cast<std::size_t>(c.state)];
    ++f.checkpoints;
    sat_add_to(f.stored_bytes, c.bytes);
    if (c.state == CkptState::kPartial) sat_add_to(f.partial_bytes, c.bytes);
    if (c.state == CkptState::kCommitted &&
        (f.latest_committed == nullptr || c.step > f.latest_committed->step ||
         (c.step == f.latest_committed->step && c.last_write > f.latest_committed->last_write))) {
      f.latest_committed = &c;
    }
  }
  return jobs;
}

}  // namespace ckptmon
