#include "rules/alerts.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/alerts_wire.hpp"  // WindowMissed: the cause reaches /api/v1/alerts
#include "tests/test_paths.hpp"
#include "tests/unit/rules_fixtures.hpp"
#include "util/clock.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double GiB = 1024.0 * 1024 * 1024;

AlertCondition cond(Signal s, double for_seconds, std::string tier = "rapid") {
  AlertCondition c;
  c.labels = {"CheckpointTierAlmostFull", "critical", std::move(tier), ""};
  c.signal = s;
  c.for_seconds = for_seconds;
  c.summary = "s";
  return c;
}

std::vector<std::pair<AlertState, AlertState>> moves(const std::vector<AlertTransition>& t) {
  std::vector<std::pair<AlertState, AlertState>> out;
  for (const auto& x : t) out.emplace_back(x.from, x.to);
  return out;
}

using P = std::pair<AlertState, AlertState>;
constexpr auto kIn = AlertState::kInactive;
constexpr auto kPe = AlertState::kPending;
constexpr auto kFi = AlertState::kFiring;

TEST(AlertEvaluator, PendingThenFiringAfterForThenResolved) {
  FakeClock clock(1000);
  AlertEvaluator ev;
  std::vector<AlertCondition> c{cond(Signal::kFire, 60)};
  EXPECT_EQ(moves(ev.evaluate(c, clock.now())), (std::vector<P>{{kIn, kPe}}));
  clock.advance(30);
  EXPECT_TRUE(ev.evaluate(c, clock.now()).empty());
  EXPECT_TRUE(ev.firing().empty());
  ASSERT_EQ(ev.active().size(), 1u);
  EXPECT_EQ(ev.active()[0].state, kPe);
  clock.advance(30);
  EXPECT_EQ(moves(ev.evaluate(c, clock.now())), (std::vector<P>{{kPe, kFi}}));
  ASSERT_EQ(ev.firing().size(), 1u);
  EXPECT_EQ(ev.firing()[0].active_at, 1000);
  EXPECT_EQ(ev.firing()[0].fired_at, 1060);
  clock.advance(30);
  c[0].signal = Signal::kClear;
  EXPECT_EQ(moves(ev.evaluate(c, clock.now())), (std::vector<P>{{kFi, kIn}}));
  EXPECT_TRUE(ev.active().empty());
  ASSERT_EQ(ev.resolved().size(), 1u);
  EXPECT_EQ(ev.resolved()[0].resolved_at, 1090);
  EXPECT_EQ(ev.resolved()[0].fired_at, 1060);
  clock.advance(30);
  ev.evaluate(c, clock.now());
  EXPECT_TRUE(ev.resolved().empty());  // reported once
}

TEST(AlertEvaluator, RestoredStateCarriesOnWithoutCountingTheDowntime) {
  // An earlier run left "a" firing and "b" pending for 50 of its 60 seconds.
  AlertEvaluator before;
  std::vector<AlertCondition> c{cond(Signal::kFire, 0, "a"), cond(Signal::kFire, 60, "b")};
  before.evaluate(c, 1000);
  before.evaluate(c, 1050);
  std::vector<AlertInstance> saved = before.active();
  ASSERT_EQ(saved.size(), 2u);
  AlertInstance inactive = saved[0];
  inactive.labels.tier = "c";
  inactive.state = kIn;
  saved.push_back(inactive);  // ignored

  // Restarted an hour later: the downtime does not count towards for:.
  AlertEvaluator ev;
  ev.restore(saved);
  ASSERT_EQ(ev.active().size(), 2u);
  EXPECT_TRUE(ev.evaluate(c, 4650).empty());
  ASSERT_EQ(ev.firing().size(), 1u);
  EXPECT_EQ(ev.firing()[0].labels.tier, "a");
  EXPECT_EQ(ev.firing()[0].fired_at, 1000);
  EXPECT_EQ(ev.active()[1].state, kPe);
  EXPECT_EQ(ev.active()[1].active_at, 1000);
  // Ten more seconds of evaluation time complete b's 60.
  EXPECT_EQ(moves(ev.evaluate(c, 4660)), (std::vector<P>{{kPe, kFi}}));
  // The restored firing alert resolves when its condition clears.
  c[0].signal = Signal::kClear;
  EXPECT_EQ(moves(ev.evaluate(c, 4670)), (std::vector<P>{{kFi, kIn}}));
  ASSERT_EQ(ev.resolved().size(), 1u);
  EXPECT_EQ(ev.resolved()[0].labels.tier, "a");
  EXPECT_EQ(ev.resolved()[0].resolved_at, 4670);
}

TEST(AlertEvaluator, ZeroForFiresAtOnceAndPendingThatClearsNeverResolves) {
  AlertEvaluator ev;
  std::vector<AlertCondition> c{cond(Signal::kFire, 0, "a"), cond(Signal::kFire, 60, "b")};
  auto t = ev.evaluate(c, 0);
  EXPECT_EQ(moves(t), (std::vector<P>{{kIn, kFi}, {kIn, kPe}}));
  c[1].signal = Signal::kClear;
  t = ev.evaluate(c, 10);
  EXPECT_EQ(moves(t), (std::vector<P>{{kPe, kIn}}));
  EXPECT_TRUE(ev.resolved().empty());
}

TEST(AlertEvaluator, TwoCyclesAtTheSameInstantReportPendingOnce) {
  AlertEvaluator ev;
  std::vector<AlertCondition> c{cond(Signal::kFire, 60)};
  EXPECT_EQ(moves(ev.evaluate(c, 100)), (std::vector<P>{{kIn, kPe}}));
  EXPECT_TRUE(ev.evaluate(c, 100).empty());
  EXPECT_EQ(ev.active().size(), 1u);
}

TEST(AlertEvaluator, HoldKeepsAnActiveAlertAndDoesNotStartAnInactiveOne) {
  AlertEvaluator ev;
  std::vector<AlertCondition> c{cond(Signal::kHold, 0)};
  ev.evaluate(c, 0);
  EXPECT_TRUE(ev.active().empty());
  c[0].signal = Signal::kFire;
  ev.evaluate(c, 10);
  c[0].signal = Signal::kHold;
  EXPECT_TRUE(ev.evaluate(c, 20).empty());
  EXPECT_EQ(ev.firing().size(), 1u);
}

