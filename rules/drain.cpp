#include "rules/drain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "rules/series.hpp"
#include "util/saturating.hpp"

namespace ckptmon {

std::uint64_t bytes_to_copy(const Checkpoint& source, const Checkpoint* target) {
  if (target == nullptr) return source.bytes;
  if (source.shard_files && target->shard_files) {
    std::unordered_map<std::string_view, std::uint64_t> there;
    there.reserve(target->shard_files->size());
    for (const ShardFile& f : *target->shard_files) there.emplace(f.rel_path, f.size);
    std::uint64_t missing = 0;
    for (const ShardFile& f : *source.shard_files) {
      auto it = there.find(f.rel_path);
      if (it == there.end()) {
        sat_add_to(missing, f.size);
      } else if (it->second < f.size) {
        sat_add_to(missing, f.size - it->second);
      }
    }
    return missing;
  }
  return source.bytes > target->bytes ? source.bytes - target->bytes : 0;
}

std::vector<DrainFigures> evaluate_drain(const CheckpointView& all, const DrainRoute& source,
                                         const DrainHistory& history, const DrainPolicy& policy,
                                         double now,
                                         const std::map<DrainKey, double>& drained_totals) {
  std::vector<DrainFigures> out;
  if (source.drains_to.empty()) return out;

  // Target copies by (job, step) and by (job, path); the biggest copy wins
  // when the target holds the same step twice.
  std::map<std::pair<std::string_view, std::int64_t>, const Checkpoint*> by_step;
  std::map<std::pair<std::string_view, std::string_view>, const Checkpoint*> by_path;
  for (const Checkpoint& c : all) {
    if (c.tier != source.drains_to) continue;
    auto keep_bigger = [&c](const Checkpoint*& slot) {
      if (slot == nullptr || c.bytes > slot->bytes) slot = &c;
    };
    if (c.step >= 0) keep_bigger(by_step[{c.job, c.step}]);
    keep_bigger(by_path[{c.job, c.path}]);
  }

  std::map<std::string, DrainFigures> jobs;
  for (const Checkpoint& c : all) {
    if (c.tier != source.tier || c.state != CkptState::kCommitted) continue;
    DrainFigures& f = jobs[c.job];
    f.tier = source.tier;
    f.to_tier = source.drains_to;
    f.job = c.job;
    const Checkpoint* target = nullptr;
    if (c.step >= 0) {
      if (auto it = by_step.find({c.job, c.step}); it != by_step.end()) target = it->second;
    } else if (auto it = by_path.find({c.job, c.path}); it != by_path.end()) {
      target = it->second;
    }
    const std::uint64_t missing = std::min(bytes_to_copy(c, target), c.bytes);
    sat_add_to(f.backlog_bytes, missing);
    sat_add_to(f.copied_bytes, c.bytes - missing);
    if (missing > 0) {
      double at = commit_time(c);
      if (!(at > 0)) at = c.first_seen > 0 ? c.first_seen : now;
      f.pending.push_back({c.path, c.step, c.bytes, missing, at});
    }
  }

  for (auto& [job, f] : jobs) {
    std::sort(f.pending.begin(), f.pending.end(),
              [](const PendingCheckpoint& a, const PendingCheckpoint& b) {
                return std::tie(a.committed_at, a.step, a.path) <
                       std::tie(b.committed_at, b.step, b.path);
              });
    f.pending_checkpoints = f.pending.size();
    f.overlapping_checkpoints =
        f.pending.empty() ? 0 : static_cast<std::int64_t>(f.pending.size()) - 1;
    if (!f.pending.empty()) {
      f.oldest_pending_since = f.pending.front().committed_at;
      f.oldest_pending_age = std::max(0.0, now - f.oldest_pending_since);
    }
    if (auto it = drained_totals.find(f.key()); it != drained_totals.end()) {
      f.drained_total = it->second;
    }

    // This cycle's observation plus the remembered ones inside the window.
    std::vector<Point> copied{{now, static_cast<double>(f.copied_bytes)}};
    std::vector<Point> drained{{now, f.drained_total}};
    if (auto it = history.find(f.key()); it != history.end()) {
      for (const DrainSample& s : it->second) {
        copied.push_back({s.t, s.copied_bytes});
        drained.push_back({s.t, s.drained_total});
      }
    }
    const double w = policy.rate_window_seconds;
    const std::vector<Point> drained_w = window_points(drained, now, w);
    if (drained_w.size() >= 2) {
      f.rate_bytes_per_second = counter_rate(drained_w);
      f.rate_from_events = f.rate_bytes_per_second.has_value();
    }
    if (!f.rate_bytes_per_second)
      f.rate_bytes_per_second = rise_rate(window_points(copied, now, w));

    if (f.backlog_bytes == 0) {
      f.time_to_empty_seconds = 0.0;
    } else if (f.rate_bytes_per_second) {
      f.time_to_empty_seconds =
          *f.rate_bytes_per_second > 0
              ? static_cast<double>(f.backlog_bytes) / *f.rate_bytes_per_second
              : std::numeric_limits<double>::infinity();
    }
    out.push_back(std::move(f));
  }
  return out;
}

void apply_monotonic_ages(std::span<DrainFigures> figures, PendingAnchors& anchors, double now,
                          double mono) {
  PendingAnchors next;
  for (DrainFigures& f : figures) {
    double oldest = 0;
    for (const PendingCheckpoint& p : f.pending) {
      auto key = std::make_pair(f.key(), p.path);
      auto it = anchors.find(key);
      const PendingAnchor a = it != anchors.end()
                                  ? it->second
                                  : PendingAnchor{mono, std::max(0.0, now - p.committed_at)};
      oldest = std::max(oldest, a.age + std::max(0.0, mono - a.mono));
      next.emplace(std::move(key), a);
    }
    f.oldest_pending_age = oldest;
  }
  anchors = std::move(next);
}

std::vector<std::pair<DrainKey, DrainSample>> record_drain_samples(
    DrainHistory& history, std::span<const DrainFigures> figures, double now, double keep_seconds) {
  std::vector<std::pair<DrainKey, DrainSample>> appended;
  appended.reserve(figures.size());
  for (const DrainFigures& f : figures) {
    const DrainSample sample{now, static_cast<double>(f.backlog_bytes),
                             static_cast<double>(f.copied_bytes), f.drained_total};
    std::vector<DrainSample>& series = history[f.key()];
    if (!series.empty() && series.back().t > now) series.clear();
    series.push_back(sample);
    appended.emplace_back(f.key(), sample);
  }
  for (auto it = history.begin(); it != history.end();) {
    std::vector<DrainSample>& series = it->second;
    std::erase_if(series,
                  [&](const DrainSample& s) { return s.t < now - keep_seconds || s.t > now; });
    it = series.empty() ? history.erase(it) : std::next(it);
  }
  return appended;
}

}  // namespace ckptmon
