#include "model/events.hpp"

#include <algorithm>
#include <limits>

#include "util/saturating.hpp"

namespace ckptmon {
namespace {

// Pending pause and restore halves kept per entry: a writer that never sends
// the other half must not grow them without bound.
constexpr std::size_t kMaxPending = 4096;

double earliest(double current, double ts) { return current == 0 ? ts : std::min(current, ts); }

template <typename Map>
void bound(Map& m) {
  while (m.size() > kMaxPending) m.erase(m.begin());
}

}  // namespace

std::vector<double> duration_buckets() {
  return {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
}
std::vector<double> pause_buckets() {
  return {0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600};
}
std::vector<double> restore_buckets() {
  return {1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200};
}

std::optional<double> EventStep::duration() const {
  if (!committed || start_ts <= 0) return std::nullopt;
  return std::max(0.0, commit_ts - start_ts);
}

std::optional<double> EventStep::completion_skew() const {
  if (shards == 0) return std::nullopt;
  return std::max(0.0, last_shard_end - first_shard_end);
}

EventJob::EventJob() : duration(duration_buckets()), pause(pause_buckets()) {}
EventRestores::EventRestores() : duration(restore_buckets()) {}

std::optional<double> phase_seconds(const RestorePhases& p, std::size_t i) {
  auto span = [](const std::optional<double>& from,
                 const std::optional<double>& to) -> std::optional<double> {
    if (!from || !to || *to < *from) return std::nullopt;
    return *to - *from;
  };
  switch (i) {
    case 0:
      return span(p.start, p.located);
    case 1:
      return span(p.located ? p.located : p.start, p.read);
    case 2:
      return span(p.read, p.resharded);
    case 3:
      return span(p.done ? p.done : p.resharded ? p.resharded : p.read, p.resumed);
    default:
      return std::nullopt;
  }
}

void EventRestores::note_phase(EventType type, std::int64_t step, double ts) {
  if (phases && step < phases->step) return;
  const bool finished = phases && (phases->done || phases->resumed) &&
                        ts > std::max(phases->done.value_or(0), phases->resumed.value_or(0));
  if (!phases || step > phases->step || (type == EventType::kRestoreStart && finished)) {
    phases = RestorePhases{};
    phases->step = step;
  }
  RestorePhases& p = *phases;
  auto earliest = [ts](std::optional<double>& m) { m = m ? std::min(*m, ts) : ts; };
  auto latest = [ts](std::optional<double>& m) { m = m ? std::max(*m, ts) : ts; };
  switch (type) {
    case EventType::kRestoreStart:
      earliest(p.start);
      break;
    case EventType::kRestoreLocateDone:
      latest(p.located);
      break;
    case EventType::kRestoreReadDone:
      latest(p.read);
      ++p.ranks_read;
      break;
    case EventType::kRestoreReshardDone:
      latest(p.resharded);
      break;
    case EventType::kRestoreDone:
      latest(p.done);
      break;
    case EventType::kRestoreResume:
      earliest(p.resumed);
      break;
    default:
      break;
  }
}

std::string_view to_string(FileChange c) {
  switch (c) {
    case FileChange::kTruncated:
      return "truncated";
    case FileChange::kRotated:
      return "rotated";
    case FileChange::kDeleted:
      return "deleted";
    case FileChange::kReplaced:
      return "replaced";
  }
  return "unknown";
}

std::string_view to_string(IntegrityResult r) {
  switch (r) {
    case IntegrityResult::kOk:
      return "ok";
    case IntegrityResult::kMismatch:
      return "mismatch";
    case IntegrityResult::kMissing:
      return "missing";
    case IntegrityResult::kError:
      return "error";
  }
  return "error";
}

std::string_view to_string(PathRefusal r) {
  switch (r) {
    case PathRefusal::kOutsideTier:
      return "outside_tier";
    case PathRefusal::kDotDot:
      return "dotdot";
    case PathRefusal::kBadPath:
      return "bad_path";
    case PathRefusal::kSymlink:
      return "symlink";
    case PathRefusal::kEscape:
      return "escape";
    case PathRefusal::kUnconfiguredTier:
      return "unconfigured_tier";
  }
  return "bad_path";
}

std::optional<PathRefusal> path_refusal_from(std::string_view label) {
  for (std::size_t i = 0; i < kPathRefusalCount; ++i) {
    if (to_string(static_cast<PathRefusal>(i)) == label) return static_cast<PathRefusal>(i);
  }
  return std::nullopt;
}

const EventStep* EventCatalog::find(std::string_view tier, std::string_view job,
                                    std::int64_t step) const {
  auto it = steps.find(StepKeyLess::View{tier, job, step});
  return it == steps.end() ? nullptr : &it->second;
}

std::vector<std::pair<std::int64_t, std::uint64_t>> EventCatalog::slow_ranks(
    const std::string& tier, const std::string& job, std::size_t k) const {
  std::map<std::int64_t, std::uint64_t> counts;
  if (auto it = jobs.find({tier, job}); it != jobs.end()) counts = it->second.slow_ranks;
  auto lo =
      steps.lower_bound(StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::min()});
  for (auto it = lo; it != steps.end() && it->first.tier == tier && it->first.job == job; ++it) {
    if (it->second.last_rank >= 0) ++counts[it->second.last_rank];
  }
  std::vector<std::pair<std::int64_t, std::uint64_t>> out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

std::optional<bool> IntegrityStatus::verdict(const std::string& tier, const std::string& job,
                                             std::int64_t step, const std::string& path) const {
  const IntegrityCounts* by_step = nullptr;
  if (auto it = steps.find(StepKeyLess::View{tier, job, step}); it != steps.end()) {
    by_step = &it->second;
  }
  const IntegrityCounts* by_path = nullptr;
  if (auto it = checkpoints.find({tier, path}); it != checkpoints.end()) by_path = &it->second;
  if ((by_step != nullptr && by_step->failed()) || (by_path != nullptr && by_path->failed())) {
    return false;
  }
  if ((by_step != nullptr && (*by_step)[IntegrityResult::kOk] > 0) ||
      (by_path != nullptr && (*by_path)[IntegrityResult::kOk] > 0)) {
    return true;
  }
  return std::nullopt;
}

// --- aggregation -----------------------------------------------------------------

EventAggregator::EventAggregator(EventCatalog& cat, std::size_t steps_per_job,
                                 const EventLimits* limits)
    : cat_(cat), steps_per_job_(std::max<std::size_t>(steps_per_job, 1)), limits_(limits) {}

void EventAggregator::clear() {
  touched_steps_.clear();
  touched_jobs_.clear();
  touched_restores_.clear();
  checks_.clear();
  last_pack_ = nullptr;
  last_step_ = nullptr;
  last_drain_ = nullptr;
  last_job_ = nullptr;
}

void EventAggregator::add(const LineResult& line, std::string_view tier) {
  if (line.status == LineStatus::kOk) {
    const Event& e = line.event;
    const std::string_view t = e.tier.empty() ? tier : std::string_view(e.tier);
    if (const RejectReason why = refused(t, e.job); why != RejectReason::kNone) {
      ++cat_.totals.lines[static_cast<std::size_t>(LineStatus::kRejected)];
      ++cat_.totals.errors[static_cast<std::size_t>(why)];
      return;
    }
    ++cat_.totals.lines[static_cast<std::size_t>(LineStatus::kOk)];
    apply(e, t);
    return;
  }
  ++cat_.totals.lines[static_cast<std::size_t>(line.status)];
  if (line.status == LineStatus::kRejected) {
    ++cat_.totals.errors[static_cast<std::size_t>(line.reason)];
  }
}

RejectReason EventAggregator::refused(std::string_view tier, std::string_view job) {
  if (limits_ == nullptr) return RejectReason::kNone;
  RejectReason why = RejectReason::kNone;
  if (!limits_->tiers.empty() && !limits_->tiers.contains(tier)) {
    why = RejectReason::kUnconfiguredTier;
  } else {
    if (last_job_ != nullptr && last_job_key_.second == job && last_job_key_.first == tier) {
      return RejectReason::kNone;
    }
    const std::pair<std::string, std::string> key{std::string(tier), std::string(job)};
    if (cat_.jobs.contains(key)) return RejectReason::kNone;
    auto [it, fresh] = jobs_in_tier_.try_emplace(key.first, 0);
    if (fresh) {
      for (auto j = cat_.jobs.lower_bound({key.first, std::string()});
           j != cat_.jobs.end() && j->first.first == key.first; ++j) {
        ++it->second;
      }
    }
    if (it->second < limits_->max_jobs_per_tier) {
      ++it->second;  // apply() creates it
      return RejectReason::kNone;
    }
    why = RejectReason::kTooManyJobs;
  }
  if (refusals_by_reason_[static_cast<std::size_t>(why)]++ < kRefusalsKept) {
    refusals_.push_back({why, std::string(tier), std::string(job)});
  }
  return why;
}

EventJob& EventAggregator::job_for(std::string_view tier, std::string_view job) {
  if (last_job_ != nullptr && last_job_key_.second == job && last_job_key_.first == tier) {
    return *last_job_;
  }
  std::pair<std::string, std::string> key{std::string(tier), std::string(job)};
  auto it = cat_.jobs.try_emplace(key).first;
  touched_jobs_.insert(key);
  last_job_key_ = std::move(key);
  last_job_ = &it->second;
  return it->second;
}

EventRestores& EventAggregator::restores_for(std::string_view job) {
  auto it = cat_.restores.try_emplace(std::string(job)).first;
  touched_restores_.insert(it->first);
  return it->second;
}

EventStep* EventAggregator::step_for(std::string_view tier, std::string_view job, std::int64_t step,
                                     bool create) {
  if (last_step_ != nullptr && last_key_.step == step && last_key_.job == job &&
      last_key_.tier == tier) {
    return last_step_;
  }
  const StepKeyLess::View view{tier, job, step};
  auto it = cat_.steps.find(view);
  if (it == cat_.steps.end()) {
    if (!create) return nullptr;
    if (step <= job_for(tier, job).evicted_through) {
      ++cat_.totals.stale_events;
      return nullptr;
    }
    StepKey key{std::string(tier), std::string(job), step};
    cat_.steps.emplace(key, EventStep{});
    touched_steps_.insert(key);
    evict_beyond(tier, job);
    it = cat_.steps.find(view);
    if (it == cat_.steps.end()) {  // older than every kept step: folded in at once
      ++cat_.totals.stale_events;
      return nullptr;
    }
  } else {
    touched_steps_.insert(it->first);
  }
  last_key_ = it->first;
  last_step_ = &it->second;
  last_pack_ = nullptr;
  return last_step_;
}

void EventAggregator::evict_beyond(std::string_view tier, std::string_view job) {
  auto lo = cat_.steps.lower_bound(
      StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::min()});
  auto hi = cat_.steps.upper_bound(
      StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::max()});
  auto n = static_cast<std::size_t>(std::distance(lo, hi));
  if (n <= steps_per_job_) return;
  EventJob& j = job_for(tier, job);
  while (n > steps_per_job_) {
    if (lo->second.last_rank >= 0) ++j.slow_ranks[lo->second.last_rank];
    j.evicted_through = std::max(j.evicted_through, lo->first.step);
    touched_steps_.insert(lo->first);
    lo = cat_.steps.erase(lo);
    --n;
  }
  last_step_ = nullptr;  // may have pointed at an evicted entry
  last_drain_ = nullptr;
}

