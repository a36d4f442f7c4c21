#include "rules/retention.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "rules/inputs.hpp"
#include "util/saturating.hpp"

namespace ckptmon {
namespace {

// The time a partial checkpoint was last seen changing.
double partial_reference_time(const Checkpoint& c) {
  if (c.last_write > 0) return c.last_write;
  if (c.dir_mtime > 0) return c.dir_mtime;
  return c.first_seen;
}

}  // namespace

std::vector<RetentionDecision> decide_retention(const CheckpointView& all, const std::string& tier,
                                                const std::string& job,
                                                const RetentionPolicy& policy, double now) {
  std::vector<const Checkpoint*> mine;
  for (const Checkpoint& c : all) {
    if (c.tier == tier && c.job == job) mine.push_back(&c);
  }
  return decide_retention(mine, policy, now);
}

std::vector<RetentionDecision> decide_retention(std::span<const Checkpoint* const> job,
                                                const RetentionPolicy& policy, double now) {
  std::vector<RetentionDecision> out;
  const std::vector<const Checkpoint*> committed = committed_oldest_first(job);
  const std::size_t n = committed.size();
  const std::size_t keep_last =
      static_cast<std::size_t>(std::max<std::int64_t>(1, policy.keep_last));
  for (std::size_t idx = 0; idx < n; ++idx) {
    const Checkpoint& c = *committed[idx];
    const std::size_t from_newest = n - 1 - idx;
    RetentionDecision d{&c, RetentionKind::kKeptLast, 0};
    if (from_newest == 0) {
      d.kind = RetentionKind::kKeptNewest;
      out.push_back(d);
      continue;
    }
    const bool in_last = from_newest < keep_last;
    const bool milestone = policy.keep_every > 0 && c.step >= 0 && c.step % policy.keep_every == 0;
    const double t = commit_time(c);
    const bool too_old = policy.max_age_seconds > 0 && t > 0 && now - t > policy.max_age_seconds;
    if (!too_old && (in_last || milestone)) {
      d.kind = in_last ? RetentionKind::kKeptLast : RetentionKind::kKeptMilestone;
      out.push_back(d);
      continue;
    }
    d.kind = RetentionKind::kExpired;
    double due = std::numeric_limits<double>::infinity();
    if (!in_last && !milestone) {
      // Pushed out of keep_last when the keep_last-th newer one committed.
      due = std::min(due, commit_time(*committed[idx + keep_last]));
    }
    if (too_old) {
      // Old enough, and no longer the newest since the next one committed.
      due = std::min(due, std::max(t + policy.max_age_seconds, commit_time(*committed[idx + 1])));
    }
    // Without timestamps the wait starts now; such a queue never looks old.
    d.due_since = due > 0 && due < std::numeric_limits<double>::infinity() ? due : now;
    out.push_back(d);
  }

  std::vector<RetentionDecision> others;
  for (const Checkpoint* cp : job) {
    const Checkpoint& c = *cp;
    if (c.state == CkptState::kCommitted) continue;
    RetentionDecision d{&c, RetentionKind::kNotDue, 0};
    if (c.state == CkptState::kPartial) {
      const double ref = partial_reference_time(c);
      if (ref > 0 && now - ref > policy.partial_window_seconds) {
        d.kind = RetentionKind::kResidue;
        d.due_since = ref + policy.partial_window_seconds;
      }
    }
    others.push_back(d);
  }
  std::sort(others.begin(), others.end(),
            [](const RetentionDecision& a, const RetentionDecision& b) {
              return std::tuple(a.checkpoint->last_write, std::string_view(a.checkpoint->path)) <
                     std::tuple(b.checkpoint->last_write, std::string_view(b.checkpoint->path));
            });
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

std::vector<RetentionFigures> evaluate_retention(const CheckpointView& all, const std::string& tier,
                                                 const RetentionPolicy& policy, double now) {
  std::vector<RetentionFigures> out;
  for (const auto& [job, mine] : group_by_job(all, tier)) {
    RetentionFigures f;
    f.tier = tier;
    f.job = job;
    std::vector<std::pair<double, std::string>> pending;
    for (const RetentionDecision& d : decide_retention(mine, policy, now)) {
      const Checkpoint& c = *d.checkpoint;
      switch (d.kind) {
        case RetentionKind::kKeptMilestone:
          ++f.milestone_checkpoints;
          [[fallthrough]];
        case RetentionKind::kKeptNewest:
        case RetentionKind::kKeptLast:
          ++f.retained_checkpoints;
          sat_add_to(f.retained_bytes, c.bytes);
          break;
        case RetentionKind::kExpired:
          ++f.expired_checkpoints;
          sat_add_to(f.expired_bytes, c.bytes);
          pending.emplace_back(d.due_since, c.path);
          break;
        case RetentionKind::kResidue:
          ++f.residue_checkpoints;
          sat_add_to(f.residue_bytes, c.bytes);
          pending.emplace_back(d.due_since, c.path);
          break;
        case RetentionKind::kNotDue:
          break;
      }
    }
    std::sort(pending.begin(), pending.end());
    if (!pending.empty()) f.oldest_due_since = pending.front().first;
    for (auto& [due, path] : pending) f.pending_paths.push_back(std::move(path));
    out.push_back(std::move(f));
  }
  return out;
}

DeletionQueueFigures evaluate_deletion_queue(const CheckpointView& all, const std::string& tier,
                                             double now) {
  DeletionQueueFigures f;
  f.tier = tier;
  double oldest = 0;
  for (const Checkpoint& c : all) {
    if (c.tier != tier) continue;
    ++f.checkpoints;
    sat_add_to(f.bytes, c.bytes);
    if (c.first_seen > 0 && (oldest == 0 || c.first_seen < oldest)) {
      oldest = c.first_seen;
      f.oldest_path = c.path;
    }
  }
  if (oldest > 0) f.oldest_age_seconds = std::max(0.0, now - oldest);
  return f;
}

std::vector<UnverifiedCleanupFigures> evaluate_cleanup_verification(
    const CheckpointView& all, const EventCatalog* events,
    const std::function<double(const std::string&)>& verify_after_seconds, double now) {
  std::vector<UnverifiedCleanupFigures> out;
  if (events == nullptr) return out;
  // The steps whose cleanup is old enough to be judged: usually few.
  std::map<StepKey, double, StepKeyLess> due;  // -> the step's last event
  for (const auto& [key, step] : events->steps) {
    if (step.cleanups == 0 || step.last_event_ts <= 0) continue;
    if (now - step.last_event_ts < verify_after_seconds(key.tier)) continue;
    due.emplace(key, step.last_event_ts);
  }
  if (due.empty()) return out;
  std::map<std::pair<std::string_view, std::string_view>, UnverifiedCleanupFigures> by_job;
  for (const Checkpoint& c : all) {
    if (c.step < 0) continue;
    auto d = due.find(StepKeyLess::View{c.tier, c.job, c.step});
    if (d == due.end()) continue;
    auto [it, inserted] = by_job.try_emplace({c.tier, c.job});
    UnverifiedCleanupFigures& f = it->second;
    if (inserted) {
      f.tier = c.tier;
      f.job = c.job;
    }
    ++f.checkpoints;
    sat_add_to(f.bytes, c.bytes);
    f.entries.push_back({c.path, c.step, c.bytes, d->second});
  }
  for (auto& [key, f] : by_job) {
    std::sort(f.entries.begin(), f.entries.end(),
              [](const UnverifiedCleanup& a, const UnverifiedCleanup& b) {
                return std::tie(a.step, a.path) < std::tie(b.step, b.path);
              });
    out.push_back(std::move(f));
  }
  return out;
}

void UnverifiedCleanupCounter::observe(const std::vector<UnverifiedCleanupFigures>& now) {
  std::set<std::tuple<std::string, std::string, std::string>> open;
  for (const UnverifiedCleanupFigures& f : now) {
    std::uint64_t& total = totals_[{f.tier, f.job}];
    for (const UnverifiedCleanup& e : f.entries) {
      auto key = std::make_tuple(f.tier, f.job, e.path);
      if (!open_.contains(key)) ++total;
      open.insert(std::move(key));
    }
  }
  open_ = std::move(open);
}

double cleanup_oldest_age(std::span<const RetentionFigures> tier_figures, double now) {
  double oldest = 0;
  for (const RetentionFigures& f : tier_figures) {
    if (f.oldest_due_since > 0 && (oldest == 0 || f.oldest_due_since < oldest)) {
      oldest = f.oldest_due_since;
    }
  }
  if (oldest == 0) return 0;
  return std::max(0.0, now - oldest);
}

}  // namespace ckptmon