TEST(AlertEvaluator, AnInstanceWithNoConditionAnyMoreResolves) {
  AlertEvaluator ev;
  ev.evaluate(std::vector<AlertCondition>{cond(Signal::kFire, 0, "gone")}, 0);
  auto t = ev.evaluate({}, 15);
  EXPECT_EQ(moves(t), (std::vector<P>{{kFi, kIn}}));
  ASSERT_EQ(ev.resolved().size(), 1u);
  EXPECT_EQ(ev.resolved()[0].labels.tier, "gone");
}

TEST(AlertEvaluator, AClockJumpingBackCountsNoTimeAndOneJumpingForwardAtMostAStep) {
  AlertEvaluator ev(300);
  std::vector<AlertCondition> c{cond(Signal::kFire, 60)};
  ev.evaluate(c, 1000);
  ev.evaluate(c, 500);  // back: 0 s
  ev.evaluate(c, 530);  // 30 s
  EXPECT_TRUE(ev.firing().empty());
  ev.evaluate(c, 560);  // 60 s
  EXPECT_EQ(ev.firing().size(), 1u);

  AlertEvaluator ev2(300);
  std::vector<AlertCondition> slow{cond(Signal::kFire, 600)};
  ev2.evaluate(slow, 0);
  ev2.evaluate(slow, 86400);  // a day forward counts as 300 s
  EXPECT_TRUE(ev2.firing().empty());
  ev2.evaluate(slow, 86400 + 300);
  EXPECT_EQ(ev2.firing().size(), 1u);
}

// Figures where every alert has something to say.
struct Scene {
  std::map<std::string, TierState> tiers;
  RuleFigures figs;
  AlertingConfig cfg;
  Scene() {
    tiers["staging"] = tier_state("staging", TierRole::kStaging, "rapid", 100 * GiB, 3 * GiB);
    tiers["rapid"] = tier_state("rapid", TierRole::kRapid, "", 1000 * GiB, 500 * GiB);
    tiers["rapid"].up = false;
    tiers["rapid"].down_reason = "statfs timed out after 10s";
    figs.now = 100'000;
    DrainFigures d;
    d.tier = "staging";
    d.to_tier = "rapid";
    d.job = "llama";
    d.backlog_bytes = static_cast<std::uint64_t>(1.5 * GiB);
    d.pending_checkpoints = 2;
    d.overlapping_checkpoints = 1;
    d.oldest_pending_age = 7200;
    d.rate_bytes_per_second = 1024;
    d.time_to_empty_seconds = 1.5 * GiB / 1024;
    figs.drain.push_back(d);
    CapacityFigures c;
    c.tier = "staging";
    c.has_stats = true;
    c.size_bytes = 100 * GiB;
    c.avail_bytes = 3 * GiB;
    c.used_ratio = 0.97;
    c.time_to_full_seconds = 3600;
    c.concurrent_jobs = 1;
    JobCapacity j;
    j.job = "llama";
    j.latest_bytes = static_cast<std::uint64_t>(4 * GiB);
    j.next_checkpoint_bytes = 4 * GiB;
    c.jobs.push_back(j);
    figs.capacity.push_back(c);
    JobTierFigures jt;
    jt.tier = "staging";
    jt.job = "llama";
    jt.partial_checkpoints = 1;
    jt.partial_bytes = static_cast<std::uint64_t>(2 * GiB);
    jt.has_committed = true;
    jt.last_step = 1200;
    jt.last_completion_skew_seconds = 300;
    figs.job_tiers.push_back(jt);
    figs.cleanup_oldest_age_seconds["staging"] = 8 * 3600;
    RetentionFigures rf;
    rf.tier = "staging";
    rf.job = "llama";
    rf.expired_checkpoints = 3;
    rf.expired_bytes = static_cast<std::uint64_t>(12 * GiB);
    figs.retention.push_back(rf);
    RecoveryPoint rp;
    rp.job = "llama";
    rp.restorable = true;
    rp.step = 1100;
    rp.tier = "rapid";
    rp.timestamp = figs.now - 3 * 3600;
    rp.last_activity = figs.now - 60;
    figs.recovery.push_back(rp);
    // Steps 1100 and 1200 only on node-local staging for 2h; the newest
    // durable copy is step 900.
    DurabilityFigures durable;
    durable.job = "llama";
    durable.durable_known = true;
    durable.durable.restorable = true;
    durable.durable.step = 900;
    durable.durable.tier = "rapid";
    durable.steps_at_risk = 300;
    durable.durable_lag_seconds = 2 * 3600;
    durable.versions = 4;
    durable.versions_under_copied = 2;
    figs.durability.push_back(durable);
    // Nothing durable watched for this one: no condition at all.
    DurabilityFigures blind;
    blind.job = "gpt";
    blind.durable_lag_seconds = 99 * 3600;
    blind.versions_under_copied = 9;
    figs.durability.push_back(blind);
    BandwidthFigures b;
    b.tier = "staging";
    b.concurrent_writers = 1;
    b.bytes_per_checkpoint = 4 * GiB;
    b.required_bytes_per_second = 100 * 1024 * 1024;
    b.observed_bytes_per_second = 50 * 1024 * 1024;
    figs.bandwidth.push_back(b);
    self.store_consecutive_errors = 4;
    self.store_path = "/var/lib/ckptmon/ckptmon.db";
    self.store_last_error = "database or disk is full";
    // Three saves each dropping GPU utilisation by 80 %; 2880 GPU-seconds
    // lost of 8 GPUs x 3600 s = 10 %.
    GpuJobFigures g;
    g.job = "llama";
    g.gpus = 8;
    g.drops = {0.8, 0.8, 0.8};
    g.losses = {960, 960, 960};
    g.lost_in_window = 2880;
    g.gpu_seconds_in_window = 8 * 3600;
    figs.gpu_jobs.push_back(g);
    // A 300 s save against a 2m window, with the storage path saturated.
    LastSlowFigures ls;
    ls.tier = "rapid";
    ls.job = "llama";
    ls.step = 1200;
    ls.verdict.judged = true;
    ls.verdict.slow = true;
    ls.verdict.duration_seconds = 300;
    ls.verdict.window_seconds = 120;
    ls.verdict.missed = "checkpoint_window";
    ls.verdict.cause = SlowCause::kStorageBandwidth;
    ls.verdict.evidence = "the tier wrote 950.0 MiB/s during the window";
    figs.storage_path.last_slow.push_back(ls);
    // 100 GiB at 2 GiB/s + 0.3 s of metadata against a 30 s objective.
    RestoreFigures rs;
    rs.tier = "rapid";
    rs.job = "llama";
    rs.step = 1200;
    rs.bytes = 100 * GiB;
    rs.files = 100;
    rs.objective_seconds = 30;
    rs.estimate = RestoreEstimate{2 * GiB, ReadSource::kCounters, 1000, 50, 0.3, 50.3};
    figs.storage_path.restore.push_back(rs);
    // Two of llama's committed checkpoints on staging failed verification.
    figs.integrity_known = true;
    figs.job_tiers.back().integrity_failed = 2;
    figs.job_tiers.back().integrity_failed_step = 1100;
    // 20,000 inodes free of 1,000,000 (2 %), 5,000 still needed.
    figs.capacity.back().files_known = true;
    figs.capacity.back().files_total = 1'000'000;
    figs.capacity.back().files_free = 20'000;
    figs.capacity.back().still_needed_files = 5'000;
    figs.save_failures.push_back(
        {"staging", "llama", 3, figs.now - 60, "ENOSPC writing __0_0.distcp"});
    AccessFigures af;
    af.tier = "staging";
    af.known = true;
    af.by_kind[static_cast<std::size_t>(FindingKind::kWorldWritable)] = 2;
    af.by_kind[static_cast<std::size_t>(FindingKind::kWorldReadable)] = 5;  // not a default kind
    figs.access.push_back(af);
    // 3 checkpoints have waited 2 days on a deletion tier (deletion_within 24h).
    DeletionQueueFigures dq;
    dq.tier = "trash";
    dq.checkpoints = 3;
    dq.bytes = 6 * GiB;
    dq.oldest_age_seconds = 2 * 86400;
    figs.deletion_queue.push_back(dq);
    // 2 of team-a's 5 copies on tier us lie outside its allowed residency;
    // eu's are all allowed.
    ResidencyFigures us;
    us.tier = "us";
    us.job = "team-a";
    us.residency = "us-east";
    us.allowed = {"eu-central", "eu-west"};
    us.copies = 5;
    us.violations = 2;
    figs.residency.push_back(us);
    ResidencyFigures eu = us;
    eu.tier = "eu";
    eu.residency = "eu-west";
    eu.violations = 0;
    figs.residency.push_back(eu);
    // plain requires encryption and is detected unencrypted at rest;
    // vault requires it and cannot be told (unknown): it holds, never fires.
    EncryptionFigures plain;
    plain.tier = "plain";
    plain.required = true;
    plain.known = true;
    plain.at_rest = "none";
    plain.in_transit = "local";
    plain.detail = "no fscrypt policy on the tier root and no dm-crypt target under /dev/sdb1";
    plain.violation = true;
    figs.encryption.push_back(plain);
    EncryptionFigures vault = plain;
    vault.tier = "vault";
    vault.at_rest = "unknown";
    vault.violation = false;
    figs.encryption.push_back(vault);
    // Restore drills: gpt's could not read a shard; llama's read it all in
    // 12 min against a 10 min objective; mistral's passed.
    DrillRecord gpt;
    gpt.tier = "rapid";
    gpt.job = "gpt";
    gpt.step = 50;
    gpt.path = "gpt/step-50";
    gpt.failure = "gpt/step-50/__1_0.distcp: No such file or directory";
    figs.drills.push_back(gpt);
    DrillRecord llama = gpt;
    llama.job = "llama";
    llama.step = 900;
    llama.path = "llama/step-900";
    llama.failure = "";
    llama.objective_seconds = 600;
    llama.locate_seconds = 60;
    llama.metadata_seconds = 60;
    llama.read_seconds = 600;
    figs.drills.push_back(llama);
    DrillRecord mistral = llama;
    mistral.job = "mistral";
    mistral.read_seconds = 100;
    figs.drills.push_back(mistral);
  }
  std::vector<AlertCondition> conditions() const {
    return alert_conditions(figs, tiers, cfg, self);
  }
  SelfHealth self;
};

