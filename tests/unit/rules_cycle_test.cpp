// The daemon's rules cycle on a hand-built State with a fake clock: figures
// and alerts in the rendered text, history handed to the store, and alert
// state and tier samples carried across a restart.

#include "serve/rules_cycle.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/alerts_wire.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "tests/unit/rules_fixtures.hpp"
#include "tests/unit/temp_dir.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr double kT0 = 1'700'000'000;

std::shared_ptr<const Config> config() {
  LoadResult r = parse_config(R"(tiers:
  - {name: staging, path: /s, role: staging, drains_to: rapid}
  - {name: rapid, path: /r, role: rapid}
alerting:
  rules:
    CheckpointDrainBacklogGrowing: {for: 0s}
)",
                              "test.yml");
  EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  return std::make_shared<const Config>(std::move(*r.config));
}

class RulesCycleTest : public ::testing::Test {
 protected:
  RulesCycleTest() : clock_(std::make_shared<FakeClock>(kT0)) {
    std::string error;
    store_ = Store::open(dir_.str(), &error);
    EXPECT_TRUE(store_) << error;
    state_.apply_config(config());
    for (auto& [name, t] : state_.tiers) {
      t.up = true;
      t.has_stats = true;
      t.stats.size_bytes = 1e12;
      t.stats.avail_bytes = 5e11;
      t.last_success = kT0;
      state_.catalogs[name].edit().scanned = true;
    }
  }

  std::unique_ptr<RulesCycle> cycle() {
    auto c = std::make_unique<RulesCycle>(
        io_, clock_, store_.get(), state_, [] { return true; }, [] {});
    c->configure(*state_.config, "http://127.0.0.1:10025");
    return c;
  }

  // Two committed checkpoints of jobA on staging, none copied yet: the
  // second landed before the first drained.
  void two_pending() {
    state_.catalogs["staging"].edit().checkpoints = {
        Ck("staging", "jobA", 100).committed(1000, kT0 - 100, kT0 - 90).c,
        Ck("staging", "jobA", 200).committed(1500, kT0 - 50, kT0 - 40).c};
  }
  void drained() {
    state_.catalogs["rapid"].edit().checkpoints = {
        Ck("rapid", "jobA", 100).committed(1000, kT0 - 80, kT0 - 70).c,
        Ck("rapid", "jobA", 200).committed(1500, kT0 - 30, kT0 - 20).c};
  }

  std::vector<AlertTransition> transitions() {
    return store_->call<std::vector<AlertTransition>>(
        [](sql::Db& db) { return load_alert_transitions(db, 0); });
  }

  TempDir dir_;
  std::shared_ptr<FakeClock> clock_;
  std::unique_ptr<Store> store_;
  boost::asio::io_context io_;
  State state_;
};

TEST_F(RulesCycleTest, NothingIsPublishedBeforeTheFirstCycle) {
  auto c = cycle();
  EXPECT_EQ(c->output(), nullptr);
  EXPECT_EQ(c->cycles(), 0u);
}

TEST_F(RulesCycleTest, GrowingBacklogFiresAndIsRenderedAndRecorded) {
  two_pending();
  auto c = cycle();
  c->evaluate();
  auto out = c->output();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->evaluated_at, kT0);
  const std::string& m = out->metrics_text;
  EXPECT_THAT(m, HasSubstr("ckpt_drain_backlog_bytes{tier=\"staging\",to_tier=\"rapid\","
                           "training_job=\"jobA\"} 2500\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_drain_overlapping_checkpoints{tier=\"staging\",to_tier=\"rapid\","
                           "training_job=\"jobA\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_alert{alertname=\"CheckpointDrainBacklogGrowing\","
                           "severity=\"warning\",tier=\"staging\",training_job=\"jobA\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_restorable_step{training_job=\"jobA\"} 200\n"));
  EXPECT_THAT(m, HasSubstr("ckptmon_rules_evaluations_total 1\n"));
  EXPECT_THAT(m, Not(HasSubstr("ckptmon_alertmanager_")));  // no URL configured
  ASSERT_FALSE(out->active.empty());
  const auto firing = std::count_if(out->active.begin(), out->active.end(), [](const auto& a) {
    return a.state == AlertState::kFiring && a.labels.alertname == "CheckpointDrainBacklogGrowing";
  });
  EXPECT_EQ(firing, 1);
  // /api/v1/alerts serves the body rendered with the cycle.
  EXPECT_EQ(out->alerts_json, alerts_json(out->active));

  store_->flush();
  auto t = transitions();
  auto it = std::find_if(t.begin(), t.end(), [](const AlertTransition& x) {
    return x.labels.alertname == "CheckpointDrainBacklogGrowing";
  });
  ASSERT_NE(it, t.end());
  EXPECT_EQ(it->from, AlertState::kInactive);
  EXPECT_EQ(it->to, AlertState::kFiring);
  EXPECT_EQ(it->at, kT0);

  // One sample per tier per successful probe, per-job bytes included.
  auto samples = store_->call<std::map<std::string, std::vector<TierSample>>>(
      [](sql::Db& db) { return load_tier_samples(db, 0, true); });
  ASSERT_EQ(samples["staging"].size(), 1u);
  EXPECT_EQ(samples["staging"][0].t, kT0);
  EXPECT_EQ(samples["staging"][0].job_stored_bytes,
            (std::map<std::string, double>{{"jobA", 2500}}));
  EXPECT_EQ(samples["rapid"].size(), 1u);

  // No new probe, no new sample; a new probe, one more.
  clock_->advance(15);
  c->evaluate();
  for (auto& [name, tier] : state_.tiers) tier.last_success = kT0 + 15;
  clock_->advance(15);
  c->evaluate();
  store_->flush();
  samples = store_->call<std::map<std::string, std::vector<TierSample>>>(
      [](sql::Db& db) { return load_tier_samples(db, 0, false); });
  EXPECT_EQ(samples["staging"].size(), 2u);
  EXPECT_EQ(c->history().tiers.at("staging").size(), 2u);
}

