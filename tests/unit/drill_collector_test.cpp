// The scheduled restore drills (collectors/drill_collector.hpp): the daily
// window, which job is due, what counts as saving, and the collector's own
// sequence on a real tier (stored drills loaded first, one drill, not again
// until `every` has passed), with an in-memory drill ledger (the SQLite one
// is store_test's).

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <mutex>

#include "collectors/drill_collector.hpp"
#include "collectors/tree_scan.hpp"
#include "tests/unit/temp_dir.hpp"
#include "util/clock.hpp"

namespace ckptmon {
namespace {

constexpr double kMidnight = 1'700'006'400.0;  // 2023-11-15T00:00:00Z, a whole day
constexpr double kHour = 3600;

TEST(DrillWindow, AnyTimeOfDayWithoutAWindow) {
  RestoreDrillPolicy p;
  p.deadline_seconds = 600;
  EXPECT_EQ(p.window_left_seconds(kMidnight + 13 * kHour), 600);
}

TEST(DrillWindow, ADailyWindowInUtcGivesWhatIsLeftOfIt) {
  RestoreDrillPolicy p;
  p.window_start_minute = 2 * 60;  // 02:00-05:00
  p.window_end_minute = 5 * 60;
  p.deadline_seconds = 10 * kHour;
  EXPECT_EQ(p.window_left_seconds(kMidnight + 1 * kHour + 3599), 0);  // 01:59:59
  EXPECT_EQ(p.window_left_seconds(kMidnight + 2 * kHour), 3 * kHour);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 4 * kHour + 1800), 1800);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 5 * kHour), 0);  // the end is not in it
  EXPECT_EQ(p.window_left_seconds(kMidnight + 86400 + 3 * kHour), 2 * kHour);  // the next day
  p.deadline_seconds = 600;  // the deadline caps what is left
  EXPECT_EQ(p.window_left_seconds(kMidnight + 2 * kHour), 600);
}

TEST(DrillWindow, AWindowPastMidnightWraps) {
  RestoreDrillPolicy p;
  p.window_start_minute = 22 * 60;  // 22:00-02:00
  p.window_end_minute = 2 * 60;
  p.deadline_seconds = 10 * kHour;
  EXPECT_EQ(p.window_left_seconds(kMidnight + 23 * kHour), 3 * kHour);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 1 * kHour), 1 * kHour);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 2 * kHour), 0);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 12 * kHour), 0);
  EXPECT_EQ(p.window_left_seconds(kMidnight + 21 * kHour + 3599), 0);
}

Checkpoint ckpt(const std::string& job, std::int64_t step, CkptState state) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = job;
  c.step = step;
  c.path = job + "/save_" + std::to_string(step);
  c.state = state;
  return c;
}

TierConfig drill_tier(double every) {
  TierConfig t;
  t.name = "rapid";
  t.path = "/nonexistent";
  t.policy.restore_drill.every_seconds = every;
  return t;
}

DrillRecord drilled(const std::string& job, double at) {
  DrillRecord r;
  r.tier = "rapid";
  r.job = job;
  r.finished_at = at;
  return r;
}

TEST(DrillPlan, NeverDrilledFirstThenTheOldestDue) {
  const double now = kMidnight + 12 * kHour;
  TierCatalog cat;
  cat.scanned = true;
  for (const char* j : {"alpha", "beta", "gamma"}) {
    cat.checkpoints.push_back(ckpt(j, 100, CkptState::kCommitted));
  }
  DrillState drills;
  drills.last[{"rapid", "alpha"}] = drilled("alpha", now - 3 * kHour);
  drills.last[{"rapid", "beta"}] = drilled("beta", now - 2 * kHour);
  const TierConfig tier = drill_tier(kHour);
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, &drills, now).job, "gamma");  // never drilled
  drills.last[{"rapid", "gamma"}] = drilled("gamma", now - 60);
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, &drills, now).job, "alpha");  // drilled longest ago
  drills.last[{"rapid", "alpha"}] = drilled("alpha", now - 60);
  drills.last[{"rapid", "beta"}] = drilled("beta", now - kHour + 1);
  const DrillPlan none = plan_drill(tier, &cat, nullptr, &drills, now);
  EXPECT_FALSE(none.job);
  EXPECT_EQ(none.why_none, "no job is due");
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, &drills, now + 1).job, "beta");  // exactly `every`
  // A refusal is an attempt: due again `every` after it.
  drills.refused_at[{"rapid", "beta"}] = now;
  EXPECT_FALSE(plan_drill(tier, &cat, nullptr, &drills, now + 1).job);
  drills.last[{"rapid", "alpha"}] = drilled("alpha", now + kHour);  // the others: just drilled
  drills.last[{"rapid", "gamma"}] = drilled("gamma", now + kHour);
  EXPECT_FALSE(plan_drill(tier, &cat, nullptr, &drills, now + kHour - 1).job);
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, &drills, now + kHour).job, "beta");
}