const AlertCondition* find(const std::vector<AlertCondition>& cs, std::string_view name,
                           std::string_view tier, std::string_view job) {
  for (const auto& c : cs) {
    if (c.labels.alertname == name && c.labels.tier == tier && c.labels.job == job) return &c;
  }
  return nullptr;
}

TEST(AlertConditions, EveryAlertFiresOnItsFigureWithTheFiguresInItsText) {
  Scene s;
  auto cs = s.conditions();
  struct Want {
    std::string_view name, tier, job, severity, text;
  };
  const std::vector<Want> want{
      {"CheckpointDrainBacklogGrowing", "staging", "llama", "warning", "1.5 GiB still to copy"},
      {"CheckpointDrainTooSlow", "staging", "llama", "warning", "has waited 2h"},
      {"CheckpointTierFillingUp", "staging", "", "warning", "fills up in 1h"},
      {"CheckpointTierAlmostFull", "staging", "", "critical", "97% used"},
      {"CheckpointNextWontFit", "staging", "llama", "critical", "needs 4.0 GiB"},
      {"CheckpointPartial", "staging", "llama", "warning", "(2.0 GiB)"},
      {"CheckpointCleanupStalled", "staging", "", "warning", "3 checkpoints (12.0 GiB)"},
      {"CheckpointRecoveryPointStale", "", "llama", "critical", "step 1100 on tier rapid) is 3h"},
      {"CheckpointCompletionSkewHigh", "staging", "llama", "warning", "took 5m from its first"},
      {"CheckpointTierDown", "rapid", "", "critical", "statfs timed out after 10s"},
      {"CheckpointBandwidthShortfall", "staging", "", "warning", "written at 50.0 MiB/s"},
      {"CkptmonStateWriteFailing", "", "", "critical",
       "The last 4 writes to /var/lib/ckptmon/ckptmon.db failed (database or disk is full)"},
      {"CheckpointStallingGPUs", "", "llama", "warning", "dropped by 80% of its baseline"},
      {"CheckpointGoodputLow", "", "llama", "warning", "2880 GPU-seconds over the last 1h (10%"},
      {"CheckpointWindowMissed", "rapid", "llama", "warning",
       "took 5m, over its checkpoint_window limit of 2m. Cause: storage_bandwidth (the tier "
       "wrote 950.0 MiB/s"},
      {"CheckpointRecoveryTimeObjectiveAtRisk", "rapid", "llama", "warning",
       "restore in 50s: 50s reading at 2.0 GiB/s (counters) plus 0.3s of metadata"},
      {"CheckpointRecoveryPointNotDurable", "", "llama", "warning",
       "(step 900 on tier rapid) has waited 2h for a copy on a durable tier (durable_within 1h). "
       "A node loss now costs 300 steps."},
      {"CheckpointUnderCopied", "", "llama", "warning",
       "2 of the 4 restorable checkpoint(s) of job llama older than 1h have fewer than 1 "
       "complete copies on durable tiers."},
      {"CheckpointIntegrityFailed", "staging", "llama", "warning",
       "2 committed checkpoint(s) of job llama on tier staging failed integrity verification (a "
       "checksum mismatch or a missing shard), the newest at step 1100"},
      {"CheckpointTierInodesLow", "staging", "", "critical",
       "Tier staging has 20000 free inodes of 1000000; its checkpoints still need 5000"},
      {"CheckpointSavesFailing", "staging", "llama", "warning",
       "3 save(s) of job llama on tier staging failed within the last 1h; the last one: ENOSPC "
       "writing __0_0.distcp."},
      {"CheckpointAccessFinding", "staging", "", "warning",
       "The access audit of tier staging found 2 world_writable; /api/v1/findings?tier=staging"},
      {"CheckpointDeletionStalled", "trash", "", "warning",
       "3 checkpoints (6.0 GiB) wait on deletion tier trash; the oldest has been there 2d "
       "(deletion_within 1d)."},
      {"CheckpointTierNotEncrypted", "plain", "", "warning",
       "Tier plain has encryption_required; at rest: none, in transit: local (no fscrypt policy "
       "on the tier root and no dm-crypt target under /dev/sdb1)."},
      {"CheckpointRestoreDrillFailed", "rapid", "gpt", "warning",
       "The last restore drill of job gpt on rapid (step 50, gpt/step-50) could not read it "
       "back: gpt/step-50/__1_0.distcp: No such file or directory."},
      {"CheckpointOutsideAllowedResidency", "us", "team-a", "warning",
       "2 of the 5 copies of job team-a's checkpoints on tier us lie in residency 'us-east', "
       "which the job's namespaces do not allow (allowed: eu-central, eu-west)."},
  };
  const AlertCondition* slow = find(cs, "CheckpointRestoreDrillFailed", "rapid", "llama");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->signal, Signal::kFire);
  EXPECT_NE(slow->description.find("(step 900, llama/step-900) took "), std::string::npos)
      << slow->description;
  EXPECT_NE(slow->description.find(", over the recovery_time_objective of "), std::string::npos);
  const AlertCondition* passed = find(cs, "CheckpointRestoreDrillFailed", "rapid", "mistral");
  ASSERT_NE(passed, nullptr);
  EXPECT_EQ(passed->signal, Signal::kClear);  // 60 + 60 + 100 s, within 10 min
  const AlertCondition* vault = find(cs, "CheckpointTierNotEncrypted", "vault", "");
  ASSERT_NE(vault, nullptr);
  EXPECT_EQ(vault->signal, Signal::kClear);  // unknown is not none
  const AlertCondition* allowed = find(cs, "CheckpointOutsideAllowedResidency", "eu", "team-a");
  ASSERT_NE(allowed, nullptr);
  EXPECT_EQ(allowed->signal, Signal::kClear);
  EXPECT_EQ(find(cs, "CheckpointRecoveryPointNotDurable", "", "gpt"), nullptr);
  EXPECT_EQ(find(cs, "CheckpointUnderCopied", "", "gpt"), nullptr);
  std::size_t daemon_alerts = 0;
  for (const AlertSpec& spec : alert_table()) daemon_alerts += spec.daemon ? 1 : 0;
  ASSERT_EQ(want.size(), daemon_alerts);
  for (const Want& w : want) {
    const AlertCondition* c = find(cs, w.name, w.tier, w.job);
    ASSERT_NE(c, nullptr) << w.name;
    EXPECT_EQ(c->signal, Signal::kFire) << w.name;
    EXPECT_EQ(c->labels.severity, w.severity) << w.name;
    EXPECT_NE(c->description.find(w.text), std::string::npos) << w.name << ": " << c->description;
    EXPECT_FALSE(c->summary.empty());
    std::string anchor(w.name);
    std::transform(anchor.begin(), anchor.end(), anchor.begin(), ::tolower);
    EXPECT_EQ(c->runbook_url, "docs/runbook.md#" + anchor);
  }
  // The up tier clears TierDown. A cleared condition's texts are not built:
  // the evaluator keeps the texts of the cycle that last held or fired.
  const AlertCondition* up = find(cs, "CheckpointTierDown", "staging", "");
  EXPECT_EQ(up->signal, Signal::kClear);
  EXPECT_TRUE(up->summary.empty());
  EXPECT_TRUE(up->description.empty());
  EXPECT_TRUE(up->runbook_url.empty());
}