TEST_F(RulesCycleTest, AFiringAlertSurvivesARestartAndResolvesOnceDrained) {
  two_pending();
  {
    auto c = cycle();
    c->evaluate();
    clock_->advance(15);
    c->evaluate();
  }
  store_->flush();
  const std::size_t before = transitions().size();

  clock_->advance(600);  // down for ten minutes
  auto c = cycle();
  c->load();
  EXPECT_EQ(c->history().tiers.at("staging").size(), 1u);
  ASSERT_EQ(c->history().drain.size(), 1u);  // the drain rate's observations came back
  EXPECT_EQ(c->history().drain.begin()->second.size(), 2u);
  c->evaluate();
  store_->flush();
  // Still firing: no transition, and it is still rendered.
  auto t = transitions();
  EXPECT_EQ(std::count_if(t.begin() + static_cast<std::ptrdiff_t>(before), t.end(),
                          [](const AlertTransition& x) {
                            return x.labels.alertname == "CheckpointDrainBacklogGrowing";
                          }),
            0);
  EXPECT_THAT(c->output()->metrics_text,
              HasSubstr("ckpt_alert{alertname=\"CheckpointDrainBacklogGrowing\""));

  drained();
  clock_->advance(15);
  c->evaluate();
  store_->flush();
  EXPECT_THAT(c->output()->metrics_text,
              HasSubstr("ckpt_drain_backlog_bytes{tier=\"staging\",to_tier=\"rapid\","
                        "training_job=\"jobA\"} 0\n"));
  EXPECT_THAT(c->output()->metrics_text,
              Not(HasSubstr("ckpt_alert{alertname=\"CheckpointDrainBacklogGrowing\"")));
  t = transitions();
  ASSERT_FALSE(t.empty());
  auto last = std::find_if(t.rbegin(), t.rend(), [](const AlertTransition& x) {
    return x.labels.alertname == "CheckpointDrainBacklogGrowing";
  });
  ASSERT_NE(last, t.rend());
  EXPECT_EQ(last->from, AlertState::kFiring);
  EXPECT_EQ(last->to, AlertState::kInactive);
  EXPECT_EQ(last->at, kT0 + 630);
}