TEST(DrillPlan, OnlyCommittedCheckpointsAndAWalkedTier) {
  const double now = kMidnight;
  TierCatalog cat;
  cat.checkpoints.push_back(ckpt("alpha", 100, CkptState::kPartial));
  const TierConfig tier = drill_tier(kHour);
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, nullptr, now).why_none,
            "the tier has not been walked yet");
  cat.scanned = true;
  EXPECT_EQ(plan_drill(tier, &cat, nullptr, nullptr, now).why_none,
            "no committed checkpoint on the tier");
  EXPECT_EQ(plan_drill(drill_tier(0), &cat, nullptr, nullptr, now).why_none, "drills are off");
  TierConfig windowed = drill_tier(kHour);
  windowed.policy.restore_drill.window_start_minute = 60;
  windowed.policy.restore_drill.window_end_minute = 120;
  cat.checkpoints.push_back(ckpt("alpha", 200, CkptState::kCommitted));
  EXPECT_EQ(plan_drill(windowed, &cat, nullptr, nullptr, now).why_none, "outside the drill window");
  const DrillPlan in = plan_drill(windowed, &cat, nullptr, nullptr, now + 1.5 * kHour);
  EXPECT_EQ(in.job, "alpha");
  EXPECT_EQ(in.budget_seconds, 1800);  // the window's last half hour
}

TEST(DrillPlan, ASavingJobWaitsAndTheNextDueOneGoes) {
  const double now = kMidnight + 12 * kHour;
  TierCatalog cat;
  cat.scanned = true;
  cat.checkpoints.push_back(ckpt("alpha", 100, CkptState::kCommitted));
  cat.checkpoints.push_back(ckpt("beta", 100, CkptState::kCommitted));
  cat.checkpoints.push_back(ckpt("alpha", 200, CkptState::kInProgress));  // the walk sees a save
  const TierConfig tier = drill_tier(kHour);
  DrillPlan p = plan_drill(tier, &cat, nullptr, nullptr, now);
  EXPECT_EQ(p.job, "beta");
  EXPECT_EQ(p.saving, std::vector<std::string>{"alpha"});

  // An event log says beta started a save on another tier, not committed yet.
  EventCatalog events;
  EventStep s;
  s.start_ts = now - 600;
  events.steps[StepKey{"staging", "beta", 300}] = s;
  p = plan_drill(tier, &cat, &events, nullptr, now);
  EXPECT_FALSE(p.job);
  EXPECT_EQ(p.why_none, "every due job is saving");
  EXPECT_EQ(p.saving, (std::vector<std::string>{"alpha", "beta"}));
  // Committed, failed, or older than partial_after (30 min): not saving.
  for (auto edit :
       {+[](EventStep& e) { e.committed = true; }, +[](EventStep& e) { e.failed = true; },
        +[](EventStep& e) { e.start_ts -= 1800; }}) {
    EventStep t = s;
    edit(t);
    events.steps[StepKey{"staging", "beta", 300}] = t;
    EXPECT_FALSE(saving_jobs(&cat, &events, now, 1800).contains("beta"));
  }
}

// The drill ledger in memory: what the collector stored, what it loads.
class MemoryLedger final : public DrillLedger {
 public:
  std::vector<DrillRecord> load() override {
    const std::lock_guard lock(mu);
    ++loads;
    return stored;
  }
  void record(const DrillRecord& r) override {
    const std::lock_guard lock(mu);
    stored.push_back(r);
  }
  std::vector<DrillRecord> since(double, std::size_t) override { return stored; }
  std::mutex mu;
  std::vector<DrillRecord> stored;
  int loads = 0;
};

