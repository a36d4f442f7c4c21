#include "serve/collector_runner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>

#include "log_capture.hpp"
#include "loop_helpers.hpp"

namespace ckptmon {
namespace {

using namespace std::chrono_literals;

using testing::Gate;

// Runs `io` on this thread until `pred` holds. The cap only turns a bug into
// a failure instead of a hang; nothing is asserted about how long it took.
template <typename Pred>
bool run_loop_until(boost::asio::io_context& io, Pred pred) {
  const auto cap = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > cap) return false;
    io.run_one_for(10ms);
  }
  return true;
}

// A collector whose jobs the test scripts target by target. Loop thread only,
// like the real ones.
class FakeCollector final : public Collector {
 public:
  std::string_view name() const override { return name_; }
  void configure(const Config&) override {}
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return deadline_; }
  std::vector<std::string> targets() const override { return targets_; }
  Job prepare(const std::string& target, const State& /*state*/) override {
    ++prepared[target];
    auto it = jobs.find(target);
    if (it == jobs.end()) throw std::runtime_error("no job scripted for " + target);
    return it->second;
  }
  void on_deadline(const std::string& target, State&) override { deadlines.push_back(target); }
  void on_failure(const std::string& target, const std::string& error, State&) override {
    failures.emplace_back(target, error);
  }
  void on_not_started(const std::string& target, const std::string& why, State&) override {
    not_started.emplace_back(target, why);
  }

  std::string name_ = "fake";
  Duration interval_ = std::chrono::hours(1);
  std::vector<std::string> targets_;
  Duration deadline_ = std::chrono::seconds(10);
  std::map<std::string, Job> jobs;
  std::map<std::string, int> prepared;
  std::vector<std::string> deadlines;
  std::vector<std::pair<std::string, std::string>> failures;
  std::vector<std::pair<std::string, std::string>> not_started;
};

// An Update that writes `value` into a marker the test reads back.
Update mark(std::string target, std::string value) {
  return [target = std::move(target), value = std::move(value)](State& s) {
    s.tiers[target].down_reason = value;
  };
}

class CollectorRunnerTest : public ::testing::Test {
 protected:
  CollectorRunnerTest()
      : guard_(boost::asio::make_work_guard(io_)),
        runner_(
            std::make_unique<CollectorRunner>(io_, pool_, state_, clock_, [this] { ++changes_; })) {
    fake_ = std::make_shared<FakeCollector>();
    runner_->set_collectors({fake_});
  }
  ~CollectorRunnerTest() override {
    runner_.reset();
    guard_.reset();
    io_.poll();
  }

  template <typename Pred>
  bool run_until(Pred pred) {
    return run_loop_until(io_, pred);
  }

  const CollectorStatus& status() { return state_.collectors["fake"]; }
  std::string marker(const std::string& t) {
    auto it = state_.tiers.find(t);
    return it == state_.tiers.end() ? std::string("<none>") : it->second.down_reason;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  WorkerPool pool_{4};
  State state_;
  int changes_ = 0;
  // Deadlines and intervals follow it: the tests move it, nothing sleeps.
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::unique_ptr<CollectorRunner> runner_;
  std::shared_ptr<FakeCollector> fake_;
};

TEST_F(CollectorRunnerTest, AppliesAResultOnTheLoopThread) {
  fake_->targets_ = {"a"};
  std::thread::id job_thread;
  std::thread::id applied_on;
  fake_->jobs["a"] = [&job_thread, &applied_on]() -> Update {
    job_thread = std::this_thread::get_id();
    return [&applied_on](State& s) {
      applied_on = std::this_thread::get_id();
      s.tiers["a"].down_reason = "applied";
    };
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  EXPECT_EQ(runner_->in_flight(), 1u);
  EXPECT_TRUE(status().targets.at("a").in_flight);
  EXPECT_FALSE(runner_->all_reported());
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(marker("a"), "applied");
  EXPECT_EQ(applied_on, std::this_thread::get_id());
  EXPECT_NE(job_thread, std::this_thread::get_id());
  EXPECT_TRUE(status().targets.at("a").success);
  EXPECT_FALSE(status().targets.at("a").in_flight);
  EXPECT_TRUE(status().success());
  EXPECT_EQ(status().errors, 0u);
  EXPECT_EQ(status().timeouts, 0u);
  EXPECT_TRUE(runner_->all_reported());
  EXPECT_GE(changes_, 1);
}

TEST_F(CollectorRunnerTest, SingleFlightPerTarget) {
  fake_->targets_ = {"a"};
  auto gate = std::make_shared<Gate>();
  auto started = std::make_shared<std::atomic<int>>(0);
  fake_->jobs["a"] = [gate, started]() -> Update {
    ++*started;
    gate->wait();
    return mark("a", "done");
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(gate->wait_entered(1));
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  EXPECT_EQ(status().skipped, 2u);
  EXPECT_EQ(fake_->prepared["a"], 1);
  EXPECT_EQ(runner_->in_flight(), 1u);

  gate->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(started->load(), 1);
  EXPECT_EQ(marker("a"), "done");

  // Once the first job is back, the next cycle starts a new one.
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  EXPECT_EQ(fake_->prepared["a"], 2);
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(started->load(), 2);
  EXPECT_EQ(status().skipped, 2u);
}

TEST_F(CollectorRunnerTest, OtherTargetsAreNotHeldUpByAStuckOne) {
  fake_->targets_ = {"slow", "fast"};
  auto gate = std::make_shared<Gate>();
  fake_->jobs["slow"] = [gate]() -> Update {
    gate->wait();
    return mark("slow", "done");
  };
  fake_->jobs["fast"] = []() -> Update { return mark("fast", "done"); };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return marker("fast") == "done"; }));
  EXPECT_EQ(runner_->in_flight(), 1u);
  EXPECT_TRUE(status().targets.at("slow").in_flight);
  gate->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(marker("slow"), "done");
}

