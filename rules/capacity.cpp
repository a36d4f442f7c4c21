#include "rules/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "rules/retention.hpp"
#include "rules/series.hpp"
#include "util/saturating.hpp"

namespace ckptmon {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Median gap between successive commits; 0 when fewer than two differ.
double median_commit_interval(const std::vector<const Checkpoint*>& committed) {
  std::vector<double> times;
  for (const Checkpoint* c : committed) {
    if (commit_time(*c) > 0) times.push_back(commit_time(*c));
  }
  std::sort(times.begin(), times.end());
  std::vector<double> gaps;
  for (std::size_t i = 1; i < times.size(); ++i) {
    if (times[i] > times[i - 1]) gaps.push_back(times[i] - times[i - 1]);
  }
  if (gaps.empty()) return 0;
  std::sort(gaps.begin(), gaps.end());
  const std::size_t m = gaps.size() / 2;
  return gaps.size() % 2 == 1 ? gaps[m] : (gaps[m - 1] + gaps[m]) / 2;
}

// Sum of the `n` biggest values.
double sum_of_biggest(std::vector<double> values, std::int64_t n) {
  std::sort(values.begin(), values.end(), std::greater<>());
  double sum = 0;
  for (std::size_t i = 0; i < values.size() && static_cast<std::int64_t>(i) < n; ++i) {
    sum += values[i];
  }
  return sum;
}

// Latest committed checkpoint of each job on the tier (biggest in progress
// when none is committed yet).
std::map<std::string, std::uint64_t> latest_sizes(const JobCheckpoints& jobs) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [job, mine] : jobs) {
    auto committed = committed_oldest_first(mine);
    std::uint64_t latest = 0;
    if (!committed.empty()) {
      latest = committed.back()->bytes;
    } else {
      for (const Checkpoint* c : mine) {
        if (c->state == CkptState::kInProgress) latest = std::max(latest, c->bytes);
      }
    }
    out[job] = latest;
  }
  return out;
}

}  // namespace

SizingTerms sizing_terms(std::span<const SizedJob> jobs, double replicas,
                         double temp_write_allowance_ratio, double growth_headroom_ratio,
                         std::int64_t concurrent_jobs, double residue_bytes) {
  SizingTerms t;
  std::vector<double> sizes;
  for (const SizedJob& j : jobs) {
    const double required = j.bytes * j.retained_versions * replicas;
    t.job_required_bytes.push_back(required);
    t.retained_required_bytes += required;
    sizes.push_back(j.bytes);
  }
  t.temp_write_allowance_bytes =
      temp_write_allowance_ratio * sum_of_biggest(std::move(sizes), concurrent_jobs);
  t.residue_bytes = residue_bytes;
  t.growth_headroom_bytes = growth_headroom_ratio * t.retained_required_bytes;
  t.required_bytes = t.retained_required_bytes + t.temp_write_allowance_bytes + t.residue_bytes +
                     t.growth_headroom_bytes;
  return t;
}

double required_write_bandwidth(std::span<const double> checkpoint_bytes,
                                std::int64_t concurrent_writers, double allowed_window_seconds,
                                double overhead_ratio, double* bytes_per_checkpoint) {
  const std::int64_t n = std::min<std::int64_t>(concurrent_writers,
                                                static_cast<std::int64_t>(checkpoint_bytes.size()));
  double mean = 0;
  if (n > 0) {
    mean = sum_of_biggest({checkpoint_bytes.begin(), checkpoint_bytes.end()}, n) /
           static_cast<double>(n);
  }
  if (bytes_per_checkpoint != nullptr) *bytes_per_checkpoint = mean;
  if (allowed_window_seconds <= 0) return 0;
  return mean / allowed_window_seconds * static_cast<double>(concurrent_writers) *
         (1.0 + overhead_ratio);
}

double save_duration(const Checkpoint& c) {
  if (c.save_start > 0 && c.save_end > c.save_start) return c.save_end - c.save_start;
  if (c.first_write > 0 && c.last_write > c.first_write) return c.last_write - c.first_write;
  return 0;
}