void EventAggregator::observe_duration(EventStep& s, EventJob& j) {
  auto d = s.duration();
  if (s.duration_observed || !d) return;
  j.duration.observe(*d);
  s.duration_observed = true;
}

void EventAggregator::pair_pause(EventStep& s, double start, double end, EventJob& j) {
  const double seconds = std::max(0.0, end - start);
  if (end >= start) {  // a pause that ends before it starts has no window
    s.pause_first_start = s.pause_first_start == 0 ? start : std::min(s.pause_first_start, start);
    s.pause_last_end = std::max(s.pause_last_end, end);
  }
  ++s.pauses;
  s.pause_max = std::max(s.pause_max, seconds);
  if (!s.pause_observed) {
    j.pause.observe(seconds);
    s.pause_observed = true;
  }
}

namespace {

std::string restore_key(const Event& e) {
  return std::to_string(e.step.value_or(-1)) + "/" + std::to_string(e.rank.value_or(-1));
}

}  // namespace

DrainProgress& EventAggregator::drain_for(EventStep& s, const Event& e) {
  if (e.from_tier.empty() && e.to_tier.empty() && s.drains.size() == 1) {
    return s.drains.begin()->second;
  }
  // Every shard_drained of a checkpoint names the same pair: skip building the key.
  if (last_drain_ != nullptr && last_drain_step_ == &s && last_drain_from_ == e.from_tier &&
      last_drain_to_ == e.to_tier) {
    return *last_drain_;
  }
  last_drain_ = &s.drains[e.from_tier + ">" + e.to_tier];
  last_drain_step_ = &s;
  last_drain_from_ = e.from_tier;
  last_drain_to_ = e.to_tier;
  return *last_drain_;
}