TEST_F(CollectorRunnerTest, DeadlinePassesThenTheLateResultIsApplied) {
  fake_->targets_ = {"a"};
  auto gate = std::make_shared<Gate>();
  fake_->jobs["a"] = [gate]() -> Update {
    gate->wait();
    return mark("a", "late result");
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(20ms);
  runner_->run_all();
  // The deadline counts from when a worker took the job, on the clock.
  ASSERT_TRUE(gate->wait_entered(1));
  clock_->advance(0.019);
  io_.poll();
  EXPECT_EQ(status().timeouts, 0u);
  EXPECT_TRUE(fake_->deadlines.empty());
  clock_->advance(0.001);
  ASSERT_TRUE(run_until([&] { return status().timeouts == 1; }));
  EXPECT_EQ(fake_->deadlines, std::vector<std::string>{"a"});
  EXPECT_FALSE(status().targets.at("a").success);
  EXPECT_FALSE(status().success());
  // 19 ms + 1 ms of clock time since the worker took it.
  EXPECT_NEAR(status().targets.at("a").duration_seconds, 0.020, 1e-6);
  EXPECT_TRUE(runner_->all_reported());  // a deadline counts as a report
  EXPECT_EQ(marker("a"), "<none>");      // nothing applied yet
  EXPECT_EQ(runner_->in_flight(), 1u);   // still waited for in the background

  // Still blocked at the next cycle: skipped, no second job, no second deadline.
  fake_->deadline_ = std::chrono::duration_cast<Duration>(20ms);
  runner_->run_all();
  EXPECT_EQ(status().skipped, 1u);
  EXPECT_EQ(fake_->prepared["a"], 1);

  clock_->advance(5);  // returns 5 s later: its duration is 5.02 s
  gate->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(marker("a"), "late result");
  EXPECT_NEAR(status().targets.at("a").duration_seconds, 5.020, 1e-6);
  EXPECT_TRUE(status().targets.at("a").success);
  EXPECT_TRUE(status().success());
  EXPECT_EQ(status().timeouts, 1u);
  EXPECT_EQ(status().errors, 0u);
  EXPECT_EQ(fake_->deadlines.size(), 1u);
  EXPECT_TRUE(fake_->failures.empty());
}

TEST_F(CollectorRunnerTest, AThrowingJobIsCountedAndReported) {
  fake_->targets_ = {"a", "b"};
  fake_->jobs["a"] = []() -> Update { throw std::runtime_error("statfs exploded"); };
  fake_->jobs["b"] = []() -> Update { throw 42; };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(status().errors, 2u);
  EXPECT_FALSE(status().targets.at("a").success);
  EXPECT_FALSE(status().targets.at("b").success);
  EXPECT_FALSE(status().success());
  std::map<std::string, std::string> failures(fake_->failures.begin(), fake_->failures.end());
  EXPECT_EQ(failures["a"], "statfs exploded");
  EXPECT_EQ(failures["b"], "unknown exception");
  EXPECT_TRUE(fake_->deadlines.empty());
}

TEST_F(CollectorRunnerTest, AnUpdateThatThrowsWhenAppliedIsAFailure) {
  fake_->targets_ = {"a"};
  fake_->jobs["a"] = []() -> Update {
    return [](State&) { throw std::runtime_error("bad figures"); };
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(status().errors, 1u);
  ASSERT_EQ(fake_->failures.size(), 1u);
  EXPECT_EQ(fake_->failures[0].second, "applying result failed: bad figures");
}

TEST_F(CollectorRunnerTest, PrepareThatThrowsIsAFailureWithoutAFlight) {
  fake_->targets_ = {"unscripted"};
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  EXPECT_EQ(runner_->in_flight(), 0u);
  EXPECT_EQ(status().errors, 1u);
  ASSERT_EQ(fake_->failures.size(), 1u);
  EXPECT_EQ(fake_->failures[0].second, "prepare failed: no job scripted for unscripted");
}

TEST_F(CollectorRunnerTest, AJobReturningNoUpdateIsASuccess) {
  fake_->targets_ = {"a"};
  fake_->jobs["a"] = []() -> Update { return nullptr; };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_TRUE(status().targets.at("a").success);
  EXPECT_EQ(status().errors, 0u);
}

TEST_F(CollectorRunnerTest, TargetsRemovedByAReloadDisappearFromTheStatus) {
  fake_->targets_ = {"a", "b", "c"};
  for (const char* t : {"a", "b", "c"}) {
    fake_->jobs[t] = []() -> Update { return nullptr; };
  }
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(status().targets.size(), 3u);

  fake_->targets_ = {"b"};
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  ASSERT_EQ(status().targets.size(), 1u);
  EXPECT_TRUE(status().targets.contains("b"));
}

TEST_F(CollectorRunnerTest, AFailedTargetDropsOutOfSuccessOnceRemoved) {
  fake_->targets_ = {"good", "bad"};
  fake_->jobs["good"] = []() -> Update { return nullptr; };
  fake_->jobs["bad"] = []() -> Update { throw std::runtime_error("x"); };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_FALSE(status().success());
  fake_->targets_ = {"good"};
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_TRUE(status().success());
}

TEST_F(CollectorRunnerTest, ResultsAfterTheRunnerIsGoneAreDropped) {
  fake_->targets_ = {"a"};
  auto gate = std::make_shared<Gate>();
  auto token = std::make_shared<int>(0);
  fake_->jobs["a"] = [gate, token]() -> Update {
    gate->wait();
    return [token](State& s) { s.tiers["a"].down_reason = "must not be applied"; };
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(1ms);
  runner_->run_all();
  ASSERT_TRUE(gate->wait_entered(1));
  // Past the deadline before the loop runs again: a deadline timer that
  // survived the runner would fire at the first poll below (the clock's
  // move has queued a wake-up on the loop already).
  clock_->advance(0.005);
  runner_.reset();
  const int changes_before = changes_;
  gate->release();
  // The job's copy and the Update it returned both hold `token`; once the
  // worker has dropped them, only the collector's script and this test do.
  const long holders = 2;  // fake_->jobs["a"] and this test
  const auto cap = std::chrono::steady_clock::now() + 10s;
  while (token.use_count() > holders && std::chrono::steady_clock::now() < cap) {
    io_.poll();
    std::this_thread::yield();
  }
  EXPECT_EQ(token.use_count(), holders);
  io_.poll();
  EXPECT_EQ(marker("a"), "<none>");
  EXPECT_EQ(changes_, changes_before);
  EXPECT_TRUE(fake_->deadlines.empty());  // the deadline timer died with the runner
}

TEST_F(CollectorRunnerTest, AResultQueuedOnTheLoopBeforeDestructionIsDropped) {
  fake_->targets_ = {"a"};
  auto token = std::make_shared<int>(0);
  fake_->jobs["a"] = [token]() -> Update {
    return [token](State& s) { s.tiers["a"].down_reason = "must not be applied"; };
  };
  fake_->deadline_ = std::chrono::duration_cast<Duration>(10s);
  runner_->run_all();
  // Wait (without running the loop) until the worker has finished and posted
  // the result to the loop.
  const auto cap = std::chrono::steady_clock::now() + 10s;
  while ((pool_.busy() != 0 || pool_.queued() != 0) && std::chrono::steady_clock::now() < cap) {
    std::this_thread::yield();
  }
  ASSERT_EQ(pool_.busy(), 0u);
  EXPECT_GT(token.use_count(), 2);  // the posted result still holds it
  runner_.reset();
  const int changes_before = changes_;
  io_.poll();
  EXPECT_EQ(marker("a"), "<none>");
  EXPECT_EQ(changes_, changes_before);
  EXPECT_EQ(token.use_count(), 2);  // the dropped result released it
}

TEST_F(CollectorRunnerTest, PeriodicRunsFollowTheClock) {
  // FakeCollector's interval is one hour of clock time, however long it takes.
  fake_->targets_ = {"a"};
  fake_->jobs["a"] = []() -> Update { return nullptr; };
  // Moves the clock, lets the loop act on it (a due run is prepared there and
  // then) and waits for the job; returns the runs so far.
  auto runs_after = [&](double seconds) {
    clock_->advance(seconds);
    io_.poll();
    EXPECT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
    return fake_->prepared["a"];
  };
  runner_->start();
  EXPECT_EQ(runs_after(0), 1);  // at start
  EXPECT_EQ(runs_after(3599), 1);
  EXPECT_EQ(runs_after(1), 2);
  clock_->jump_wall(7200);  // a wall clock stepped forward is not time passing
  EXPECT_EQ(runs_after(0), 2);
  EXPECT_EQ(runs_after(3600), 3);
  runner_->stop();  // no more runs however far the clock moves
  EXPECT_EQ(runs_after(36000), 3);
}

// A reload storm (Daemon::finish_reload reschedules after each): a reload
// that changes nothing runs nothing and keeps the schedule; a new target
// and a tier the reload re-pointed run at once; a new interval counts from
// the same start.
TEST_F(CollectorRunnerTest, ReloadsKeepTheScheduleAndRunOnlyNewOrRepointedTargets) {
  auto config = [](std::uint64_t generation_of_a) {
    auto cfg = std::make_shared<Config>();
    for (const char* name : {"a", "b"}) {
      TierConfig t;
      t.name = name;
      t.generation = name == std::string("a") ? generation_of_a : 1;
      cfg->tiers.push_back(t);
    }
    return std::shared_ptr<const Config>(std::move(cfg));
  };
  state_.config = config(1);
  fake_->targets_ = {"a"};
  fake_->jobs["a"] = []() -> Update { return nullptr; };
  fake_->jobs["b"] = []() -> Update { return nullptr; };
  auto settle = [&] {
    io_.poll();
    EXPECT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  };
  auto advance = [&](double seconds) {
    clock_->advance(seconds);
    settle();
  };
  runner_->start();
  settle();
  EXPECT_EQ(fake_->prepared["a"], 1);
  for (int i = 0; i < 50; ++i) {  // a reload every minute for 50 minutes
    advance(60);
    runner_->reschedule();
    settle();
  }
  EXPECT_EQ(fake_->prepared["a"], 1) << "a reload that changed nothing ran the target again";
  fake_->targets_ = {"a", "b"};  // a tier added by a reload: at once, a keeps its schedule
  runner_->reschedule();
  settle();
  EXPECT_EQ(fake_->prepared["a"], 1);
  EXPECT_EQ(fake_->prepared["b"], 1);
  advance(599);
  EXPECT_EQ(fake_->prepared["a"], 1);
  advance(1);  // 3600 s: the schedule of the start
  EXPECT_EQ(fake_->prepared["a"], 2);
  EXPECT_EQ(fake_->prepared["b"], 2);

  state_.config = config(2);  // a re-pointed: at once, b not
  runner_->reschedule();
  settle();
  EXPECT_EQ(fake_->prepared["a"], 3);
  EXPECT_EQ(fake_->prepared["b"], 2);

  // At 4200 s the interval goes to 30 minutes: due at 3600 + 1800 s.
  advance(600);
  fake_->interval_ = std::chrono::minutes(30);
  runner_->reschedule();
  settle();
  advance(1199);
  EXPECT_EQ(fake_->prepared["b"], 2);
  advance(1);
  EXPECT_EQ(fake_->prepared["b"], 3);
  EXPECT_EQ(fake_->prepared["a"], 4);
  advance(1800);  // then every 30 minutes
  EXPECT_EQ(fake_->prepared["b"], 4);
}

// A small pool shared by several collectors, as in the daemon, for the
// starvation cases: tier "a" hangs (its jobs wait on a gate opened only at
// teardown), tier "b" is healthy.
class StarvationTest : public ::testing::Test {
 protected:
  StarvationTest() : guard_(boost::asio::make_work_guard(io_)) {}
  ~StarvationTest() override {
    gate_->release();  // the hung mount answers at last, so no thread is left behind
    runner_.reset();
    guard_.reset();
    io_.poll();
  }

  void start(std::size_t threads, long spares, const std::vector<std::string>& names) {
    pool_ = std::make_unique<WorkerPool>(threads, spares);
    runner_ = std::make_unique<CollectorRunner>(io_, *pool_, state_, clock_, [] {});
    std::vector<std::shared_ptr<Collector>> all;
    for (const auto& n : names) {
      auto c = std::make_shared<FakeCollector>();
      c->name_ = n;
      c->targets_ = {"a", "b"};
      c->deadline_ = std::chrono::duration_cast<Duration>(20ms);
      auto gate = gate_;
      c->jobs["a"] = [gate]() -> Update {
        gate->wait();
        return nullptr;
      };
      auto probed = probed_;
      c->jobs["b"] = [probed, n]() -> Update {
        ++*probed;
        return mark("b", "probed by " + n);
      };
      fakes_[n] = c;
      all.push_back(c);
    }
    runner_->set_collectors(all);
  }

  template <typename Pred>
  bool run_until(Pred pred) {
    return run_loop_until(io_, pred);
  }

  // Runs "stats" once: its job for tier a hangs on the gate until it passes
  // its deadline (stuck); b's probe comes back first, before the clock moves,
  // or it could pass its deadline too (timeouts 2, never 1).
  void stick_stats_on_a() {
    const int probed = probed_->load();
    const auto timeouts = state_.collectors["stats"].timeouts;
    const int entered = gate_->entered_count();
    ASSERT_TRUE(runner_->run("stats"));
    ASSERT_TRUE(gate_->wait_entered(entered + 1));
    ASSERT_TRUE(run_until([&] {
      auto it = state_.collectors["stats"].targets.find("b");
      return probed_->load() == probed + 1 && it != state_.collectors["stats"].targets.end() &&
             !it->second.in_flight;
    }));
    clock_->advance(0.020);
    ASSERT_TRUE(run_until([&] { return state_.collectors["stats"].timeouts == timeouts + 1; }));
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::shared_ptr<std::atomic<int>> probed_ = std::make_shared<std::atomic<int>>(0);
  // The 20 ms deadlines pass when a test moves it past them, never on their own.
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  State state_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<CollectorRunner> runner_;
  std::map<std::string, std::shared_ptr<FakeCollector>> fakes_;
};

TEST_F(StarvationTest, AHungTargetDoesNotStarveAHealthyOneAcrossIntervals) {
  // Two workers, two collectors: tier a's two stuck jobs alone would hold
  // both workers, and tier b would never be probed.
  start(2, -1, {"stats", "scan"});
  for (int cycle = 1; cycle <= 3; ++cycle) {
    runner_->run_all();
    if (cycle == 1) {
      // Both workers hang on tier a; scan's b waits behind them until the
      // deadlines pass and the pool adds spares for the stuck jobs.
      ASSERT_TRUE(gate_->wait_entered(2));
      EXPECT_EQ(probed_->load(), 1);  // stats' b ran between the two
      clock_->advance(0.020);
    }
    ASSERT_TRUE(run_until([&] { return probed_->load() == 2 * cycle; })) << "cycle " << cycle;
    ASSERT_TRUE(run_until([&] {
      return !state_.collectors["stats"].targets["b"].in_flight &&
             !state_.collectors["scan"].targets["b"].in_flight;
    }));
    for (const char* n : {"stats", "scan"}) {
      EXPECT_TRUE(state_.collectors[n].targets["b"].success) << n << " cycle " << cycle;
    }
  }
  ASSERT_TRUE(run_until([&] { return pool_->stuck() == 2; }));
  for (const char* n : {"stats", "scan"}) {
    // Only the hung target was reported past its deadline, once per job.
    EXPECT_EQ(fakes_[n]->deadlines, std::vector<std::string>{"a"}) << n;
    EXPECT_EQ(state_.collectors[n].timeouts, 1u) << n;
    EXPECT_EQ(fakes_[n]->prepared["a"], 1) << n;  // later cycles skipped it
    EXPECT_EQ(fakes_[n]->prepared["b"], 3) << n;
  }
  // Two stuck workers, two spares for them: within the bound (2 + 2).
  EXPECT_LE(pool_->threads(), 4u);
  EXPECT_EQ(gate_->entered_count(), 2);
}

TEST_F(StarvationTest, AJobThatNeverStartedIsNotProbedNotTimedOut) {
  // One worker and no spare: b's job waits in the queue behind a's.
  start(1, 0, {"stats"});
  auto& stats = *fakes_["stats"];
  runner_->run_all();
  ASSERT_TRUE(gate_->wait_entered(1));
  clock_->advance(0.020);
  ASSERT_TRUE(run_until([&] {
    return state_.collectors["stats"].timeouts == 1 && state_.collectors["stats"].not_started == 1;
  }));
  const CollectorStatus& st = state_.collectors["stats"];
  EXPECT_EQ(stats.deadlines, std::vector<std::string>{"a"});  // b is not "down"/"hung"
  EXPECT_FALSE(st.targets.at("b").success);
  EXPECT_TRUE(st.targets.at("b").in_flight);  // still queued, keeps its place
  EXPECT_EQ(probed_->load(), 0);
  EXPECT_TRUE(runner_->all_reported());  // "not probed" is a report
  EXPECT_EQ(pool_->threads(), 1u);

  // Once the worker is free, b runs and is up; still never a deadline for b.
  gate_->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_EQ(probed_->load(), 1);
  EXPECT_TRUE(state_.collectors["stats"].targets.at("b").success);
  EXPECT_EQ(stats.deadlines, std::vector<std::string>{"a"});
  EXPECT_EQ(state_.collectors["stats"].not_started, 1u);  // said once per job
  EXPECT_EQ(state_.tiers["b"].down_reason, "probed by stats");
}

TEST_F(StarvationTest, AJobQueuedBehindABusyWorkerThatIsNotStuckYetIsOnlyWaiting) {
  // One worker, one spare. Tier a's statfs holds the worker; scan's probe of
  // b, with a shorter deadline, passes it in the queue before a's job passes
  // its own. The worker is busy, not stuck: b is waiting, not "not probed"
  // (the CI race where the healthy tier read down "all workers busy with
  // stuck jobs" before any job was stuck).
  start(1, 1, {"stats", "scan"});
  auto& scan = *fakes_["scan"];
  scan.deadline_ = std::chrono::duration_cast<Duration>(10ms);
  ASSERT_TRUE(runner_->run_target("stats", "a"));
  ASSERT_TRUE(gate_->wait_entered(1));
  ASSERT_TRUE(runner_->run_target("scan", "b"));
  clock_->advance(0.010);
  io_.poll();
  EXPECT_EQ(state_.collectors["scan"].not_started, 0u);
  EXPECT_TRUE(scan.not_started.empty());
  EXPECT_EQ(probed_->load(), 0);

  // a's job passes its deadline: stuck, so a spare starts and probes b.
  clock_->advance(0.010);
  ASSERT_TRUE(run_until([&] { return probed_->load() == 1 && runner_->in_flight() == 1; }));
  EXPECT_EQ(state_.collectors["stats"].timeouts, 1u);
  EXPECT_EQ(state_.collectors["scan"].not_started, 0u);
  EXPECT_TRUE(scan.deadlines.empty());
  EXPECT_TRUE(state_.collectors["scan"].targets.at("b").success);
  EXPECT_EQ(state_.tiers["b"].down_reason, "probed by scan");
}

TEST_F(StarvationTest, NoCollectorStartsAnotherJobForATargetWithAStuckJob) {
  start(4, 0, {"stats", "scan"});
  auto& scan = *fakes_["scan"];
  ASSERT_NO_FATAL_FAILURE(stick_stats_on_a());

  // Tier a has a stuck statfs: the walk of the other collector is not started
  // (it would only tie up another worker); tier b is.
  ASSERT_TRUE(runner_->run("scan"));
  EXPECT_EQ(scan.prepared["a"], 0);
  EXPECT_EQ(scan.prepared["b"], 1);
  EXPECT_EQ(state_.collectors["scan"].not_started, 1u);
  EXPECT_FALSE(state_.collectors["scan"].targets["a"].in_flight);
  EXPECT_TRUE(scan.deadlines.empty());
  runner_->run_target("scan", "a");  // a wake-up for a: refused the same way
  EXPECT_EQ(scan.prepared["a"], 0);
  EXPECT_EQ(state_.collectors["scan"].not_started, 2u);
  ASSERT_TRUE(run_until([&] { return probed_->load() == 2; }));

  // Once the stuck job returns, the cap lifts.
  gate_->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  ASSERT_TRUE(runner_->run("scan"));
  EXPECT_EQ(scan.prepared["a"], 1);
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  EXPECT_TRUE(state_.collectors["scan"].targets["a"].success);
}

TEST_F(StarvationTest, NotProbedIsToldToTheCollectorEachTimeAndLoggedOncePerStretch) {
  testing::LogCapture logged;
  const auto count = [&](const std::string& what) { return logged.count(what); };
  start(4, 0, {"stats", "scan"});
  auto& scan = *fakes_["scan"];
  ASSERT_NO_FATAL_FAILURE(stick_stats_on_a());

  // Five cycles while tier a's statfs stays stuck: scan's a is not probed
  // each time, its collector hears of each, the log says it once.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(runner_->run("scan"));
    ASSERT_TRUE(run_until([&] { return !state_.collectors["scan"].targets["b"].in_flight; }));
  }
  EXPECT_EQ(state_.collectors["scan"].not_started, 5u);
  ASSERT_EQ(scan.not_started.size(), 5u);
  EXPECT_EQ(scan.not_started[0],
            std::make_pair(std::string("a"),
                           std::string("not probed: another job for this target is stuck")));
  EXPECT_TRUE(state_.collectors["scan"].targets["a"].not_probed);
  EXPECT_EQ(count("collector run not started"), 1) << logged.str();
  EXPECT_EQ(count("target probed"), 0) << logged.str();

  // The stuck job returns: the next run probes a, and that is said once.
  gate_->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(runner_->run("scan"));
    ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
  }
  EXPECT_FALSE(state_.collectors["scan"].targets["a"].not_probed);
  EXPECT_EQ(count("collector run started again; target probed"), 1) << logged.str();
  EXPECT_EQ(scan.not_started.size(), 5u);

  // A second stretch is logged again.
  gate_->close();
  ASSERT_NO_FATAL_FAILURE(stick_stats_on_a());
  ASSERT_TRUE(runner_->run("scan"));
  EXPECT_EQ(count("collector run not started"), 2) << logged.str();
  gate_->release();
  ASSERT_TRUE(run_until([&] { return runner_->in_flight() == 0; }));
}

TEST_F(StarvationTest, AQueuedJobForATargetThatGotStuckDoesNotRun) {
  // One worker, one spare: a's statfs hangs; the other collector's job for a
  // was queued before that was known. When the spare takes it, it must not
  // run (it would hang the spare too and starve b).
  start(1, 1, {"stats", "scan"});
  runner_->run_all();
  ASSERT_TRUE(gate_->wait_entered(1));
  clock_->advance(0.020);
  ASSERT_TRUE(run_until([&] { return probed_->load() == 2; }));
  ASSERT_TRUE(run_until([&] { return !state_.collectors["scan"].targets["a"].in_flight; }));
  EXPECT_EQ(gate_->entered_count(), 1);  // only the first job for a reached the mount
  EXPECT_EQ(fakes_["scan"]->prepared["a"], 1);
  // Counted as not started (scan's b may be too, if it waited past its
  // deadline for the spare), never as timed out.
  EXPECT_GE(state_.collectors["scan"].not_started, 1u);
  EXPECT_FALSE(state_.collectors["scan"].targets["a"].success);
  EXPECT_EQ(state_.collectors["scan"].timeouts, 0u);
  EXPECT_TRUE(fakes_["scan"]->deadlines.empty());
  EXPECT_EQ(state_.collectors["stats"].timeouts, 1u);
  EXPECT_LE(pool_->threads(), 2u);
}

}  // namespace
}  // namespace ckptmon