TEST(DrillCollector, LoadsTheStoredDrillsThenDrillsEachDueJobOnce) {
  testing::TempDir dir;
  // Two jobs, a generic layout: shards and a COMMITTED marker.
  dir.write("tier/alpha/save_100/rank0.bin", 4096);
  dir.write("tier/alpha/save_100/rank1.bin", 5000);
  dir.write("tier/alpha/save_100/COMMITTED", 0);
  dir.write("tier/beta/save_7/rank0.bin", 100);
  dir.write("tier/beta/save_7/COMMITTED", 0);
  auto clock = std::make_shared<FakeClock>(kMidnight + 12 * kHour);
  auto cfg = std::make_shared<Config>();
  TierConfig tier = drill_tier(kHour);
  tier.path = (dir.path() / "tier").string();
  tier.jobs.depth = 1;
  tier.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
  tier.policy.restore_drill.rate_bytes_per_second = 0;  // no pacing on a fake clock
  tier.policy.storage_path.recovery_time_objective_seconds = 600;
  cfg->tiers.push_back(tier);
  State state;
  state.apply_config(cfg);
  {
    TierScanner scanner(tier, false);
    ScanOutcome o = scanner.scan(clock->now());
    ASSERT_TRUE(o.root_ok) << o.error;
    TierCatalog cat;
    merge_scan(cat, std::move(o), clock->now());
    state.catalogs["rapid"] = CopyOnWrite<TierCatalog>(std::move(cat));
  }
  auto ledger = std::make_shared<MemoryLedger>();
  ledger->stored.push_back(drilled("beta", clock->now() - 600));  // from before a restart
  DrillCollector c(clock, ledger);
  c.configure(*cfg);
  ASSERT_EQ(c.targets(), std::vector<std::string>{"rapid"});
  EXPECT_EQ(std::chrono::duration<double>(c.deadline()).count(), 3600 + 60);
  auto run = [&] {
    Job job = c.prepare("rapid", state);
    Update u = job();
    if (u) u(state);
  };
  run();  // the stored drills, nothing drilled
  ASSERT_TRUE(state.drills);
  EXPECT_TRUE(state.drills->loaded);
  EXPECT_EQ(ledger->loads, 1);
  EXPECT_EQ(state.drills->last.size(), 1u);
  EXPECT_TRUE(ledger->stored.size() == 1);

  run();  // alpha: never drilled; beta was, 10 minutes ago
  const auto& last = state.drills->last;
  ASSERT_TRUE(last.contains({"rapid", "alpha"}));
  const DrillRecord& a = last.at({"rapid", "alpha"});
  EXPECT_EQ(a.step, 100);
  EXPECT_EQ(a.path, "alpha/save_100");
  EXPECT_EQ(a.failure, "");
  EXPECT_EQ(a.bytes, 4096u + 5000u);  // every file, the empty marker included
  EXPECT_EQ(a.files, 3u);
  EXPECT_EQ(a.objective_seconds, 600);
  EXPECT_TRUE(a.cold);
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a.finished_at, clock->now());
  ASSERT_EQ(ledger->stored.size(), 2u);
  EXPECT_EQ(ledger->stored.back().job, "alpha");
  EXPECT_EQ(state.drills->tiers.at("rapid").ok, 1u);

  run();  // nothing due
  EXPECT_EQ(ledger->stored.size(), 2u);
  clock->advance(3000);  // beta's hour is up, alpha's not
  run();
  ASSERT_EQ(ledger->stored.size(), 3u);
  EXPECT_EQ(ledger->stored.back().job, "beta");
  EXPECT_EQ(ledger->stored.back().bytes, 100u);
  EXPECT_EQ(state.drills->tiers.at("rapid").ok, 2u);

  // A shard that vanished since the walk: the drill fails naming it.
  std::filesystem::remove(dir.path() / "tier/alpha/save_100/rank1.bin");
  std::filesystem::remove(dir.path() / "tier/alpha/save_100/rank0.bin");
  clock->advance(kHour);
  run();
  // The catalog still says save_100 is committed; the drill's own walk finds
  // it is not: a failed drill (a restore would fail), not a refusal.
  const DrillRecord& gone = state.drills->last.at({"rapid", "alpha"});
  EXPECT_FALSE(gone.ok());
  EXPECT_EQ(gone.step, 100);
  EXPECT_EQ(gone.failure.rfind(
                "step 100, committed when the tier was walked, is not restorable now: ", 0),
            0u)
      << gone.failure;
  EXPECT_EQ(state.drills->tiers.at("rapid").failed, 1u);
  EXPECT_EQ(state.drills->tiers.at("rapid").refused, 0u);
  EXPECT_EQ(ledger->stored.back().failure, gone.failure);
}

}  // namespace
}  // namespace ckptmon
