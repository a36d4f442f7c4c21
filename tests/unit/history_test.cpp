// Tier samples and alert history in the state database: written, read back
// after a reopen, and pruned by the history policy in batches.

#include "store/history.hpp"

#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

using testing::TempDir;

std::unique_ptr<Store> open_store(const TempDir& dir) {
  std::string error;
  auto s = Store::open(dir.str() + "/state", &error);
  EXPECT_TRUE(s) << error;
  return s;
}

void write(Store& store, HistoryWrite w) {
  store.post([w = std::move(w)](sql::Db& db) { write_history(db, w); });
  store.flush();
}

std::vector<double> stored_times(Store& store, const std::string& tier) {
  return store.call<std::vector<double>>([tier](sql::Db& db) {
    std::vector<double> out;
    auto st = db.prepare("SELECT t FROM tier_samples WHERE tier=?1 ORDER BY t");
    st.bind(1, std::string_view(tier));
    while (st.step()) out.push_back(st.real(0));
    return out;
  });
}

std::int64_t count(Store& store, const std::string& sql) {
  return store.call<std::int64_t>([sql](sql::Db& db) {
    auto st = db.prepare(sql);
    return st.step() ? st.int64(0) : -1;
  });
}

TEST(History, ANewDatabaseIsAtSchemaNineWithTheHistoryTables) {
  TempDir dir;
  auto store = open_store(dir);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->call<int>([](sql::Db& db) { return db.user_version(); }), 9);
  for (const char* t : {"tier_samples", "tier_job_samples", "alert_transitions", "alert_active",
                        "drain_peaks", "checkpoint_gpu_costs", "restore_drills"}) {
    EXPECT_EQ(
        count(*store, std::string("SELECT count(*) FROM sqlite_master WHERE name='") + t + "'"), 1)
        << t;
  }
}

TEST(History, ADatabaseAtSchemaOneIsMigratedKeepingItsCatalog) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "state");
  {
    sql::Db db(dir.str() + "/state/ckptmon.db");
    db.exec(
        "CREATE TABLE checkpoints(tier TEXT NOT NULL, path TEXT NOT NULL, x INTEGER, "
        "PRIMARY KEY(tier, path)) WITHOUT ROWID");
    db.exec("INSERT INTO checkpoints VALUES('rapid', 'a/step-1', 1)");
    db.set_user_version(1);
  }
  auto store = open_store(dir);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->call<int>([](sql::Db& db) { return db.user_version(); }), 9);
  EXPECT_EQ(count(*store, "SELECT count(*) FROM checkpoints"), 1);
  EXPECT_EQ(count(*store, "SELECT count(*) FROM drain_peaks"), 0);
  EXPECT_EQ(count(*store, "SELECT count(*) FROM tier_samples"), 0);
}

// Schema 5 to 6: tier_samples gains the four nullable figure columns; the
// rows already there keep their values and read NULL (not known) in them.
TEST(History, ADatabaseAtSchemaFiveGainsTheFigureColumnsAsUnknown) {
  TempDir dir;
  {
    auto store = open_store(dir);
    ASSERT_TRUE(store);
    store->call<int>([](sql::Db& db) {
      for (const char* c : kTierFigureColumns) {
        db.exec(std::string("ALTER TABLE tier_samples DROP COLUMN ") + c);
      }
      db.exec("INSERT INTO tier_samples(tier, t, size_bytes, avail_bytes) VALUES('a', 10, 5, 2)");
      db.set_user_version(5);
      return 0;
    });
  }
  auto store = open_store(dir);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->call<int>([](sql::Db& db) { return db.user_version(); }), 9);
  EXPECT_EQ(count(*store,
                  "SELECT count(*) FROM tier_samples WHERE size_bytes=5 AND "
                  "cleanup_pending_bytes IS NULL AND cleanup_oldest_age_seconds IS NULL "
                  "AND partial_bytes IS NULL AND required_capacity_bytes IS NULL"),
            1);
}

