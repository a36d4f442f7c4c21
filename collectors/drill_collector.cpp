#include "collectors/drill_collector.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "collectors/restore_drill.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

namespace ckptmon {
namespace {

// Slack past a drill's own deadline before the runner calls it stuck: the
// drill stops itself at its deadline, between two reads.
constexpr double kDeadlineSlackSeconds = 60;

std::shared_ptr<DrillState> copy_drills(const State& state) {
  return state.drills ? std::make_shared<DrillState>(*state.drills)
                      : std::make_shared<DrillState>();
}

DrillRecord record_of(const DrillResult& r, double finished_at, bool cold) {
  DrillRecord d;
  d.tier = r.tier;
  d.job = r.job;
  d.path = r.path;
  d.framework = r.framework;
  d.step = r.step;
  d.finished_at = finished_at;
  d.failure = r.failure;
  d.objective_seconds = r.objective_seconds;
  d.locate_seconds = r.locate_seconds;
  d.metadata_seconds = r.metadata_seconds;
  d.read_seconds = r.read_seconds;
  d.bytes = r.bytes;
  d.files = r.files;
  d.reader_ranks = r.ranks.size();
  d.writer_ranks = r.writer_ranks;
  d.cold = cold;
  d.planned = r.planned;
  return d;
}

}  // namespace

std::set<std::string> saving_jobs(const TierCatalog* catalog, const EventCatalog* events,
                                  double now, double partial_after_seconds) {
  std::set<std::string> out;
  if (catalog != nullptr) {
    for (const Checkpoint& c : catalog->checkpoints) {
      if (c.state == CkptState::kInProgress) out.insert(c.job);
    }
  }
  if (events != nullptr) {
    for (const auto& [key, s] : events->steps) {
      if (s.start_ts <= 0 || s.committed || s.failed) continue;
      if (now - s.start_ts < partial_after_seconds) out.insert(key.job);
    }
  }
  return out;
}

DrillPlan plan_drill(const TierConfig& tier, const TierCatalog* catalog, const EventCatalog* events,
                     const DrillState* drills, double now) {
  DrillPlan out;
  const RestoreDrillPolicy& p = tier.policy.restore_drill;
  if (!p.enabled()) {
    out.why_none = "drills are off";
    return out;
  }
  out.budget_seconds = p.window_left_seconds(now);
  if (out.budget_seconds <= 0) {
    out.why_none = "outside the drill window";
    return out;
  }
  if (catalog == nullptr || !catalog->scanned) {
    out.why_none = "the tier has not been walked yet";
    return out;
  }
  // Each job with a committed checkpoint, and its newest committed step.
  std::map<std::string, std::int64_t> newest;
  for (const Checkpoint& c : catalog->checkpoints) {
    if (c.state != CkptState::kCommitted) continue;
    auto [it, fresh] = newest.try_emplace(c.job, c.step);
    if (!fresh) it->second = std::max(it->second, c.step);
  }
  if (newest.empty()) {
    out.why_none = "no committed checkpoint on the tier";
    return out;
  }
  // One pass over the catalog and the event log, not one per job: this runs
  // on the loop thread every pass.
  const std::set<std::string> saving =
      saving_jobs(catalog, events, now, std::chrono::duration<double>(tier.partial_after).count());
  // (drilled before, last attempt, name): the smallest is drilled first.
  std::optional<std::tuple<bool, double, std::string>> best;
  for (const auto& [job, step] : newest) {
    std::optional<double> last;
    if (drills != nullptr) {
      const auto key = std::make_pair(tier.name, job);
      if (auto it = drills->last.find(key); it != drills->last.end()) last = it->second.finished_at;
      if (auto it = drills->refused_at.find(key); it != drills->refused_at.end()) {
        last = std::max(last.value_or(it->second), it->second);
      }
    }
    if (last && now - *last < p.every_seconds) continue;  // not due
    if (saving.contains(job)) {
      out.saving.push_back(job);
      continue;
    }
    auto key = std::make_tuple(last.has_value(), last.value_or(0), job);
    if (!best || key < *best) best = std::move(key);
  }
  if (best) {
    out.job = std::get<2>(*best);
    out.step = newest.at(*out.job);
  } else {
    out.why_none = out.saving.empty() ? "no job is due" : "every due job is saving";
  }
  return out;
}

DrillCollector::DrillCollector(std::shared_ptr<const Clock> clock,
                               std::shared_ptr<DrillLedger> ledger)
    : clock_(std::move(clock)), ledger_(std::move(ledger)) {}

DrillCollector::~DrillCollector() {
  for (auto& [tier, flag] : cancel_) flag->store(true);
}

void DrillCollector::configure(const Config& cfg) {
  tiers_.clear();
  double longest = 0;
  for (const TierConfig& t : cfg.tiers) {
    if (!t.policy.restore_drill.enabled()) continue;
    tiers_.push_back(t);
    longest = std::max(longest, t.policy.restore_drill.deadline_seconds);
  }
  // Drills of tiers that no longer have them stop at their next read.
  for (auto it = cancel_.begin(); it != cancel_.end();) {
    const bool kept = std::any_of(tiers_.begin(), tiers_.end(),
                                  [&](const TierConfig& t) { return t.name == it->first; });
    if (kept) {
      ++it;
    } else {
      it->second->store(true);
      it = cancel_.erase(it);
    }
  }
  interval_ = cfg.global.scan_interval;
  deadline_ = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(longest + kDeadlineSlackSeconds));
}

