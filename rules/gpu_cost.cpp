#include "rules/gpu_cost.hpp"

#include <algorithm>
#include <cmath>

namespace ckptmon {

std::optional<GpuWindow> blocking_window(const EventStep& s) {
  if (s.pauses > 0 && s.pause_first_start > 0 && s.pause_last_end >= s.pause_first_start) {
    return GpuWindow{{s.pause_first_start, s.pause_last_end}, true};
  }
  if (s.committed && s.start_ts > 0 && s.commit_ts >= s.start_ts) {
    return GpuWindow{{s.start_ts, s.commit_ts}, false};
  }
  return std::nullopt;
}

std::optional<double> mean_over(const GpuSeries& series, const std::vector<Interval>& parts,
                                double min_coverage) {
  double wanted = 0;
  double covered = 0;
  double weighted = 0;
  const double w = series.width();
  for (const Interval& p : parts) {
    if (p.end <= p.start) continue;
    wanted += p.length();
    // Buckets (end - w, end] that overlap (p.start, p.end).
    for (std::size_t i = series.upper(p.start); i < series.size(); ++i) {
      const GpuBucket& b = series[i];
      const double lo = std::max(p.start, b.end - w);
      const double hi = std::min(p.end, b.end);
      if (b.end - w >= p.end) break;
      if (hi <= lo) continue;
      covered += hi - lo;
      weighted += (hi - lo) * b.mean;
    }
  }
  if (wanted <= 0) return std::nullopt;
  // A zero-length window (start == commit) is measured by the bucket holding it.
  if (covered < min_coverage * wanted || covered <= 0) return std::nullopt;
  return weighted / covered;
}

std::vector<Interval> baseline_parts(double before, double length, std::vector<Interval> excluded,
                                     double floor) {
  // Merge the exclusions into disjoint intervals, ascending.
  std::erase_if(excluded, [](const Interval& e) { return !(e.end > e.start); });
  std::sort(excluded.begin(), excluded.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval& e : excluded) {
    if (!merged.empty() && e.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, e.end);
    } else {
      merged.push_back(e);
    }
  }
  std::vector<Interval> out;
  double cursor = before;
  double need = length;
  auto take_down_to = [&](double bound) {
    const double lo = std::max({bound, cursor - need, floor});
    if (lo < cursor) {
      out.push_back({lo, cursor});
      need -= cursor - lo;
    }
  };
  for (auto it = merged.rbegin(); it != merged.rend() && need > 1e-9 && cursor > floor; ++it) {
    if (it->start >= cursor) continue;
    if (it->end < cursor) take_down_to(it->end);
    if (need <= 1e-9) break;
    cursor = it->start;
  }
  if (need > 1e-9 && cursor > floor) take_down_to(floor);
  return out;
}

std::optional<double> CheckpointGpuCost::drop_ratio() const {
  if (!during || !baseline) return std::nullopt;
  if (*baseline <= 0) return 0.0;
  return std::max(0.0, (*baseline - *during) / *baseline);
}