TEST(AlertConditions, DisabledRulesProduceNothingAndForComesFromTheConfig) {
  Scene s;
  s.cfg.rules.tier_down.enabled = false;
  s.cfg.rules.partial.for_seconds = 42;
  auto cs = s.conditions();
  EXPECT_EQ(find(cs, "CheckpointTierDown", "rapid", ""), nullptr);
  EXPECT_EQ(find(cs, "CheckpointPartial", "staging", "llama")->for_seconds, 42);
}

TEST(AlertConditions, TierAlmostFullFiresAbove95AndClearsBelow93) {
  Scene s;
  s.cfg.rules.tier_almost_full.for_seconds = 0;
  AlertEvaluator ev;
  auto step = [&](double used, double now) {
    s.figs.capacity[0].used_ratio = used;
    s.figs.now = now;
    auto cs = s.conditions();
    std::vector<AlertCondition> only;
    for (auto& c : cs) {
      if (c.labels.alertname == "CheckpointTierAlmostFull") only.push_back(c);
    }
    ev.evaluate(only, now);
    return ev.firing().size();
  };
  EXPECT_EQ(step(0.94, 0), 0u);   // below the fire threshold
  EXPECT_EQ(step(0.96, 10), 1u);  // fires
  EXPECT_EQ(step(0.94, 20), 1u);  // between: still firing
  EXPECT_EQ(step(0.93, 30), 0u);  // at the clear threshold: resolved
  // with the texts of the last cycle it held (the cleared condition has none)
  ASSERT_EQ(ev.resolved().size(), 1u);
  EXPECT_EQ(ev.resolved()[0].summary, "Tier staging is 94% full");
  EXPECT_EQ(ev.resolved()[0].runbook_url, "docs/runbook.md#checkpointtieralmostfull");
  EXPECT_EQ(step(0.94, 40), 0u);  // between: stays resolved
}