TEST(History, SamplesComeBackAfterReopenWithOrWithoutJobs) {
  TempDir dir;
  {
    auto store = open_store(dir);
    HistoryWrite w;
    w.samples.push_back({"rapid", TierSample{1000, 1e12, 4e11, {{"llama", 1e9}, {"bert", 5e8}}}});
    w.samples.push_back({"rapid", TierSample{1015, 1e12, 3.9e11, {{"llama", 2e9}}}});
    w.samples.push_back({"staging", TierSample{1000, 2e12, 1e12, {}}});
    write(*store, w);
    // The same instant again (a clock that did not move) replaces, jobs too.
    HistoryWrite again;
    again.samples.push_back({"rapid", TierSample{1015, 1e12, 3.8e11, {{"bert", 7e8}}}});
    write(*store, again);
    EXPECT_EQ(store->errors(), 0u);
  }
  auto store = open_store(dir);
  auto all = store->call<std::map<std::string, std::vector<TierSample>>>(
      [](sql::Db& db) { return load_tier_samples(db, 0, true); });
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all["rapid"].size(), 2u);
  EXPECT_EQ(all["rapid"][0].t, 1000);
  EXPECT_EQ(all["rapid"][0].avail_bytes, 4e11);
  EXPECT_EQ(all["rapid"][0].job_stored_bytes,
            (std::map<std::string, double>{{"bert", 5e8}, {"llama", 1e9}}));
  EXPECT_EQ(all["rapid"][1].avail_bytes, 3.8e11);
  EXPECT_EQ(all["rapid"][1].job_stored_bytes, (std::map<std::string, double>{{"bert", 7e8}}));
  EXPECT_EQ(all["staging"][0].size_bytes, 2e12);

  auto recent = store->call<std::map<std::string, std::vector<TierSample>>>(
      [](sql::Db& db) { return load_tier_samples(db, 1010, false); });
  ASSERT_EQ(recent.size(), 1u);
  ASSERT_EQ(recent["rapid"].size(), 1u);
  EXPECT_EQ(recent["rapid"][0].t, 1015);
  EXPECT_TRUE(recent["rapid"][0].job_stored_bytes.empty());
}

TEST(History, DrainPeaksKeepEachHoursHighestBacklogAndWhenItWasFirstSeen) {
  TempDir dir;
  auto store = open_store(dir);
  const DrainKey k{"staging", "rapid", "llama"};
  const double h = 3600.0 * 500000;  // the start of a UTC hour
  HistoryWrite w;
  for (auto [t, b] : std::vector<std::pair<double, double>>{
           {h + 10, 100}, {h + 20, 300}, {h + 30, 300}, {h + 40, 200}, {h + 3605, 50}}) {
    w.drain.push_back({k, DrainSample{t, b, 0, std::numeric_limits<double>::quiet_NaN()}});
  }
  write(*store, w);
  // A later write in the same hour that is lower changes nothing.
  HistoryWrite lower;
  lower.drain.push_back({k, DrainSample{h + 50, 250, 0, 0}});
  write(*store, lower);
  EXPECT_EQ(store->errors(), 0u);
  auto peaks = store->call<std::optional<std::vector<DrainPeak>>>(
      [](sql::Db& db) { return load_drain_peaks(db, 0, 1e12); });
  ASSERT_TRUE(peaks);
  ASSERT_EQ(peaks->size(), 2u);
  EXPECT_EQ((*peaks)[0].key, k);
  EXPECT_EQ((*peaks)[0].hour, h);
  EXPECT_EQ((*peaks)[0].peak_bytes, 300);
  EXPECT_EQ((*peaks)[0].peak_at, h + 20);  // the first time 300 was seen
  EXPECT_EQ((*peaks)[1].hour, h + 3600);
  EXPECT_EQ((*peaks)[1].peak_bytes, 50);
  EXPECT_EQ((*peaks)[1].peak_at, h + 3605);
  // The period bounds the peak's time.
  auto later = store->call<std::optional<std::vector<DrainPeak>>>(
      [h](sql::Db& db) { return load_drain_peaks(db, h + 21, 1e12); });
  ASSERT_TRUE(later);
  EXPECT_EQ(later->size(), 1u);
  EXPECT_EQ(store->call<std::size_t>(
                [h](sql::Db& db) { return delete_drain_peaks_before(db, h + 3600); }),
            1u);
  // A database without the table (an older ckptmon's, read read-only):
  // not known, not "no peaks".
  sql::Db old(dir.str() + "/old.db");
  old.exec("CREATE TABLE tier_samples(x)");
  EXPECT_FALSE(load_drain_peaks(old, 0, 1e12));
}