CheckpointGpuCost join_window(const GpuWindow& window, const std::vector<unsigned>& gpus,
                              const GpuState& state, const std::vector<Interval>& excluded) {
  CheckpointGpuCost out;
  out.window = window;
  const Interval span = window.span;
  const double length = span.length();
  // A window shorter than a bucket is measured over the bucket that holds it.
  std::vector<Interval> during_parts{span};
  bool all_known = !gpus.empty();
  double sum_during = 0;
  double sum_baseline = 0;
  double lost = 0;
  if (gpus.empty()) out.unknown_reason = "no GPU is attributed to the job";
  for (unsigned g : gpus) {
    GpuCostPart part;
    part.gpu = g;
    auto it = state.series.find(g);
    if (it == state.series.end() || it->second.empty()) {
      all_known = false;
      if (out.unknown_reason.empty()) out.unknown_reason = "no samples of GPU " + std::to_string(g);
      out.gpus.push_back(part);
      continue;
    }
    const GpuSeries& s = it->second;
    Interval measured = span;
    if (length < s.width()) {
      const double end = std::ceil(span.end / s.width()) * s.width();
      measured = {end - s.width(), end};
    }
    part.during = mean_over(s, {measured});
    const double floor = s[0].end - s.width();
    const double base_length = std::max(length, s.width());
    const std::vector<Interval> base = baseline_parts(span.start, base_length, excluded, floor);
    double base_total = 0;
    for (const Interval& p : base) base_total += p.length();
    // Too little time before the window (the ring's start) is no baseline.
    if (base_total >= kGpuMinCoverage * base_length) {
      part.baseline = mean_over(s, base);
    }
    if (part.during && part.baseline) {
      part.lost_seconds = std::max(0.0, *part.baseline - *part.during) * length;
      sum_during += *part.during;
      sum_baseline += *part.baseline;
      lost += *part.lost_seconds;
    } else {
      all_known = false;
      if (out.unknown_reason.empty()) {
        out.unknown_reason = std::string(part.during ? "baseline" : "window") +
                             " not covered by samples of GPU " + std::to_string(g);
      }
    }
    out.gpus.push_back(part);
  }
  if (all_known) {
    const double n = static_cast<double>(gpus.size());
    out.during = sum_during / n;
    out.baseline = sum_baseline / n;
    out.lost_gpu_seconds = lost;
  }
  return out;
}

std::string_view to_string(GpuAttribution a) {
  switch (a) {
    case GpuAttribution::kJobMap:
      return "job_map";
    case GpuAttribution::kMappingDir:
      return "job_mapping_dir";
    case GpuAttribution::kSourceLabels:
      return "source_labels";
    case GpuAttribution::kAllLocal:
      return "all_local";
  }
  return "all_local";
}

std::vector<unsigned> gpus_of_job(const std::string& job, const GpuState& state,
                                  const std::map<unsigned, std::string>& job_map,
                                  GpuAttribution* how) {
  std::vector<unsigned> out;
  GpuAttribution best = GpuAttribution::kAllLocal;
  auto take = [&](unsigned g, GpuAttribution a) {
    out.push_back(g);
    if (static_cast<int>(a) < static_cast<int>(best)) best = a;
  };
  for (const GpuDevice& d : state.devices) {
    if (auto it = job_map.find(d.index); it != job_map.end()) {
      if (it->second == job) take(d.index, GpuAttribution::kJobMap);
      continue;
    }
    if (auto it = state.mapped_jobs.find(d.index); it != state.mapped_jobs.end()) {
      if (std::find(it->second.begin(), it->second.end(), job) != it->second.end()) {
        take(d.index, GpuAttribution::kMappingDir);
      }
      continue;
    }
    if (!d.source_job.empty()) {
      if (d.source_job == job) take(d.index, GpuAttribution::kSourceLabels);
      continue;
    }
    take(d.index, GpuAttribution::kAllLocal);
  }
  if (how != nullptr) *how = best;
  return out;
}

std::vector<double> gpu_idle_buckets() {
  return {1, 5, 10, 30, 60, 120, 300, 600, 1200, 3600, 7200, 14400};
}