// Schema 6: the cycle keeps its per-tier figures with the samples it takes;
// a tier not walked yet keeps them unknown. The figures are worked out by
// hand from the fixture below (default policy: keep_last 3, no max_age,
// partial window 1h; sizing: replicas 1, temp-write allowance 1.0, growth
// headroom 0.2, concurrency as observed).
TEST_F(RulesCycleTest, TheSamplesKeepTheCyclesFiguresAndUnknownBeforeTheFirstWalk) {
  // jobA on staging, oldest first (commit time = marker time = last write):
  //   step  10  committed  400  at kT0 - 290
  //   step  20  committed  600  at kT0 - 190
  //   step 100  committed 1000  at kT0 -  90   (two_pending)
  //   step 200  committed 1500  at kT0 -  40   (two_pending)
  //   step 300  partial    700  last write kT0 - 4000
  two_pending();
  auto& staging = state_.catalogs["staging"].edit().checkpoints;
  staging.push_back(Ck("staging", "jobA", 10).committed(400, kT0 - 300, kT0 - 290).c);
  staging.push_back(Ck("staging", "jobA", 20).committed(600, kT0 - 200, kT0 - 190).c);
  staging.push_back(Ck("staging", "jobA", 300).partial(700, kT0 - 5000, kT0 - 4000).c);
  state_.catalogs["rapid"].edit().scanned = false;
  auto c = cycle();
  c->evaluate();
  store_->flush();
  struct Row {
    std::optional<double> pending, age, partial, required;
  };
  auto rows = store_->call<std::map<std::string, Row>>([](sql::Db& db) {
    std::map<std::string, Row> out;
    auto st = db.prepare(
        "SELECT tier, cleanup_pending_bytes, cleanup_oldest_age_seconds, partial_bytes, "
        "required_capacity_bytes FROM tier_samples");
    auto opt = [&](int i) {
      return st.is_null(i) ? std::optional<double>() : std::optional<double>(st.real(i));
    };
    while (st.step()) out[st.text(0)] = Row{opt(1), opt(2), opt(3), opt(4)};
    return out;
  });
  ASSERT_EQ(rows.size(), 2u);
  const Row& s = rows["staging"];
  ASSERT_TRUE(s.partial && s.required && s.pending && s.age);
  // The one partial checkpoint.
  EXPECT_EQ(*s.partial, 700);
  // The sizing rule: the latest committed checkpoint (1500) x 3 retained
  // versions x 1 replica = 4500; temp-write allowance 1.0 x 1500 (one job
  // observed) = 1500; residue = every partial checkpoint = 700; growth
  // headroom 0.2 x 4500 = 900. 4500 + 1500 + 700 + 900 = 7600.
  EXPECT_EQ(*s.required, 7600);
  // The deletion queue: step 10 fell out of keep_last 3 (expired, 400 bytes,
  // due since step 200 committed at kT0 - 40); step 300 is residue (its last
  // write is 4000 s old, past the 3600 s window: 700 bytes, due since
  // kT0 - 4000 + 3600 = kT0 - 400). 400 + 700 = 1100 bytes pending.
  EXPECT_EQ(*s.pending, 1100);
  // The oldest entry is the residue, due since kT0 - 400: 400 s old now.
  EXPECT_EQ(*s.age, 400);
  // And the exported gauges say the same.
  const std::string m = c->output()->metrics_text;
  EXPECT_THAT(m, HasSubstr("ckpt_tier_required_capacity_bytes{tier=\"staging\"} 7600\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_cleanup_oldest_age_seconds{tier=\"staging\"} 400\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_cleanup_pending_bytes{tier=\"staging\",training_job=\"jobA\"} "
                           "1100\n"));
  const Row& r = rows["rapid"];  // sampled (statfs) but never walked
  EXPECT_FALSE(r.partial || r.required || r.pending || r.age);
}

TEST_F(RulesCycleTest, ATierThatWasNeverWalkedContributesNoCheckpoints) {
  two_pending();
  drained();
  state_.catalogs["rapid"].edit().scanned = false;  // its walk has not finished
  auto c = cycle();
  c->evaluate();
  // Without the target's catalog the whole source counts as backlog: the
  // daemon evaluates only once every tier reported (see Daemon::changed).
  EXPECT_THAT(c->output()->metrics_text,
              HasSubstr("ckpt_drain_backlog_bytes{tier=\"staging\",to_tier=\"rapid\","
                        "training_job=\"jobA\"} 2500\n"));
}

TEST_F(RulesCycleTest, AlertmanagerFamiliesAppearWhenAUrlIsSet) {
  LoadResult r = parse_config(
      "tiers:\n  - {name: staging, path: /s, role: staging}\nalerting: {alertmanager_url: "
      "'http://127.0.0.1:1'}\n",
      "am.yml");
  ASSERT_TRUE(r.config);
  auto cfg = std::make_shared<const Config>(std::move(*r.config));
  state_.apply_config(cfg);
  auto c = std::make_unique<RulesCycle>(
      io_, clock_, store_.get(), state_, [] { return true; }, [] {});
  c->configure(*cfg, "http://127.0.0.1:10025");
  ASSERT_NE(c->alertmanager(), nullptr);
  c->evaluate();
  EXPECT_THAT(c->output()->metrics_text, HasSubstr("ckptmon_alertmanager_posts_total 0\n"));
  // Removing the URL on reload drops the client.
  c->configure(*config(), "http://127.0.0.1:10025");
  EXPECT_EQ(c->alertmanager(), nullptr);
}

