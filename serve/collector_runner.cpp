#include "serve/collector_runner.hpp"

#include <algorithm>
#include <exception>
#include <set>

#include <boost/asio/post.hpp>

#include "util/log.hpp"

namespace ckptmon {
namespace {

// Why a target was not probed (the tier's down_reason, the log).
constexpr std::string_view kTargetStuck = "not probed: another job for this target is stuck";
constexpr std::string_view kWorkersStuck = "not probed: all workers busy with stuck jobs";

}  // namespace
CollectorRunner::CollectorRunner(boost::asio::io_context& io, WorkerPool& pool, State& state,
                                 std::shared_ptr<const Clock> clock,
                                 std::function<void()> on_change)
    : io_(io),
      pool_(pool),
      state_(state),
      clock_(std::move(clock)),
      on_change_(std::move(on_change)),
      inbox_(std::make_shared<Inbox>()),
      clock_timers_(io, clock_) {
  inbox_->io = &io_;
}

CollectorRunner::~CollectorRunner() {
  stop();
  for (auto& [_, f] : flights_) clock_timers_.cancel(f.timer);
  std::lock_guard lock(inbox_->mu);
  inbox_->io = nullptr;
}

void CollectorRunner::set_collectors(std::vector<std::shared_ptr<Collector>> collectors) {
  collectors_ = std::move(collectors);
}

bool CollectorRunner::all_reported() const {
  for (const auto& c : collectors_) {
    for (const auto& t : c->targets()) {
      auto it = reported_.find(std::string(c->name()) + "/" + t);
      if (it == reported_.end() || !it->second) return false;
    }
  }
  return true;
}

void CollectorRunner::start() {
  stop();
  timers_.assign(collectors_.size(), 0);
  armed_at_.assign(collectors_.size(), 0);
  armed_for_.assign(collectors_.size(), 0);
  for (std::size_t i = 0; i < collectors_.size(); ++i) {
    run(collectors_[i]);
    arm(i);
  }
}

void CollectorRunner::reschedule() {
  if (timers_.size() != collectors_.size()) {
    start();
    return;
  }
  std::set<std::string> live_keys;  // collector/target of the configuration in force
  for (std::size_t i = 0; i < collectors_.size(); ++i) {
    const auto& c = collectors_[i];
    const double every = to_seconds(c->interval());
    if (every != armed_for_[i]) {
      // Due where the new interval ends, counted from the same start.
      clock_timers_.cancel(timers_[i]);
      arm(i, armed_at_[i]);
    }
    CollectorStatus& status = state_.collectors[std::string(c->name())];
    const auto targets = c->targets();
    std::set<std::string> live(targets.begin(), targets.end());
    std::erase_if(status.targets, [&](const auto& kv) { return !live.contains(kv.first); });
    for (const auto& target : targets) {
      const std::string key = std::string(c->name()) + "/" + target;
      live_keys.insert(key);
      auto seen = launched_for_.find(key);
      if (seen != launched_for_.end() && seen->second == target_generation(target)) continue;
      if (flights_.contains(key)) continue;  // its next run is the new one
      launch(c, target, c->deadline());
    }
  }
  // Targets gone with the reload: a later one of the same name is new.
  std::erase_if(launched_for_, [&](const auto& kv) { return !live_keys.contains(kv.first); });
}

std::uint64_t CollectorRunner::target_generation(const std::string& target) const {
  if (!state_.config) return 0;
  const TierConfig* t = state_.config->find_tier(target);
  return t != nullptr ? t->generation : 0;
}

void CollectorRunner::stop() {
  for (ClockTimers::Id t : timers_) clock_timers_.cancel(t);
  timers_.clear();
  armed_at_.clear();
  armed_for_.clear();
}

void CollectorRunner::arm(std::size_t index, std::optional<double> began) {
  const double now = clock_->monotonic();
  const double every = to_seconds(collectors_[index]->interval());
  armed_at_[index] = began.value_or(now);
  armed_for_[index] = every;
  // stop() cancels it: a cancelled timer is never called.
  timers_[index] =
      clock_timers_.after(std::max(0.0, armed_at_[index] + every - now), [this, index] {
        run(collectors_[index]);
        arm(index);
      });
}

void CollectorRunner::run_all() {
  for (auto& c : collectors_) run(c);
}

bool CollectorRunner::run(std::string_view collector_name) {
  for (auto& c : collectors_) {
    if (c->name() == collector_name) {
      run(c);
      return true;
    }
  }
  return false;
}

bool CollectorRunner::run_target(std::string_view collector_name, const std::string& target) {
  for (auto& c : collectors_) {
    if (c->name() != collector_name) continue;
    const auto targets = c->targets();
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) return false;
    if (flights_.contains(std::string(collector_name) + "/" + target)) return false;
    launch(c, target, c->deadline());
    return true;
  }
  return false;
}