void GpuCostTracker::update(const EventCatalog& events, const GpuState& gpu,
                            const std::map<unsigned, std::string>& job_map, double grace,
                            double now) {
  const std::optional<double> oldest = gpu.oldest();
  const std::optional<double> newest = gpu.newest();
  if (!first_seen_ && oldest) first_seen_ = *oldest;

  // Windows by job, for the baselines' exclusions and for joining in time order.
  struct Candidate {
    const StepKey* key;
    GpuWindow window;
  };
  std::vector<Candidate> candidates;
  std::set<std::pair<std::string, std::int64_t>> seen;
  std::vector<Interval> all_windows;
  for (const auto& [key, step] : events.steps) {
    auto w = blocking_window(step);
    if (!w) continue;
    all_windows.push_back(w->span);
    // A checkpoint that several tiers record is one save.
    if (!seen.emplace(key.job, key.step).second) continue;
    candidates.push_back({&key, *w});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.window.span.end < b.window.span.end;
  });
  for (const Candidate& c : candidates) {
    const auto id = std::make_pair(c.key->job, c.key->step);
    if (done_.contains(id)) continue;
    const Interval span = c.window.span;
    if (!oldest) continue;  // no sample yet: wait
    if (span.end <= *oldest) {
      // Before the source saw anything (or before a restart): not ours to judge.
      done_.insert(id);
      continue;
    }
    const bool samples_in = *newest >= span.end;
    if (!samples_in && now - span.end < grace) continue;  // wait for the samples
    GpuAttribution how = GpuAttribution::kAllLocal;
    const std::vector<unsigned> gpus = gpus_of_job(c.key->job, gpu, job_map, &how);
    if (gpus.empty()) {
      done_.insert(id);  // the job trains elsewhere; nothing to charge here
      continue;
    }
    std::vector<Interval> excluded;
    for (const Interval& w : all_windows) {
      if (w.start != span.start || w.end != span.end) excluded.push_back(w);
    }
    CheckpointGpuCost cost = join_window(c.window, gpus, gpu, excluded);
    if (!samples_in && cost.unknown_reason.empty() && !cost.lost_gpu_seconds) {
      cost.unknown_reason = "samples did not arrive";
    }
    cost.tier = c.key->tier;
    cost.job = c.key->job;
    cost.step = c.key->step;
    GpuJobCost& j = jobs_[c.key->job];
    j.attribution = how;
    j.gpus = gpus.size();
    if (cost.lost_gpu_seconds) {
      ++j.joined;
      j.lost_total += *cost.lost_gpu_seconds;
      j.lost.observe(*cost.lost_gpu_seconds);
      j.recent.push_back(cost);
      if (j.recent.size() > GpuJobCost::kRecent) j.recent.pop_front();
    } else {
      ++j.unknown;
    }
    if (joined_.size() >= kMaxJoined) joined_.erase(joined_.begin());
    joined_.push_back(cost);
    j.last = std::move(cost);
    done_.insert(id);
  }
  // Forget joined checkpoints the event catalog no longer keeps.
  std::erase_if(done_, [&](const auto& id) { return !seen.contains(id); });
}

std::size_t stalled_streak(const std::vector<double>& drops, const std::vector<double>& losses,
                           const AlertRules::StallingGpus& rule) {
  std::size_t n = 0;
  for (std::size_t i = std::min(drops.size(), losses.size()); i > 0; --i, ++n) {
    if (drops[i - 1] <= rule.min_drop_ratio || losses[i - 1] < rule.min_lost_gpu_seconds) break;
  }
  return n;
}

std::vector<GpuJobFigures> gpu_job_figures(const GpuCostTracker& tracker, double now,
                                           const AlertRules& rules) {
  std::vector<GpuJobFigures> out;
  const auto& stalling = rules.stalling_gpus;
  const double since = now - rules.goodput_low.window_seconds;
  for (const auto& [job, cost] : tracker.jobs()) {
    GpuJobFigures f;
    f.job = job;
    f.gpus = cost.gpus;
    for (const CheckpointGpuCost& c : cost.recent) {
      if (auto d = c.drop_ratio(); d && c.lost_gpu_seconds) {
        f.drops.push_back(*d);
        f.losses.push_back(*c.lost_gpu_seconds);
      }
      if (c.window.span.end > since && c.lost_gpu_seconds) f.lost_in_window += *c.lost_gpu_seconds;
    }
    const double seen_from = std::max(since, tracker.first_seen().value_or(now));
    f.gpu_seconds_in_window = static_cast<double>(cost.gpus) * std::max(0.0, now - seen_from);
    if (f.gpu_seconds_in_window > 0) f.lost_ratio = f.lost_in_window / f.gpu_seconds_in_window;
    f.stalled_streak = stalled_streak(f.drops, f.losses, stalling);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ckptmon