CapacityFigures evaluate_capacity(const CheckpointView& all, const TierState& tier,
                                  std::span<const TierSample> history, const TierPolicy& policy,
                                  double now) {
  const std::string& name = tier.config.name;
  const SizingPolicy& sizing = policy.sizing;
  const RetentionPolicy& retention = policy.retention;
  CapacityFigures f;
  f.tier = name;
  // Like the tier metrics: a down tier's last statfs figures are stale, so
  // nothing is judged on them (the trend still uses the history).
  f.has_stats = tier.has_stats && tier.up;
  if (f.has_stats) {
    f.size_bytes = tier.stats.size_bytes;
    f.avail_bytes = tier.stats.avail_bytes;
    if (f.size_bytes > 0) f.used_ratio = 1.0 - f.avail_bytes / f.size_bytes;
  }
  f.concurrency_observed = sizing.concurrent_jobs <= 0;
  f.concurrent_jobs =
      f.concurrency_observed ? observed_concurrency(all, name) : sizing.concurrent_jobs;

  const JobCheckpoints jobs = group_by_job(all, name);
  const std::map<std::string, std::uint64_t> latest = latest_sizes(jobs);
  double present_retained = 0;
  double in_progress_total = 0;
  double present_retained_files = 0;
  double in_progress_files = 0;
  double retained_required_files = 0;
  std::vector<SizedJob> sized;
  std::vector<double> next_list;
  std::vector<double> next_files;
  for (const auto& [job, latest_bytes] : latest) {
    JobCapacity j;
    j.job = job;
    j.latest_bytes = latest_bytes;
    const std::vector<const Checkpoint*>& mine = jobs.at(job);
    auto committed = committed_oldest_first(mine);
    double keep = static_cast<double>(std::max<std::int64_t>(1, retention.keep_last));
    if (retention.max_age_seconds > 0) {
      const double interval = median_commit_interval(committed);
      if (interval > 0) keep = std::min(keep, std::floor(retention.max_age_seconds / interval) + 1);
    }
    std::uint64_t milestones = 0;
    for (const RetentionDecision& d : decide_retention(mine, retention, now)) {
      if (d.kind == RetentionKind::kKeptMilestone) ++milestones;
      if (d.kind == RetentionKind::kKeptNewest || d.kind == RetentionKind::kKeptLast ||
          d.kind == RetentionKind::kKeptMilestone) {
        present_retained += static_cast<double>(d.checkpoint->bytes) * sizing.replicas;
        present_retained_files += static_cast<double>(d.checkpoint->files);
      }
    }
    j.retained_versions = keep + static_cast<double>(milestones);
    std::uint64_t job_in_progress_files = 0;
    for (const Checkpoint* c : mine) {
      if (c->state == CkptState::kInProgress) {
        sat_add_to(j.in_progress_bytes, c->bytes);
        sat_add_to(job_in_progress_files, c->files);
        if (committed.empty()) j.latest_files = std::max(j.latest_files, c->files);
      }
      if (c->state == CkptState::kPartial) f.residue_bytes += static_cast<double>(c->bytes);
    }
    if (!committed.empty()) j.latest_files = committed.back()->files;
    j.required_files = static_cast<double>(j.latest_files) * j.retained_versions;
    retained_required_files += j.required_files;
    in_progress_files += static_cast<double>(job_in_progress_files);
    next_files.push_back(static_cast<double>(j.latest_files));
    in_progress_total += static_cast<double>(j.in_progress_bytes);
    j.next_checkpoint_bytes = std::max(0.0, static_cast<double>(latest_bytes) * sizing.replicas -
                                                static_cast<double>(j.in_progress_bytes));
    if (f.has_stats) j.next_fits = f.avail_bytes >= j.next_checkpoint_bytes;
    sized.push_back({static_cast<double>(latest_bytes), j.retained_versions});
    next_list.push_back(j.next_checkpoint_bytes);
    f.jobs.push_back(std::move(j));
  }

  const SizingTerms terms =
      sizing_terms(sized, sizing.replicas, sizing.temp_write_allowance_ratio,
                   sizing.growth_headroom_ratio, f.concurrent_jobs, f.residue_bytes);
  for (std::size_t i = 0; i < f.jobs.size(); ++i)
    f.jobs[i].required_bytes = terms.job_required_bytes[i];
  f.retained_required_bytes = terms.retained_required_bytes;
  f.temp_write_allowance_bytes = terms.temp_write_allowance_bytes;
  f.growth_headroom_bytes = terms.growth_headroom_bytes;
  f.required_bytes = terms.required_bytes;
  // Partial checkpoints are on the tier by definition: their term is fully present.
  const double present_retained_capped = std::min(present_retained, f.retained_required_bytes);
  const double present_temp = std::min(in_progress_total, f.temp_write_allowance_bytes);
  f.present_bytes = present_retained_capped + present_temp + f.residue_bytes;
  f.still_needed_bytes = (f.retained_required_bytes - present_retained_capped) +
                         (f.temp_write_allowance_bytes - present_temp) + f.growth_headroom_bytes;
  if (f.has_stats) {
    f.headroom_ratio = f.still_needed_bytes > 0 ? f.avail_bytes / f.still_needed_bytes : kInf;
  }

  // The inode term, as the byte terms: what is on the tier counts, capped
  // at its term.
  const double temp_files = sum_of_biggest(std::move(next_files), f.concurrent_jobs);
  f.required_files = retained_required_files + temp_files;
  f.still_needed_files =
      (retained_required_files - std::min(present_retained_files, retained_required_files)) +
      (temp_files - std::min(in_progress_files, temp_files));
  f.files_known = f.has_stats && tier.stats.files > 0;
  if (f.files_known) {
    f.files_total = tier.stats.files;
    f.files_free = tier.stats.files_free;
  }

  f.next_checkpoint_bytes = sum_of_biggest(next_list, f.concurrent_jobs);
  if (f.has_stats) f.next_fits = f.avail_bytes >= f.next_checkpoint_bytes;

  std::vector<Point> avail;
  bool have_now = false;
  for (const TierSample& s : history) {
    avail.push_back({s.t, s.avail_bytes});
    if (s.t >= now) have_now = true;
  }
  if (f.has_stats && !have_now) avail.push_back({now, f.avail_bytes});
  const std::vector<Point> w = window_points(avail, now, sizing.trend_window_seconds);
  // A line through samples seconds apart is noise: no figure until the
  // samples span min_trend_span (never more than the window itself).
  const double min_span = std::min(sizing.min_trend_span_seconds, sizing.trend_window_seconds);
  if (w.size() >= 2 && w.back().t - w.front().t >= min_span) {
    f.time_to_full_seconds = time_to_zero(w, now);
  }
  return f;
}