TEST(History, CheckpointGpuCostsComeBackUnknownStaysUnknownAndARejoinReplaces) {
  TempDir dir;
  auto store = open_store(dir);
  auto cost = [](std::int64_t step, double end, std::optional<double> lost) {
    CheckpointGpuCost c;
    c.tier = "staging";
    c.job = "llama";
    c.step = step;
    c.window.span = {end - 10, end};
    c.lost_gpu_seconds = lost;
    if (!lost) c.unknown_reason = "samples did not arrive";
    return c;
  };
  HistoryWrite w;
  w.gpu_costs = {cost(1, 1000, 16.0), cost(2, 2000, std::nullopt), cost(3, 3000, 0.0)};
  write(*store, w);
  // A restarted daemon joins step 1 again, with a different figure: replaced.
  HistoryWrite again;
  again.gpu_costs = {cost(1, 1000, 12.5)};
  write(*store, again);
  EXPECT_EQ(store->errors(), 0u);
  auto got = store->call<std::optional<std::vector<StoredGpuCost>>>(
      [](sql::Db& db) { return load_gpu_costs(db, 0, 2500); });
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 2u);  // step 3 ended after 2500
  EXPECT_EQ((*got)[0].step, 1);
  EXPECT_EQ((*got)[0].window_start, 990);
  EXPECT_EQ((*got)[0].lost_gpu_seconds, std::optional<double>(12.5));
  EXPECT_EQ((*got)[1].step, 2);
  EXPECT_FALSE((*got)[1].lost_gpu_seconds);  // unknown, not 0
  auto all = store->call<std::optional<std::vector<StoredGpuCost>>>(
      [](sql::Db& db) { return load_gpu_costs(db, 0, 1e12); });
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].lost_gpu_seconds, std::optional<double>(0.0));  // known zero stays 0
  sql::Db old(dir.str() + "/old.db");
  old.exec("CREATE TABLE tier_samples(x)");
  EXPECT_FALSE(load_gpu_costs(old, 0, 1e12));
}

TEST(History, AlertTransitionsAndTheActiveSetSurviveAReopen) {
  TempDir dir;
  const double inf = std::numeric_limits<double>::infinity();
  {
    auto store = open_store(dir);
    HistoryWrite w;
    AlertTransition t;
    t.labels = {"CheckpointBandwidthShortfall", "warning", "rapid", ""};
    t.from = AlertState::kInactive;
    t.to = AlertState::kPending;
    t.at = 1000;
    t.value = inf;
    t.summary = "short";
    t.description = "long";
    w.transitions.push_back(t);
    t.from = AlertState::kPending;
    t.to = AlertState::kFiring;
    t.at = 1600;
    t.value = 0.5;
    w.transitions.push_back(t);
    AlertInstance a;
    a.labels = t.labels;
    a.state = AlertState::kFiring;
    a.active_at = 1000;
    a.fired_at = 1600;
    a.active_for = 600;
    a.for_seconds = 600;
    a.value = std::numeric_limits<double>::quiet_NaN();
    a.summary = "short";
    a.description = "long";
    a.runbook_url = "docs/runbook.md#checkpointbandwidthshortfall";
    w.active = std::vector<AlertInstance>{a};
    write(*store, w);
  }
  auto store = open_store(dir);
  auto active =
      store->call<std::vector<AlertInstance>>([](sql::Db& db) { return load_active_alerts(db); });
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].labels.alertname, "CheckpointBandwidthShortfall");
  EXPECT_EQ(active[0].labels.tier, "rapid");
  EXPECT_EQ(active[0].labels.job, "");
  EXPECT_EQ(active[0].state, AlertState::kFiring);
  EXPECT_EQ(active[0].fired_at, 1600);
  EXPECT_EQ(active[0].active_for, 600);
  EXPECT_TRUE(std::isnan(active[0].value));
  EXPECT_EQ(active[0].runbook_url, "docs/runbook.md#checkpointbandwidthshortfall");

  auto transitions = store->call<std::vector<AlertTransition>>(
      [](sql::Db& db) { return load_alert_transitions(db, 0); });
  ASSERT_EQ(transitions.size(), 2u);
  EXPECT_EQ(transitions[0].to, AlertState::kPending);
  EXPECT_EQ(transitions[0].value, inf);
  EXPECT_EQ(transitions[1].from, AlertState::kPending);
  EXPECT_EQ(transitions[1].to, AlertState::kFiring);
  EXPECT_EQ(transitions[1].at, 1600);

  // An empty active set replaces the stored one; nullopt leaves it alone.
  HistoryWrite none;
  none.active = std::vector<AlertInstance>{};
  write(*store, none);
  EXPECT_EQ(count(*store, "SELECT count(*) FROM alert_active"), 0);
}