TEST(AlertConditions, RecoveryPointOfAJobThatStoppedCheckpointingDoesNotPage) {
  Scene s;
  s.figs.recovery[0].last_activity = s.figs.now - 7 * 3600;  // beyond the 6 h active window
  auto cs = s.conditions();
  auto c = find(cs, "CheckpointRecoveryPointStale", "", "llama");
  EXPECT_EQ(c->signal, Signal::kClear);
  // Never restorable, but writing partials for 3 h: pages.
  s.figs.recovery[0] = RecoveryPoint{};
  s.figs.recovery[0].job = "llama";
  s.figs.recovery[0].first_activity = s.figs.now - 3 * 3600;
  s.figs.recovery[0].last_activity = s.figs.now - 10;
  cs = s.conditions();
  c = find(cs, "CheckpointRecoveryPointStale", "", "llama");
  EXPECT_EQ(c->signal, Signal::kFire);
  EXPECT_NE(c->description.find("has no restorable checkpoint"), std::string::npos)
      << c->description;
}

TEST(AlertConditions, UnknownFiguresHold) {
  Scene s;
  s.figs.capacity[0].time_to_full_seconds.reset();
  s.figs.bandwidth[0].observed_bytes_per_second.reset();
  auto cs = s.conditions();
  EXPECT_EQ(find(cs, "CheckpointTierFillingUp", "staging", "")->signal, Signal::kHold);
  EXPECT_EQ(find(cs, "CheckpointBandwidthShortfall", "staging", "")->signal, Signal::kHold);
  s.figs.capacity[0].time_to_full_seconds = kInf;
  cs = s.conditions();
  EXPECT_EQ(find(cs, "CheckpointTierFillingUp", "staging", "")->signal, Signal::kClear);
}

TEST(AlertConditions, GrowingQueueFiresWhenANewCheckpointLandsBeforeThePreviousDrained) {
  // End to end through evaluate_rules: step 100 half copied, then step 200 lands.
  std::map<std::string, TierState> tiers{
      {"staging", tier_state("staging", TierRole::kStaging, "rapid", 1e12, 5e11)},
      {"rapid", tier_state("rapid", TierRole::kRapid, "", 1e13, 5e12)}};
  std::vector<Checkpoint> cks{Ck("staging", "a", 100).committed(1000, 90, 100),
                              Ck("rapid", "a", 100).in_progress(500, 110, 120)};
  RulesPolicy policy;
  policy.alerting.rules.drain_backlog_growing.for_seconds = 0;
  AlertEvaluator ev;
  auto run = [&](double now) {
    RuleFigures f = evaluate_rules(tiers, cks, RulesHistory{}, {}, policy, now);
    auto cs = alert_conditions(f, tiers, policy.alerting);
    ev.evaluate(cs, now);
    for (const auto& a : ev.firing()) {
      if (a.labels.alertname == "CheckpointDrainBacklogGrowing") return true;
    }
    return false;
  };
  EXPECT_FALSE(run(130));
  cks.push_back(Ck("staging", "a", 200).committed(1000, 190, 200));
  EXPECT_TRUE(run(210));
  RuleFigures f = evaluate_rules(tiers, cks, RulesHistory{}, {}, policy, 210);
  ASSERT_EQ(f.drain.size(), 1u);
  EXPECT_EQ(f.drain[0].backlog_bytes, 1500u);
  // Both drained: resolved.
  cks[1].bytes = 1000;
  cks.push_back(Ck("rapid", "a", 200).committed(1000, 250, 260));
  EXPECT_FALSE(run(270));
  ASSERT_EQ(ev.resolved().size(), 1u);
}

TEST(AlertConditions, WindowMissedCarriesTheCauseInItsAnnotations) {
  Scene s;
  AlertEvaluator ev;
  ev.evaluate(s.conditions(), s.figs.now);
  std::vector<AlertInstance> active = ev.active();
  const AlertInstance* missed = nullptr;
  for (const AlertInstance& a : active) {
    if (a.labels.alertname == "CheckpointWindowMissed") missed = &a;
  }
  ASSERT_NE(missed, nullptr);
  EXPECT_EQ(missed->state, AlertState::kFiring);  // for: 0s
  const auto doc = nlohmann::json::parse(alerts_json(active));
  bool found = false;
  for (const auto& a : doc["data"]["alerts"]) {
    if (a["labels"]["alertname"] != "CheckpointWindowMissed") continue;
    found = true;
    EXPECT_EQ(a["annotations"]["cause"], "storage_bandwidth");
    EXPECT_EQ(a["annotations"]["evidence"], "the tier wrote 950.0 MiB/s during the window");
  }
  EXPECT_TRUE(found);

  // The next checkpoint was on time: the alert clears.
  s.figs.storage_path.last_slow[0].verdict.slow = false;
  auto cs = s.conditions();
  EXPECT_EQ(find(cs, "CheckpointWindowMissed", "rapid", "llama")->signal, Signal::kClear);
}

TEST(AlertConditions, RecoveryTimeObjectiveHysteresisAndUnknownHolds) {
  Scene s;
  auto signal = [&](std::optional<double> estimate) {
    auto& r = s.figs.storage_path.restore[0];
    r.estimate.reset();
    if (estimate)
      r.estimate = RestoreEstimate{2 * GiB, ReadSource::kCounters, 1000, 0, 0, *estimate};
    auto cs = s.conditions();
    return find(cs, "CheckpointRecoveryTimeObjectiveAtRisk", "rapid", "llama")->signal;
  };
  // Objective 30 s, clear at 0.9 x 30 = 27 s.
  EXPECT_EQ(signal(31), Signal::kFire);
  EXPECT_EQ(signal(30), Signal::kHold);
  EXPECT_EQ(signal(27.5), Signal::kHold);
  EXPECT_EQ(signal(27), Signal::kClear);
  EXPECT_EQ(signal(std::nullopt), Signal::kHold);  // unknown is not "meets the objective"
  // No objective configured: no condition at all.
  s.figs.storage_path.restore[0].objective_seconds = 0;
  auto cs = s.conditions();
  EXPECT_EQ(find(cs, "CheckpointRecoveryTimeObjectiveAtRisk", "rapid", "llama"), nullptr);
}