std::vector<std::string> DrillCollector::targets() const {
  std::vector<std::string> out;
  out.reserve(tiers_.size());
  for (const TierConfig& t : tiers_) out.push_back(t.name);
  return out;
}

Job DrillCollector::prepare(const std::string& target, const State& state) {
  // The stored drills first, once: when each job was last drilled.
  if (!state.drills || !state.drills->loaded) {
    return [ledger = ledger_]() -> Update {
      std::vector<DrillRecord> stored;
      if (ledger) stored = ledger->load();
      return [stored = std::move(stored)](State& s) {
        if (s.drills && s.drills->loaded) return;
        auto next = copy_drills(s);
        for (const DrillRecord& r : stored) {
          auto& slot = next->last[{r.tier, r.job}];
          if (slot.finished_at < r.finished_at) slot = r;  // a drill run meanwhile stays
        }
        next->loaded = true;
        s.drills = std::move(next);
      };
    };
  }
  auto tier = std::find_if(tiers_.begin(), tiers_.end(),
                           [&](const TierConfig& t) { return t.name == target; });
  if (tier == tiers_.end()) return [] { return Update{}; };
  const double now = clock_->now();
  const TierCatalog* catalog = nullptr;
  if (auto it = state.catalogs.find(target); it != state.catalogs.end()) catalog = &*it->second;
  const DrillPlan plan = plan_drill(*tier, catalog, state.events.get(), state.drills.get(), now);
  if (!plan.saving.empty()) {
    std::string saving;
    for (const auto& j : plan.saving) saving += (saving.empty() ? "" : ", ") + j;
    log::debug("restore drill deferred: the job is saving", {{"tier", target}, {"jobs", saving}});
  }
  if (!plan.job) {
    log::debug("no restore drill this pass", {{"tier", target}, {"why", plan.why_none}});
    const auto deferred = plan.saving.size();
    if (deferred == 0) return [] { return Update{}; };
    return [target, deferred]() -> Update {
      return [target, deferred](State& s) {
        auto next = copy_drills(s);
        next->tiers[target].deferred_saving += deferred;
        s.drills = std::move(next);
      };
    };
  }
  const RestoreDrillPolicy& p = tier->policy.restore_drill;
  auto& flag = cancel_[target];
  if (!flag) flag = std::make_shared<std::atomic<bool>>(false);
  DrillRequest req;
  req.tier = *tier;
  req.job = *plan.job;
  // The version the catalog holds as the newest committed: when the drill's
  // own walk no longer finds it restorable, that is the drill's finding.
  req.step = plan.step;
  req.ranks = static_cast<std::size_t>(p.ranks);
  req.cold = p.cold;
  req.rate_bytes_per_second = p.rate_bytes_per_second;
  const double objective = tier->policy.storage_path_for(*plan.job).recovery_time_objective_seconds;
  if (objective > 0) req.objective_seconds = objective;
  req.deadline_seconds = plan.budget_seconds;
  log::info("restore drill starting", {{"tier", target},
                                       {"job", *plan.job},
                                       {"deadline_seconds", plan.budget_seconds},
                                       {"rate_bytes_per_second", p.rate_bytes_per_second},
                                       {"cold", p.cold}});
  return [req = std::move(req), flag, clock = clock_, ledger = ledger_, target,
          generation = tier->generation]() mutable -> Update {
    req.cancel = flag.get();
    DrillResult r;
    std::string error;
    const DrillOutcome outcome = run_drill(req, *clock, r, error);
    const double finished = clock->now();
    std::optional<DrillRecord> rec;
    std::string store_error;
    if (outcome == DrillOutcome::kRefused && r.path.empty() && req.step) {
      // Not located: the committed version the catalog lists is gone or no
      // longer complete. A restore would fail the same way.
      r.tier = req.tier.name;
      r.job = req.job;
      r.step = *req.step;
      r.failure = "step " + std::to_string(*req.step) +
                  ", committed when the tier was walked, is not restorable now: " + error;
      r.objective_seconds = req.objective_seconds;
    }
    if (outcome == DrillOutcome::kDone || !r.failure.empty()) {
      rec = record_of(r, finished, req.cold);
      if (ledger) {
        try {
          ledger->record(*rec);
        } catch (const std::exception& e) {
          store_error = e.what();  // the drill still counts; the next restart forgets it
        }
      }
    }
    return [rec = std::move(rec), error, store_error, target, generation, finished,
            job = req.job](State& s) {
      if (!s.current_tier("restore_drill", target, generation)) return;
      auto next = copy_drills(s);
      TierDrillCounts& counts = next->tiers[target];
      if (!rec) {
        ++counts.refused;
        counts.last_refusal = error;
        next->refused_at[{target, job}] = finished;
        log::warn("restore drill refused; nothing was read",
                  {{"tier", target}, {"job", job}, {"reason", error}});
      } else {
        if (rec->ok()) {
          ++counts.ok;
        } else {
          ++counts.failed;
        }
        const std::string verdict = !rec->read_ok()         ? "failed: " + rec->failure
                                    : rec->over_objective() ? "over the recovery_time_objective"
                                                            : "ok";
        log::write(rec->ok() ? spdlog::level::info : spdlog::level::warn,
                   rec->ok() ? "restore drill finished" : "restore drill failed",
                   {{"tier", target},
                    {"job", rec->job},
                    {"step", rec->step},
                    {"seconds", rec->total_seconds()},
                    {"bytes", rec->bytes},
                    {"files", rec->files},
                    {"result", verdict},
                    {"store_error", store_error}});
        next->refused_at.erase({target, rec->job});
        next->last[{target, rec->job}] = *rec;
      }
      s.drills = std::move(next);
    };
  };
}

void DrillCollector::on_deadline(const std::string& target, State& /*state*/) {
  log::warn("restore drill still running past its deadline (a stuck read?)",
            {{"tier", target}, {"deadline", format_duration(deadline_)}});
}

void DrillCollector::on_failure(const std::string& target, const std::string& error,
                                State& /*state*/) {
  log::error("restore drill could not run", {{"tier", target}, {"err", error}});
}

}  // namespace ckptmon