void CollectorRunner::run(const std::shared_ptr<Collector>& owner) {
  Collector& collector = *owner;
  CollectorStatus& status = state_.collectors[std::string(collector.name())];
  const auto targets = collector.targets();
  // Forget targets that a reload removed.
  std::set<std::string> live(targets.begin(), targets.end());
  std::erase_if(status.targets, [&](const auto& kv) { return !live.contains(kv.first); });
  for (const auto& target : targets) {
    const std::string key = std::string(collector.name()) + "/" + target;
    if (flights_.contains(key)) {
      ++status.skipped;
      continue;
    }
    launch(owner, target, collector.deadline());
  }
}

void CollectorRunner::launch(const std::shared_ptr<Collector>& c, const std::string& target,
                             Duration deadline) {
  const std::string key = std::string(c->name()) + "/" + target;
  launched_for_[key] = target_generation(target);
  if (target_stuck(target)) {
    not_started(*c, target, std::string(kTargetStuck));
    return;
  }
  Job job;
  try {
    job = c->prepare(target, state_);
  } catch (const std::exception& e) {
    record(*c, target, 0, Result{nullptr, std::string("prepare failed: ") + e.what()}, false);
    return;
  }
  Flight f;
  f.collector = c;
  f.target = target;
  f.start = clock_->monotonic();
  f.deadline = deadline;
  f.id = next_id_++;
  f.started = std::make_shared<Pickup>();
  const std::uint64_t id = f.id;
  auto started = f.started;
  auto& counter = stuck_[target];
  if (!counter) counter = std::make_shared<std::atomic<int>>(0);
  f.target_stuck = counter;
  state_.collectors[std::string(c->name())].targets[target].in_flight = true;
  Flight& placed = flights_.emplace(key, std::move(f)).first->second;
  arm_deadline(key, placed, to_seconds(deadline));

  placed.ticket = pool_.post([job = std::move(job), inbox = inbox_, key, id, started,
                              stuck = counter, clock = clock_, this]() mutable {
    started->at.store(clock->monotonic());
    started->picked.store(true);
    Result r;
    try {
      if (stuck->load() > 0) {
        r.not_run = true;  // it would only tie up one more worker on the hung mount
      } else {
        r.update = job();
      }
    } catch (const std::exception& e) {
      r.error = e.what();
    } catch (...) {
      r.error = "unknown exception";
    }
    job = nullptr;
    std::lock_guard lock(inbox->mu);
    if (inbox->io == nullptr) return;  // the runner is gone: drop the result
    boost::asio::post(*inbox->io, [this, inbox, key, id, r = std::move(r)]() mutable {
      if (inbox->io == nullptr) return;  // closed on this (the loop) thread meanwhile
      finish(key, id, std::move(r));
    });
  });
}

void CollectorRunner::arm_deadline(const std::string& key, Flight& f, double after_seconds) {
  const std::uint64_t id = f.id;
  f.timer = clock_timers_.after(after_seconds, [this, key, id] { expire(key, id); });
}

bool CollectorRunner::target_stuck(const std::string& target) const {
  auto it = stuck_.find(target);
  return it != stuck_.end() && it->second->load() > 0;
}

void CollectorRunner::not_started(Collector& collector, const std::string& target,
                                  const std::string& why) {
  reported_[std::string(collector.name()) + "/" + target] = true;
  CollectorStatus& status = state_.collectors[std::string(collector.name())];
  ++status.not_started;
  auto& t = status.targets[target];
  t.success = false;
  // Said once per stretch: every cycle while workers stay stuck would be a
  // line a scan interval for each target.
  if (!t.not_probed) {
    log::warn("collector run not started; target not probed",
              {{"collector", collector.name()}, {"target", target}, {"reason", why}});
  } else {
    log::debug("collector run not started; target still not probed",
               {{"collector", collector.name()}, {"target", target}, {"reason", why}});
  }
  t.not_probed = true;
  try {
    collector.on_not_started(target, why, state_);
  } catch (const std::exception& e) {
    log::error("collector not-started handler threw",
               {{"collector", collector.name()}, {"err", e.what()}});
  }
  if (on_change_) on_change_();
}