TEST(AlertConditions, EveryAlertHasARunbookSection) {
  std::ifstream in(std::string(CKPTMON_SOURCE_DIR) + "/docs/runbook.md");
  ASSERT_TRUE(in) << "docs/runbook.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  for (const AlertSpec& spec : alert_table()) {
    EXPECT_NE(text.find("\n## " + std::string(spec.name()) + "\n"), std::string::npos)
        << spec.name();
  }
}

// Issue 9.10: `for:` counts monotonic time, and activeAt is the wall time
// minus the monotonic time since: a wall clock stepped back an hour neither
// stops the alert from firing nor puts activeAt in the future.
TEST(AlertEvaluator, AWallClockJumpingBackDoesNotDelayFiringOrPutTimesInTheFuture) {
  AlertEvaluator ev(300);
  std::vector<AlertCondition> c{cond(Signal::kFire, 60)};
  ev.evaluate(c, 10'000, 100);
  ASSERT_EQ(ev.active().size(), 1u);
  EXPECT_EQ(ev.active()[0].active_at, 10'000);
  ev.evaluate(c, 10'030 - 3600, 130);  // 30 s later, the wall an hour back
  ASSERT_EQ(ev.active().size(), 1u);
  EXPECT_TRUE(ev.firing().empty());
  EXPECT_EQ(ev.active()[0].active_at, 10'000 - 3600);  // now - 30 s
  ev.evaluate(c, 10'060 - 3600, 160);                  // 60 s of `for:`
  ASSERT_EQ(ev.firing().size(), 1u);
  const AlertInstance a = ev.firing()[0];
  EXPECT_EQ(a.active_at, 10'000 - 3600);
  EXPECT_EQ(a.fired_at, 10'060 - 3600);
  EXPECT_LE(a.active_at, 10'060 - 3600);

  // Restored by another process whose wall clock is behind the saved times:
  // reported as "now", never later.
  AlertEvaluator ev2(300);
  AlertInstance saved = a;
  saved.active_at = 50'000;
  saved.fired_at = 50'010;
  ev2.restore(std::vector<AlertInstance>{saved});
  ev2.evaluate(c, 20'000, 7);
  ASSERT_EQ(ev2.firing().size(), 1u);
  EXPECT_EQ(ev2.firing()[0].active_at, 20'000);
  EXPECT_EQ(ev2.firing()[0].fired_at, 20'000);
  ev2.evaluate(c, 20'015, 22);
  EXPECT_EQ(ev2.firing()[0].active_at, 20'000);  // 15 s later, 15 s older
}

// Fires at three failed writes in a row (where /-/ready fails), clears once a
// write succeeds, holds between.
TEST(AlertConditions, StateWriteFailingFollowsTheFailuresInARow) {
  Scene s;
  auto signal_at = [&](std::uint64_t n) {
    s.self.store_consecutive_errors = n;
    auto cs = s.conditions();
    const AlertCondition* c = find(cs, "CkptmonStateWriteFailing", "", "");
    EXPECT_NE(c, nullptr);
    return c == nullptr ? Signal::kClear : c->signal;
  };
  EXPECT_EQ(signal_at(0), Signal::kClear);
  EXPECT_EQ(signal_at(2), Signal::kHold);
  EXPECT_EQ(signal_at(3), Signal::kFire);
  s.cfg.rules.state_write_failing.enabled = false;
  auto cs = s.conditions();
  EXPECT_EQ(find(cs, "CkptmonStateWriteFailing", "", ""), nullptr);
}

TEST(AlertConditions, GpuAlertsNeedConsecutiveDropsAndHoldOnHysteresis) {
  // min_drop_ratio 0.5 (clears at 0.4), at least 30 GPU-seconds lost (clears
  // at 15), consecutive 3; goodput 5 % / 4 %
  AlertingConfig cfg;
  RuleFigures f;
  GpuJobFigures g;
  g.job = "j";
  g.gpus = 2;
  g.gpu_seconds_in_window = 1000;
  auto signal = [&](std::string_view name) {
    f.gpu_jobs = {g};
    for (const auto& c : alert_conditions(f, {}, cfg)) {
      if (c.labels.alertname == name) return c.signal;
    }
    ADD_FAILURE() << name;
    return Signal::kClear;
  };
  auto stall = [&](std::vector<double> drops, std::vector<double> losses) {
    g.drops = std::move(drops);
    g.losses = std::move(losses);
    return signal("CheckpointStallingGPUs");
  };
  EXPECT_EQ(stall({0.6, 0.6}, {40, 40}), Signal::kHold);  // two of three
  EXPECT_EQ(stall({0.6, 0.6, 0.6}, {40, 40, 40}), Signal::kFire);
  EXPECT_EQ(stall({0.6, 0.2, 0.6, 0.6}, {40, 40, 40, 40}), Signal::kHold);   // not three in a row
  EXPECT_EQ(stall({0.6, 0.6, 0.6, 0.45}, {40, 40, 40, 40}), Signal::kHold);  // between 0.4 and 0.5
  EXPECT_EQ(stall({0.6, 0.6, 0.6, 0.4}, {40, 40, 40, 40}), Signal::kClear);  // at 0.4 clears
  // The floor: large drops that cost next to nothing (a save of milliseconds
  // over one sample bucket) never fire.
  EXPECT_EQ(stall({0.9, 0.9, 0.9}, {0.1, 0.2, 0.1}), Signal::kClear);
  EXPECT_EQ(stall({0.9, 0.9, 0.9}, {40, 29, 40}), Signal::kHold);   // one under 30
  EXPECT_EQ(stall({0.9, 0.9, 0.9}, {40, 40, 20}), Signal::kHold);   // between 15 and 30
  EXPECT_EQ(stall({0.9, 0.9, 0.9}, {40, 40, 15}), Signal::kClear);  // at 15 clears
  EXPECT_EQ(stall({}, {}), Signal::kHold);                          // nothing known yet
  g.lost_in_window = 51;
  EXPECT_EQ(signal("CheckpointGoodputLow"), Signal::kFire);  // 5.1 %
  g.lost_in_window = 45;
  EXPECT_EQ(signal("CheckpointGoodputLow"), Signal::kHold);  // 4.5 %
  g.lost_in_window = 40;
  EXPECT_EQ(signal("CheckpointGoodputLow"), Signal::kClear);  // 4 %
}

// Issue 26.3: a figure oscillating around its threshold gives one firing, not
// one per crossing. Through the evaluator the daemon runs: a checkpoint a
// minute whose drop alternates 0.55 / 0.45 and whose cost alternates 35 / 25
// GPU-seconds, for two hours. Without the clear thresholds (clear at the
// fire threshold) the same series fires and resolves at each crossing.
TEST(AlertConditions, AStallFigureOscillatingAroundItsThresholdFiresOnce) {
  const auto firings = [](const AlertingConfig& cfg) {
    AlertEvaluator ev;
    GpuJobFigures g;
    g.job = "j";
    g.gpus = 8;
    g.gpu_seconds_in_window = 8 * 3600;
    int fired = 0;
    int resolved = 0;
    for (int i = 0; i < 120; ++i) {
      // Three stalls in a row first, then the oscillation.
      const bool high = i < 3 || i % 2 == 0;
      g.drops.push_back(high ? 0.55 : 0.45);
      g.losses.push_back(high ? 35 : 25);
      RuleFigures f;
      f.gpu_jobs = {g};
      const auto cs = alert_conditions(f, {}, cfg);
      for (const auto& t : ev.evaluate(cs, 1'000'000.0 + 60.0 * i)) {
        if (t.labels.alertname != "CheckpointStallingGPUs") continue;
        if (t.to == AlertState::kFiring) ++fired;
        if (t.from == AlertState::kFiring && t.to == AlertState::kInactive) ++resolved;
      }
    }
    return std::make_pair(fired, resolved);
  };
  AlertingConfig cfg;
  cfg.rules.goodput_low.enabled = false;
  EXPECT_EQ(firings(cfg), std::make_pair(1, 0));

  // The same series with the clear thresholds at the fire thresholds (no
  // hysteresis): a firing for every stall after a calm checkpoint.
  cfg.rules.stalling_gpus.clear_drop_ratio = cfg.rules.stalling_gpus.min_drop_ratio;
  cfg.rules.stalling_gpus.clear_lost_gpu_seconds = cfg.rules.stalling_gpus.min_lost_gpu_seconds;
  cfg.rules.stalling_gpus.consecutive = 1;
  const auto [fired, resolved] = firings(cfg);
  EXPECT_GT(fired, 50);
  EXPECT_GT(resolved, 50);
}

}  // namespace
}  // namespace ckptmon

namespace ckptmon {
namespace {

// The alert table: each row sits at its AlertId, names are unique, every
// daemon row has a policy rule and every Prometheus-only one none, and a
// threshold from the policy reaches the rendered Prometheus rule (here a
// used_ratio of 0.9 instead of the default 0.95, and its hysteresis join).
TEST(AlertTable, RowsMatchTheirIdsAndThresholdsComeFromThePolicy) {
  std::set<std::string_view> names;
  AlertRules rules;
  for (std::size_t i = 0; i < alert_table().size(); ++i) {
    const AlertSpec& s = alert_table()[i];
    EXPECT_EQ(static_cast<std::size_t>(s.id), i) << s.name();
    EXPECT_TRUE(names.insert(s.name()).second) << s.name();
    EXPECT_EQ(alert_rule(rules, s.id) != nullptr, s.daemon) << s.name();
    EXPECT_FALSE(s.fire.empty()) << s.name();
  }
  AlertingConfig a;
  a.rules.tier_almost_full.used_ratio = 0.9;
  a.rules.tier_almost_full.for_seconds = 120;
  a.rules.tier_down.enabled = false;
  const std::string y = render_prometheus_rules(a);
  EXPECT_NE(y.find("(ckpt_tier_size_bytes > 0) > 0.9)\n"), std::string::npos) << y;
  EXPECT_NE(y.find("(ckpt_tier_size_bytes > 0) > 0.93)\n"
                   "            and on (instance, job, tier)\n"
                   "          ALERTS{alertname=\"CheckpointTierAlmostFull\"})"),
            std::string::npos)
      << y;
  EXPECT_NE(y.find("- alert: CheckpointTierAlmostFull\n        expr: |"), std::string::npos);
  EXPECT_NE(y.find("        for: 2m\n        labels:\n          severity: critical"),
            std::string::npos);
  EXPECT_EQ(y.find("CheckpointTierDown"), std::string::npos);  // disabled: left out
  EXPECT_EQ(y.find("${"), std::string::npos);                  // every placeholder filled
  EXPECT_NE(render_runbook_index(a).find("| [CkptmonDown](#ckptmondown) | critical | 5m | "
                                         "Prometheus |"),
            std::string::npos);
}

}  // namespace
}  // namespace ckptmon

namespace ckptmon {
namespace {

// The durable lag against each job's own durable_within: 30 min under a 1 h
// default is clear, 3 h over a job policy of 2 h fires.
TEST(AlertConditions, NotDurableComparesTheLagWithTheJobsDurableWithin) {
  RuleFigures figs;
  figs.now = 1e9;
  DurabilityFigures quick;
  quick.job = "a";
  quick.durable_known = true;
  quick.durable_lag_seconds = 1800;
  DurabilityFigures slow = quick;
  slow.job = "b";
  slow.durable_lag_seconds = 3 * 3600;
  slow.policy.durable_within_seconds = 2 * 3600;
  DurabilityFigures ok = slow;
  ok.job = "c";
  ok.policy.durable_within_seconds = 4 * 3600;
  figs.durability = {quick, slow, ok};
  const auto cs = alert_conditions(figs, {}, AlertingConfig{});
  const auto signal = [&](std::string_view job) {
    const AlertCondition* c = find(cs, "CheckpointRecoveryPointNotDurable", "", job);
    return c ? c->signal : Signal::kHold;
  };
  EXPECT_EQ(signal("a"), Signal::kClear);
  EXPECT_EQ(signal("b"), Signal::kFire);
  EXPECT_EQ(signal("c"), Signal::kClear);
  const AlertCondition* b = find(cs, "CheckpointRecoveryPointNotDurable", "", "b");
  EXPECT_EQ(b->value, 3 * 3600);
  EXPECT_NE(b->description.find("(none yet) has waited 3h"), std::string::npos) << b->description;
  EXPECT_NE(b->description.find("costs its newest steps"), std::string::npos) << b->description;
}

// Free inodes oscillating around the 5 % floor: one firing, held between
// 5 % and 7 %, cleared at 7 %; an unknown inode count holds.
TEST(AlertConditions, InodesLowHasHysteresisAndUnknownHolds) {
  std::map<std::string, TierState> tiers;
  AlertingConfig cfg;
  cfg.rules.tier_inodes_low.for_seconds = 0;
  AlertEvaluator ev;
  int fired = 0;
  double t = 0;
  const auto cycle = [&](bool known, double free, double needed) {
    RuleFigures f;
    f.now = (t += 60);
    CapacityFigures c;
    c.tier = "fast";
    c.files_known = known;
    c.files_total = 1000;
    c.files_free = free;
    c.still_needed_files = needed;
    f.capacity.push_back(c);
    for (const AlertTransition& x : ev.evaluate(alert_conditions(f, tiers, cfg), f.now, f.now)) {
      if (x.labels.alertname == "CheckpointTierInodesLow" && x.to == AlertState::kFiring) ++fired;
    }
    return ev.firing().size();
  };
  EXPECT_EQ(cycle(true, 100, 10), 0u);  // 10 % free
  EXPECT_EQ(cycle(true, 40, 10), 1u);   // 4 %: fires
  for (double free : {60.0, 49.0, 66.0, 45.0, 51.0}) EXPECT_EQ(cycle(true, free, 10), 1u);
  EXPECT_EQ(cycle(false, 0, 0), 1u);     // unknown holds
  EXPECT_EQ(cycle(true, 70, 10), 0u);    // 7 %: clears
  EXPECT_EQ(cycle(true, 200, 250), 1u);  // 20 % free, but the sizing rule needs 250
  EXPECT_EQ(cycle(true, 255, 250), 1u);  // within clear_margin_ratio of the need: holds
  EXPECT_EQ(cycle(true, 263, 250), 0u);  // 263 >= 250 x 1.05: clears
  EXPECT_EQ(fired, 2);
  EXPECT_EQ(cycle(false, 0, 0), 0u);  // unknown never starts one
}

TEST(AlertConditions, AccessFindingCountsTheConfiguredKindsAndAWalkCutShortHolds) {
  std::map<std::string, TierState> tiers;
  AlertingConfig cfg;
  RuleFigures f;
  AccessFigures a;
  a.tier = "rapid";
  a.known = true;
  a.by_kind[static_cast<std::size_t>(FindingKind::kWorldReadable)] = 4;
  f.access.push_back(a);
  AccessFigures cut;
  cut.tier = "slow";  // its walk did not finish
  f.access.push_back(cut);
  auto cs = alert_conditions(f, tiers, cfg);
  EXPECT_EQ(find(cs, "CheckpointAccessFinding", "rapid", "")->signal, Signal::kClear);
  EXPECT_EQ(find(cs, "CheckpointAccessFinding", "slow", "")->signal, Signal::kHold);
  cfg.rules.access_finding.kinds = {FindingKind::kWorldReadable};
  cs = alert_conditions(f, tiers, cfg);
  const AlertCondition* c = find(cs, "CheckpointAccessFinding", "rapid", "");
  EXPECT_EQ(c->signal, Signal::kFire);
  EXPECT_EQ(c->value, 4);
  EXPECT_NE(c->description.find("found 4 world_readable;"), std::string::npos) << c->description;
  const std::string y = render_prometheus_rules(cfg);
  EXPECT_NE(y.find("ckpt_access_findings{kind=~\"world_readable\"}"), std::string::npos);
}

TEST(AlertConditions, IntegrityNeedsTheVerifierAndSavesFailingHoldsBelowItsMinimum) {
  std::map<std::string, TierState> tiers;
  AlertingConfig cfg;
  cfg.rules.saves_failing.min_failures = 2;
  RuleFigures f;
  JobTierFigures j;
  j.tier = "rapid";
  j.job = "llama";
  f.job_tiers.push_back(j);
  f.save_failures.push_back({"rapid", "llama", 1, 0, ""});
  f.save_failures.push_back({"rapid", "bert", 0, 0, ""});
  auto cs = alert_conditions(f, tiers, cfg);
  EXPECT_EQ(find(cs, "CheckpointIntegrityFailed", "rapid", "llama"), nullptr);  // unknown
  EXPECT_EQ(find(cs, "CheckpointSavesFailing", "rapid", "llama")->signal, Signal::kHold);
  EXPECT_EQ(find(cs, "CheckpointSavesFailing", "rapid", "bert")->signal, Signal::kClear);
  f.integrity_known = true;
  cs = alert_conditions(f, tiers, cfg);
  EXPECT_EQ(find(cs, "CheckpointIntegrityFailed", "rapid", "llama")->signal, Signal::kClear);
}

// evaluate_rules: failed verifications per (tier, job) among committed
// checkpoints, and checkpoint_failed events within the window.
TEST(RuleFiguresOf, IntegrityFailuresAndRecentSaveFailures) {
  std::map<std::string, TierState> tiers;
  tiers["rapid"] = tier_state("rapid", TierRole::kRapid, "", 1000, 500);
  std::vector<Checkpoint> cks{Ck("rapid", "a", 100).committed(10, 10, 20),
                              Ck("rapid", "a", 200).committed(10, 110, 120),
                              Ck("rapid", "a", 300).committed(10, 210, 220)};
  Verifications ver{{{"rapid", "a/step-100"}, false},
                    {{"rapid", "a/step-200"}, false},
                    {{"rapid", "a/step-300"}, true}};
  EventCatalog ev;
  const double now = 10'000;
  ev.jobs[{"rapid", "a"}].recent_failures = {
      {1, now - 7200, "too old"}, {2, now - 1800, "EIO"}, {3, now - 60, "ENOSPC"}};
  ev.jobs[{"gone", "a"}].recent_failures = {{1, now - 60, "not a configured tier"}};
  RulesPolicy policy;
  const RuleFigures f = evaluate_rules(tiers, cks, {}, ver, policy, now, {}, &ev);
  ASSERT_EQ(f.job_tiers.size(), 1u);
  EXPECT_EQ(f.job_tiers[0].integrity_failed, 2u);
  EXPECT_EQ(f.job_tiers[0].integrity_failed_step, 200);
  ASSERT_EQ(f.save_failures.size(), 1u);
  EXPECT_EQ(f.save_failures[0].recent, 2u);  // within the default 1h
  EXPECT_EQ(f.save_failures[0].last_reason, "ENOSPC");
  // Without an event log nothing is known: no rows, not zeros.
  EXPECT_TRUE(evaluate_rules(tiers, cks, {}, ver, policy, now).save_failures.empty());
}

}  // namespace
}  // namespace ckptmon