TEST(History, DrainObservationsComeBackAndAgeOut) {
  TempDir dir;
  auto store = open_store(dir);
  const DrainKey key{"staging", "rapid", "llama"};
  HistoryWrite w;
  w.drain.push_back({key, DrainSample{1000, 500, 100, std::numeric_limits<double>::quiet_NaN()}});
  w.drain.push_back({key, DrainSample{1015, 400, 200, 7}});
  w.drain.push_back({DrainKey{"staging", "rapid", "bert"}, DrainSample{1015, 0, 9, 1}});
  write(*store, w);
  auto h = store->call<DrainHistory>([](sql::Db& db) { return load_drain_samples(db, 1000); });
  ASSERT_EQ(h.size(), 2u);
  ASSERT_EQ(h[key].size(), 2u);
  EXPECT_EQ(h[key][0].backlog_bytes, 500);
  EXPECT_TRUE(std::isnan(h[key][0].drained_total));
  EXPECT_EQ(h[key][1].copied_bytes, 200);
  EXPECT_EQ(h[key][1].drained_total, 7);
  EXPECT_EQ(
      store->call<std::size_t>([](sql::Db& db) { return delete_drain_samples_before(db, 1010); }),
      1u);
  h = store->call<DrainHistory>([](sql::Db& db) { return load_drain_samples(db, 0); });
  EXPECT_EQ(h[key].size(), 1u);
}

TEST(History, PruningKeepsRawThenTheEarliestSampleOfEachBucketInSmallBatches) {
  TempDir dir;
  auto store = open_store(dir);
  HistoryPolicy policy;
  policy.raw_retention_seconds = 3600;
  policy.levels = {{300, 4 * 3600.0}, {1800, 8 * 3600.0}};
  const double now = 1'699'999'200;  // a multiple of 1800
  // One sample a minute over ten hours, plus per-job rows.
  HistoryWrite w;
  for (int i = 0; i <= 600; ++i) {
    const double t = now - 600 * 60 + i * 60.0;
    w.samples.push_back({"rapid", TierSample{t, 1e12, 1e11, {{"llama", 1.0 * i}}}});
  }
  write(*store, w);

  // Expected, from the policy's words: age <= 1h kept; 1h < age <= 4h one per
  // 5 minutes (the sample on the bucket start); 4h < age <= 8h one per 30
  // minutes; older deleted.
  std::vector<double> expected;
  for (int i = 0; i <= 600; ++i) {
    const double t = now - 600 * 60 + i * 60.0;
    const double age = now - t;
    const auto at = static_cast<std::int64_t>(t);
    if (age <= 3600 || (age <= 4 * 3600 && at % 300 == 0) ||
        (age <= 8 * 3600 && age > 4 * 3600 && at % 1800 == 0)) {
      expected.push_back(t);
    }
  }
  ASSERT_EQ(expected.size(), 61u + 36u + 8u);

  prune_history(*store, now, policy, /*batch=*/7);
  store->flush();
  EXPECT_EQ(store->errors(), 0u);
  EXPECT_EQ(stored_times(*store, "rapid"), expected);
  // Per-job rows went with their samples.
  EXPECT_EQ(count(*store, "SELECT count(*) FROM tier_job_samples"),
            static_cast<std::int64_t>(expected.size()));

  // Pruning again at the same time deletes nothing more.
  prune_history(*store, now, policy, 7);
  store->flush();
  EXPECT_EQ(stored_times(*store, "rapid"), expected);
}

TEST(History, OldAlertTransitionsArePruned) {
  TempDir dir;
  auto store = open_store(dir);
  HistoryPolicy policy;
  policy.raw_retention_seconds = 3600;
  policy.levels = {{300, 86400.0}};
  HistoryWrite w;
  for (double at : {1000.0, 2000.0, 100000.0}) {
    AlertTransition t;
    t.labels = {"CheckpointTierDown", "critical", "rapid", ""};
    t.at = at;
    t.to = AlertState::kPending;
    w.transitions.push_back(t);
  }
  write(*store, w);
  prune_history(*store, 2000 + 86400, policy);
  store->flush();
  auto left = store->call<std::vector<AlertTransition>>(
      [](sql::Db& db) { return load_alert_transitions(db, 0); });
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].at, 2000);
  EXPECT_EQ(left[1].at, 100000);
}

}  // namespace
}  // namespace ckptmon