void EventAggregator::apply(const Event& e, std::string_view tier) {
  EventJob& j = job_for(tier, e.job);
  j.last_event_ts = std::max(j.last_event_ts, e.ts);
  if (is_restore_event(e.type) && e.step) restores_for(e.job).note_phase(e.type, *e.step, e.ts);
  switch (e.type) {
    case EventType::kRestoreLocateDone:
    case EventType::kRestoreReadDone:
    case EventType::kRestoreReshardDone:
    case EventType::kRestoreResume:
      return;  // only their phase marks (above)
    case EventType::kRestoreStart: {
      EventRestores& r = restores_for(e.job);
      const std::string key = restore_key(e);
      if (auto it = r.pending_dones.find(key); it != r.pending_dones.end()) {
        const double d = std::max(0.0, it->second - e.ts);
        r.duration.observe(d);
        if (r.last && r.last->ts == it->second && r.last->step == e.step.value_or(-1)) {
          r.last->duration = d;
        }
        r.pending_dones.erase(it);
      } else {
        r.pending_starts[key] = e.ts;
        bound(r.pending_starts);
      }
      return;
    }
    case EventType::kRestoreDone: {
      EventRestores& r = restores_for(e.job);
      const std::string key = restore_key(e);
      RestoreRecord rec;
      rec.step = e.step.value_or(-1);
      rec.tier = std::string(tier);
      rec.ts = e.ts;
      rec.bytes = e.bytes.value_or(0);
      rec.ok = e.ok.value_or(false);
      ++r.restores;
      if (!rec.ok) ++r.failed;
      if (rec.ok) r.last_ok_ts = std::max(r.last_ok_ts, e.ts);
      if (auto it = r.pending_starts.find(key); it != r.pending_starts.end()) {
        const double d = std::max(0.0, e.ts - it->second);
        rec.duration = d;
        if (rec.ok) r.duration.observe(d);
        r.pending_starts.erase(it);
      } else if (rec.ok) {
        r.pending_dones[key] = e.ts;
        bound(r.pending_dones);
      }
      if (!r.last || e.ts >= r.last->ts) r.last = std::move(rec);
      return;
    }
    case EventType::kCleanup: {
      ++j.cleanups;
      sat_add_to(j.cleanup_bytes, e.bytes.value_or(0));
      if (e.step) {
        if (EventStep* s = step_for(tier, e.job, *e.step, false)) {
          ++s->cleanups;
          sat_add_to(s->cleanup_bytes, e.bytes.value_or(0));
          s->last_event_ts = std::max(s->last_event_ts, e.ts);
        }
      }
      return;
    }
    case EventType::kUnknown:
      return;
    default:
      break;
  }
  if (!e.step) return;  // the parser requires a step for every other type
  EventStep* sp = step_for(tier, e.job, *e.step, true);
  if (sp == nullptr) return;
  EventStep& s = *sp;
  s.last_event_ts = std::max(s.last_event_ts, e.ts);
  switch (e.type) {
    case EventType::kCheckpointStart:
      s.start_ts = earliest(s.start_ts, e.ts);
      observe_duration(s, j);
      break;
    case EventType::kShardWritten: {
      const std::int64_t rank = e.rank.value_or(-1);
      ++s.shards;
      sat_add_to(s.shard_bytes, e.bytes.value_or(0));
      if (e.start_ts) s.first_shard_start = earliest(s.first_shard_start, *e.start_ts);
      s.first_shard_end = s.shards == 1 ? e.ts : std::min(s.first_shard_end, e.ts);
      if (s.shards == 1 || e.ts > s.last_shard_end ||
          (e.ts == s.last_shard_end && rank < s.last_rank)) {
        s.last_shard_end = e.ts;
        s.last_rank = rank;
      }
      if (!e.checksum.empty()) {
        ++s.checksummed_shards;
        if (last_pack_ == nullptr) {
          last_pack_ = &checks_[last_key_];
          // Shards of a checkpoint come in runs: grow in steps, not one by one.
          last_pack_->reserve(64, 64 * (e.checksum.hex.size() + e.path.size()));
        }
        last_pack_->add(rank, e.bytes.value_or(0), e.checksum, e.path);
      }
      break;
    }
    case EventType::kCheckpointCommit:
      if (!s.committed || e.ts < s.commit_ts) {
        s.commit_ts = e.ts;
        s.commit_files = e.files.value_or(0);
        s.commit_bytes = e.bytes.value_or(0);
      }
      s.committed = true;
      observe_duration(s, j);
      break;
    case EventType::kCheckpointFailed:
      if (!s.failed) {
        s.failed = true;
        s.failed_ts = e.ts;
        s.failure_reason = e.reason;
        ++j.failures;
        j.recent_failures.push_back(EventFailure{*e.step, e.ts, e.reason});
        if (j.recent_failures.size() > kRecentFailures) {
          j.recent_failures.erase(j.recent_failures.begin());
        }
      }
      break;
    case EventType::kPauseStart: {
      const std::int64_t rank = e.rank.value_or(-1);
      if (auto it = s.pause_ends.find(rank); it != s.pause_ends.end()) {
        pair_pause(s, e.ts, it->second, j);
        s.pause_ends.erase(it);
      } else {
        auto [pit, inserted] = s.pause_starts.emplace(rank, e.ts);
        if (!inserted) pit->second = std::min(pit->second, e.ts);
        bound(s.pause_starts);
      }
      break;
    }
    case EventType::kPauseEnd: {
      const std::int64_t rank = e.rank.value_or(-1);
      if (auto it = s.pause_starts.find(rank); it != s.pause_starts.end()) {
        pair_pause(s, it->second, e.ts, j);
        s.pause_starts.erase(it);
      } else {
        auto [pit, inserted] = s.pause_ends.emplace(rank, e.ts);
        if (!inserted) pit->second = std::max(pit->second, e.ts);
        bound(s.pause_ends);
      }
      break;
    }
    case EventType::kDrainStart: {
      DrainProgress& d = drain_for(s, e);
      d.start_ts = earliest(d.start_ts, e.ts);
      break;
    }
    case EventType::kShardDrained: {
      DrainProgress& d = drain_for(s, e);
      sat_add_to(d.bytes, e.bytes.value_or(0));
      ++d.shards;
      break;
    }
    case EventType::kDrainDone: {
      DrainProgress& d = drain_for(s, e);
      d.done_ts = std::max(d.done_ts, e.ts);
      if (e.ok) d.ok = *e.ok;
      break;
    }
    default:
      break;
  }
}

}  // namespace ckptmon