BandwidthFigures evaluate_bandwidth(const CheckpointView& all, const std::string& tier,
                                    const BandwidthPolicy& policy, double now) {
  BandwidthFigures f;
  f.tier = tier;
  f.concurrency_observed = policy.concurrent_writers <= 0;
  f.concurrent_writers =
      f.concurrency_observed ? observed_concurrency(all, tier) : policy.concurrent_writers;
  std::vector<double> sizes;
  for (const auto& [job, bytes] : latest_sizes(group_by_job(all, tier))) {
    sizes.push_back(static_cast<double>(bytes));
  }
  f.required_bytes_per_second =
      required_write_bandwidth(sizes, f.concurrent_writers, policy.allowed_window_seconds,
                               policy.overhead_ratio, &f.bytes_per_checkpoint);

  std::vector<std::pair<double, double>> intervals;
  double bytes = 0;
  for (const Checkpoint& c : all) {
    if (c.tier != tier || c.state != CkptState::kCommitted) continue;
    const double end = commit_time(c);
    if (end > now || end < now - policy.observe_window_seconds) continue;
    const double d = save_duration(c);
    if (d <= 0) continue;
    const double start =
        c.save_start > 0 && c.save_end > c.save_start ? c.save_start : c.first_write;
    intervals.emplace_back(start, start + d);
    bytes += static_cast<double>(c.bytes);
    ++f.observed_checkpoints;
  }
  std::sort(intervals.begin(), intervals.end());
  double busy = 0;
  double cur_start = 0, cur_end = -kInf;
  for (const auto& [s, e] : intervals) {
    if (s > cur_end) {
      if (cur_end > cur_start) busy += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (!intervals.empty() && cur_end > cur_start) busy += cur_end - cur_start;
  if (busy > 0) f.observed_bytes_per_second = bytes / busy;
  return f;
}

}  // namespace ckptmon