void CollectorRunner::finish(const std::string& key, std::uint64_t id, Result result) {
  auto it = flights_.find(key);
  if (it == flights_.end() || it->second.id != id) return;
  std::shared_ptr<Collector> collector = it->second.collector;
  const std::string target = it->second.target;
  // From when a worker picked it up (the job's own duration), not from queueing.
  const Pickup& p = *it->second.started;
  const double from = p.picked.load() ? p.at.load() : it->second.start;
  const double seconds = std::max(0.0, clock_->monotonic() - from);
  const bool was_late = it->second.timed_out;
  const bool said_not_started = it->second.not_started_reported;
  if (was_late) --*it->second.target_stuck;
  clock_timers_.cancel(it->second.timer);
  flights_.erase(it);
  if (result.not_run) {
    state_.collectors[std::string(collector->name())].targets[target].in_flight = false;
    if (!said_not_started) {
      not_started(*collector, target, std::string(kTargetStuck));
    } else if (on_change_) {
      on_change_();
    }
    return;
  }
  record(*collector, target, seconds, std::move(result), was_late);
}

void CollectorRunner::record(Collector& collector, const std::string& target, double seconds,
                             Result result, bool was_late) {
  reported_[std::string(collector.name()) + "/" + target] = true;
  CollectorStatus& status = state_.collectors[std::string(collector.name())];
  auto& t = status.targets[target];
  t.in_flight = false;
  t.duration_seconds = seconds;
  if (t.not_probed) {
    t.not_probed = false;
    log::info("collector run started again; target probed",
              {{"collector", collector.name()}, {"target", target}});
  }
  bool ok = result.error.empty();
  if (ok && result.update) {
    try {
      result.update(state_);
    } catch (const std::exception& e) {
      ok = false;
      result.error = std::string("applying result failed: ") + e.what();
    }
  }
  t.success = ok;
  if (!ok) {
    ++status.errors;
    log::warn("collector run failed",
              {{"collector", collector.name()}, {"target", target}, {"err", result.error}});
    try {
      collector.on_failure(target, result.error, state_);
    } catch (const std::exception& e) {
      log::error("collector failure handler threw",
                 {{"collector", collector.name()}, {"err", e.what()}});
    }
  } else if (was_late) {
    log::info("collector run returned after its deadline",
              {{"collector", collector.name()}, {"target", target}, {"seconds", seconds}});
  }
  if (on_change_) on_change_();
}

void CollectorRunner::expire(const std::string& key, std::uint64_t id) {
  auto it = flights_.find(key);
  if (it == flights_.end() || it->second.id != id || it->second.timed_out) return;
  Flight& f = it->second;
  const double now = clock_->monotonic();
  if (!f.started->picked.load()) {
    // Still queued: no worker has run it, so nothing is known about the
    // target. Not probed only when every worker is held by a stuck job; a
    // queue behind busy workers whose jobs are not past their own deadlines
    // is only waiting (one of those may get stuck and bring a spare;
    // report_starved looks again then). The deadline counts again once a
    // worker takes it.
    arm_deadline(key, f, to_seconds(f.deadline));
    report_starved();
    return;
  }
  const double began = f.started->at.load();
  if (now < began + to_seconds(f.deadline)) {
    arm_deadline(key, f, began + to_seconds(f.deadline) - now);
    return;
  }
  f.timed_out = true;
  ++*f.target_stuck;
  pool_.mark_stuck(f.ticket);
  reported_[key] = true;
  CollectorStatus& status = state_.collectors[std::string(f.collector->name())];
  ++status.timeouts;
  auto& t = status.targets[f.target];
  t.success = false;
  t.duration_seconds = now - began;
  log::warn("collector run passed its deadline; still waiting for it in the background",
            {{"collector", f.collector->name()}, {"target", f.target}});
  try {
    f.collector->on_deadline(f.target, state_);
  } catch (const std::exception& e) {
    log::error("collector deadline handler threw",
               {{"collector", f.collector->name()}, {"err", e.what()}});
  }
  if (on_change_) on_change_();
  report_starved();
}

void CollectorRunner::report_starved() {
  if (!pool_.starved()) return;
  const double now = clock_->monotonic();
  for (auto& [key, f] : flights_) {
    if (f.not_started_reported || f.started->picked.load() ||
        now < f.start + to_seconds(f.deadline)) {
      continue;
    }
    f.not_started_reported = true;
    not_started(*f.collector, f.target, std::string(kWorkersStuck));
  }
}

}  // namespace ckptmon