// Issue 9.10 through the daemon's rules cycle: the fake clock's wall time is
// stepped back an hour while a checkpoint waits to drain. The oldest pending
// age keeps growing, CheckpointDrainTooSlow still fires after its `for:`, and
// its activeAt is not in the future.
TEST_F(RulesCycleTest, AWallClockJumpingBackDoesNotMaskDrainTooSlow) {
  LoadResult r = parse_config(R"(tiers:
  - {name: staging, path: /s, role: staging, drains_to: rapid}
  - {name: rapid, path: /r, role: rapid}
alerting:
  rules:
    CheckpointDrainTooSlow: {for: 120s, max_pending_age: 60s}
)",
                              "test.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  state_.apply_config(std::make_shared<const Config>(std::move(*r.config)));
  // Committed at kT0 - 90: 90 s old at the first cycle.
  state_.catalogs["staging"].edit().checkpoints = {
      Ck("staging", "jobA", 100).committed(1000, kT0 - 100, kT0 - 90).c};
  auto c = cycle();
  auto age = [&] {
    const std::string& m = c->output()->metrics_text;
    const std::string key =
        "ckpt_drain_oldest_pending_age_seconds{tier=\"staging\",to_tier=\"rapid\",training_job="
        "\"jobA\"} ";
    const auto at = m.find(key);
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + key.size()));
  };
  auto too_slow = [&]() -> const AlertInstance* {
    for (const auto& a : c->output()->active) {
      if (a.labels.alertname == "CheckpointDrainTooSlow") return &a;
    }
    return nullptr;
  };
  c->evaluate();
  EXPECT_EQ(age(), 90);
  ASSERT_NE(too_slow(), nullptr);
  EXPECT_EQ(too_slow()->state, AlertState::kPending);

  clock_->advance(60);
  clock_->jump_wall(-3600);
  c->evaluate();
  EXPECT_EQ(age(), 150);  // not 0
  ASSERT_NE(too_slow(), nullptr);
  EXPECT_EQ(too_slow()->state, AlertState::kPending);
  EXPECT_LE(too_slow()->active_at, clock_->now());
  EXPECT_EQ(too_slow()->active_at, clock_->now() - 60);

  clock_->advance(60);
  c->evaluate();
  EXPECT_EQ(age(), 210);
  ASSERT_NE(too_slow(), nullptr);
  EXPECT_EQ(too_slow()->state, AlertState::kFiring);  // 120 s of for:
  EXPECT_EQ(too_slow()->active_at, clock_->now() - 120);
  EXPECT_LE(too_slow()->fired_at, clock_->now());
  EXPECT_THAT(c->output()->alerts_json, Not(HasSubstr("2023-11-14T22:1")));  // kT0's minute
}

// The cycle's timer follows the injected clock, and a reload (configure and
// start again, as Daemon::apply_config does) keeps its schedule: one every
// 1.5 s with an interval of 2 s used to re-arm it from zero each time, and
// no cycle ran at all. A changed interval moves the next cycle to where the
// new interval ends from the same start, not a whole interval from now.
TEST_F(RulesCycleTest, ReloadsMoreOftenThanTheIntervalKeepTheCyclesGoing) {
  auto c = cycle();
  const auto two = std::chrono::duration_cast<Duration>(std::chrono::seconds(2));
  // Moves the clock, lets the loop fire what is due, returns the cycles so far.
  auto cycles_after = [&](double seconds) {
    clock_->advance(seconds);
    io_.restart();
    io_.poll();
    return c->cycles();
  };
  c->start(two);
  EXPECT_EQ(cycles_after(0), 0u);
  EXPECT_EQ(cycles_after(2), 1u);
  for (int i = 1; i <= 36; ++i) {  // 18 s in steps of 0.5 s, a reload every 1.5 s
    cycles_after(0.5);
    if (i % 3 != 0) continue;
    c->configure(*state_.config, "http://127.0.0.1:10025");
    c->start(two);
  }
  EXPECT_EQ(cycles_after(0), 10u);  // 2 + 18 s: a cycle every 2 s, as without reloads

  // Now 20 s, and a cycle just ran. The interval goes to 10 s at 21 s: the
  // next cycle is due at 30 s, not 31 s.
  EXPECT_EQ(cycles_after(1), 10u);
  c->start(std::chrono::duration_cast<Duration>(std::chrono::seconds(10)));
  EXPECT_EQ(cycles_after(8.5), 10u);
  EXPECT_EQ(cycles_after(0.5), 11u);
  // 30 s; down to 4 s at 36 s: due at 34 s, which is past, so at once.
  EXPECT_EQ(cycles_after(6), 11u);
  c->start(std::chrono::duration_cast<Duration>(std::chrono::seconds(4)));
  EXPECT_EQ(cycles_after(0), 12u);
  EXPECT_EQ(cycles_after(4), 13u);
  c->stop();
  EXPECT_EQ(cycles_after(100), 13u);
}

}  // namespace
}  // namespace ckptmon
