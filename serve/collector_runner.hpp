#pragma once
// Runs collector jobs on the worker pool: at most one job in flight per
// (collector, target), a deadline per job, exceptions caught, duration and
// success recorded in State.
//
// A deadline counts from when a worker picked the job up. A job still queued
// when its deadline passes (every worker busy, usually with stuck jobs) was
// never run: it is counted as not started and its target reported "not
// probed", never down or timed out, and it keeps its place in the queue. A
// started job past its deadline is stuck: the collector's on_deadline says
// so, the pool may start a spare worker for it, and while a target has a
// stuck job no collector starts another job for that target (the per-target
// cap across collectors: one stuck job per target ties up one worker, not
// one per collector per interval). Results come back to the loop thread through an
// inbox that is closed at destruction, so a job that returns after the
// runner is gone is dropped instead of touching freed memory.
// Intervals, deadlines and durations follow the injected clock's monotonic
// reading (ClockTimers): with a FakeClock, tests advance time instead of
// sleeping.
// Loop thread only (except the inbox, which is internally locked).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "collectors/collector.hpp"
#include "model/state.hpp"
#include "serve/clock_timers.hpp"
#include "util/clock.hpp"
#include "util/worker_pool.hpp"

namespace ckptmon {

class CollectorRunner {
 public:
  // `on_change` is called on the loop thread after State changed.
  CollectorRunner(boost::asio::io_context& io, WorkerPool& pool, State& state,
                  std::shared_ptr<const Clock> clock, std::function<void()> on_change);
  ~CollectorRunner();
  CollectorRunner(const CollectorRunner&) = delete;
  CollectorRunner& operator=(const CollectorRunner&) = delete;

  void set_collectors(std::vector<std::shared_ptr<Collector>> collectors);
  const std::vector<std::shared_ptr<Collector>>& collectors() const { return collectors_; }

  // Runs every collector now, then each again every interval() of its own.
  // Calling it again restarts the timers.
  void start();
  // After a reload (the collectors configured again): each collector keeps
  // its schedule when its interval did not change, and is re-armed for what
  // is left of the new interval when it did (due at once when that is
  // past); only targets that are new, or tiers the reload re-pointed
  // (TierConfig::generation), run now. So a reload that changes nothing
  // walks nothing, and a reload storm does not starve the schedule.
  // Before start(), the same as start().
  void reschedule();
  // Stops the periodic runs; jobs in flight finish in the background.
  void stop();
  // Starts one run of every target of every collector that is not still in
  // flight from an earlier cycle (those are counted as skipped).
  void run_all();
  // The same, for one collector (by name); false when there is none.
  bool run(std::string_view collector_name);
  // One target of one collector, now. False when there is no such target or
  // it is in flight already (the caller may ask again later).
  bool run_target(std::string_view collector_name, const std::string& target);

  std::size_t in_flight() const { return flights_.size(); }
  // True once every target has reported at least once (result or deadline).
  bool all_reported() const;

 private:
  struct Inbox {
    std::mutex mu;
    boost::asio::io_context* io = nullptr;
  };
  // When a worker picked the job up (the clock's monotonic reading), set
  // by the worker, read on the loop.
  struct Pickup {
    std::atomic<bool> picked{false};
    std::atomic<double> at{0};
  };
  struct Flight {
    std::shared_ptr<Collector> collector;
    std::string target;
    double start = 0;  // monotonic, when queued
    ClockTimers::Id timer = 0;
    Duration deadline{};
    bool timed_out = false;
    bool not_started_reported = false;
    std::uint64_t id = 0;
    std::uint64_t ticket = 0;  // the pool's, for mark_stuck
    std::shared_ptr<Pickup> started;
    // Stuck jobs of this target (all collectors), shared with queued jobs so
    // that one taken by a worker after its target got stuck does not run.
    std::shared_ptr<std::atomic<int>> target_stuck;
  };
  struct Result {
    Update update;
    std::string error;     // non-empty: the job threw
    bool not_run = false;  // its target had a stuck job when a worker took it
  };

  void run(const std::shared_ptr<Collector>& c);
  // Arms collector `index` for its interval counted from `began` (monotonic;
  // now when unset), at once when that is past.
  void arm(std::size_t index, std::optional<double> began = std::nullopt);
  // The generation of the tier named `target` in the configuration in force
  // (0 when no tier has that name): what a tier collector's target ran for.
  std::uint64_t target_generation(const std::string& target) const;
  void launch(const std::shared_ptr<Collector>& c, const std::string& target, Duration deadline);
  void finish(const std::string& key, std::uint64_t id, Result result);
  void expire(const std::string& key, std::uint64_t id);
  // Queued jobs past their deadline are not probed once the pool is starved
  // (every worker stuck, no spare allowed); said once per job.
  void report_starved();
  void arm_deadline(const std::string& key, Flight& f, double after_seconds);
  // A job for `target` (any collector) is past its deadline and still running.
  bool target_stuck(const std::string& target) const;
  void not_started(Collector& collector, const std::string& target, const std::string& why);
  void record(Collector& collector, const std::string& target, double seconds, Result result,
              bool was_late);

  boost::asio::io_context& io_;
  WorkerPool& pool_;
  State& state_;
  std::shared_ptr<const Clock> clock_;
  std::function<void()> on_change_;
  std::shared_ptr<Inbox> inbox_;
  ClockTimers clock_timers_;
  std::vector<std::shared_ptr<Collector>> collectors_;
  std::vector<ClockTimers::Id> timers_;  // one per collector, while started
  // Per collector: when (monotonic) its timer's wait began, and for how long.
  std::vector<double> armed_at_;
  std::vector<double> armed_for_;
  // key -> target_generation() when it was last launched (its schedule's
  // identity across reloads).
  std::map<std::string, std::uint64_t> launched_for_;
  std::map<std::string, Flight> flights_;                           // key: collector "/" target
  std::map<std::string, bool> reported_;                            // key -> has reported once
  std::map<std::string, std::shared_ptr<std::atomic<int>>> stuck_;  // target -> its stuck jobs
  std::uint64_t next_id_ = 1;
};

}  // namespace ckptmon
