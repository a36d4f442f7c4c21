// The deletion queue and verified removal (issue 28 item 6): a role:
// deletion tier holds what is on its way out, a cleanup event is checked
// against what the walk still finds.
#include <gtest/gtest.h>

#include "model/events.hpp"
#include "rules/evaluate.hpp"
#include "rules/retention.hpp"
#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

Checkpoint seen_at(Checkpoint c, double first_seen) {
  c.first_seen = first_seen;
  return c;
}

TEST(DeletionQueue, EverythingOnTheTierIsPendingAgedFromWhenTheWalkFirstSawIt) {
  const std::vector<Checkpoint> cks = {
      seen_at(Ck("trash", "a", 100).committed(1000, 10, 20), 5000),
      // Partial or committed, on a deletion tier it is on its way out all the same.
      seen_at(Ck("trash", "b", 7).partial(300, 10, 20), 4000),
      seen_at(Ck("rapid", "a", 200).committed(9999, 10, 20), 1000),  // another tier
  };
  const DeletionQueueFigures f = evaluate_deletion_queue(cks, "trash", 10'000);
  EXPECT_EQ(f.checkpoints, 2u);
  EXPECT_EQ(f.bytes, 1300u);
  EXPECT_EQ(f.oldest_age_seconds, 6000);
  EXPECT_EQ(f.oldest_path, "b/step-7");
  // Empty: no age; a clock stepped back below first_seen: 0, not negative.
  EXPECT_EQ(evaluate_deletion_queue({}, "trash", 10'000).oldest_age_seconds, 0);
  EXPECT_EQ(evaluate_deletion_queue(cks, "trash", 3000).oldest_age_seconds, 0);
}

TEST(DeletionQueue, ADeletionTierHasNoSizingRuleNoRetentionAndNoRecoveryPoint) {
  std::map<std::string, TierState> tiers;
  tiers["rapid"] = tier_state("rapid", TierRole::kRapid, "", 1e9, 5e8);
  tiers["trash"] = tier_state("trash", TierRole::kDeletion, "", 1e9, 5e8);
  const std::vector<Checkpoint> cks = {
      seen_at(Ck("trash", "a", 900).committed(4000, 10, 20), 100),
      seen_at(Ck("rapid", "a", 100).committed(1000, 10, 20), 100),
  };
  RulesPolicy policy;
  const RuleFigures f = evaluate_rules(tiers, cks, {}, {}, policy, 1000);
  const CapacityFigures* trash = nullptr;
  const CapacityFigures* rapid = nullptr;
  for (const auto& c : f.capacity) (c.tier == "trash" ? trash : rapid) = &c;
  ASSERT_NE(trash, nullptr);
  ASSERT_NE(rapid, nullptr);
  EXPECT_EQ(trash->required_bytes, 0);
  EXPECT_EQ(trash->size_bytes, 1e9);  // its file-system figures stay
  // The rapid tier's one 1000 B checkpoint, by the sizing rule (docs/rules.md):
  // keep_last versions of the latest size x replicas x (1 + growth headroom)
  // + the next checkpoint's allowance (a fraction of the latest one).
  const SizingPolicy sizing;
  const RetentionPolicy retention;
  EXPECT_DOUBLE_EQ(rapid->required_bytes, static_cast<double>(retention.keep_last) * 1000 *
                                                  sizing.replicas *
                                                  (1 + sizing.growth_headroom_ratio) +
                                              sizing.temp_write_allowance_ratio * 1000);
  // No retention figures and no cleanup age for it: the queue says it all.
  for (const auto& r : f.retention) EXPECT_NE(r.tier, "trash");
  EXPECT_FALSE(f.cleanup_oldest_age_seconds.contains("trash"));
  ASSERT_EQ(f.deletion_queue.size(), 1u);
  EXPECT_EQ(f.deletion_queue[0].bytes, 4000u);
  EXPECT_EQ(f.deletion_queue[0].oldest_age_seconds, 900);
  // Its step 900 is newer than rapid's 100, yet not a recovery point.
  ASSERT_EQ(f.recovery.size(), 1u);
  EXPECT_EQ(f.recovery[0].step, 100);
}

EventCatalog cleanups_at(std::vector<std::pair<StepKey, double>> steps) {
  EventCatalog ev;
  for (auto& [key, ts] : steps) {
    EventStep s;
    s.cleanups = 1;
    s.last_event_ts = ts;
    ev.steps[key] = s;
  }
  return ev;
}

TEST(CleanupVerification, ACleanupWhoseCheckpointIsStillFoundLaterIsUnverified) {
  const std::vector<Checkpoint> cks = {
      Ck("rapid", "a", 100).committed(1000, 10, 20),  // cleanup at 1000, still there
      Ck("rapid", "a", 300).committed(3000, 10, 20),  // cleanup at 1950: too recent to judge
      Ck("rapid", "b", 100).committed(500, 10, 20),   // no cleanup event
  };
  // a/200 was cleaned up and is gone: verified, nothing to report.
  const EventCatalog ev = cleanups_at({{StepKey{"rapid", "a", 100}, 1000},
                                       {StepKey{"rapid", "a", 200}, 1000},
                                       {StepKey{"rapid", "a", 300}, 1950}});
  auto after = [](const std::string&) { return 60.0; };
  auto f = evaluate_cleanup_verification(cks, &ev, after, 2000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tier, "rapid");
  EXPECT_EQ(f[0].job, "a");
  EXPECT_EQ(f[0].checkpoints, 1u);
  EXPECT_EQ(f[0].bytes, 1000u);
  ASSERT_EQ(f[0].entries.size(), 1u);
  EXPECT_EQ(f[0].entries[0].path, "a/step-100");
  EXPECT_EQ(f[0].entries[0].step, 100);
  EXPECT_EQ(f[0].entries[0].bytes, 1000u);
  EXPECT_EQ(f[0].entries[0].cleaned_at, 1000);
  // Once verify_after has passed for step 300 as well.
  f = evaluate_cleanup_verification(cks, &ev, after, 2011);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checkpoints, 2u);
  // A cleanup event on another tier says nothing about this one's copy.
  const EventCatalog elsewhere = cleanups_at({{StepKey{"capacity", "a", 100}, 1000}});
  EXPECT_TRUE(evaluate_cleanup_verification(cks, &elsewhere, after, 5000).empty());
  // No event log: nothing judged (unknown), not "all verified".
  EXPECT_TRUE(evaluate_cleanup_verification(cks, nullptr, after, 5000).empty());
}

UnverifiedCleanupFigures unverified(const std::string& job, std::vector<std::string> paths) {
  UnverifiedCleanupFigures f;
  f.tier = "rapid";
  f.job = job;
  for (std::string& p : paths) f.entries.push_back({std::move(p), 0, 0, 0});
  f.checkpoints = f.entries.size();
  return f;
}

TEST(CleanupVerification, TheCounterCountsEachUnverifiedCleanupOnceWhileItLasts) {
  UnverifiedCleanupCounter n;
  using Key = std::pair<std::string, std::string>;
  n.observe({unverified("a", {"a/1", "a/2"})});
  EXPECT_EQ(n.totals().at(Key("rapid", "a")), 2u);
  // Still there next cycle: the same two, not counted again.
  n.observe({unverified("a", {"a/1", "a/2"})});
  EXPECT_EQ(n.totals().at(Key("rapid", "a")), 2u);
  // a/1 went (removed late); a/3 is new; job b's first.
  n.observe({unverified("a", {"a/2", "a/3"}), unverified("b", {"b/9"})});
  EXPECT_EQ(n.totals().at(Key("rapid", "a")), 3u);
  EXPECT_EQ(n.totals().at(Key("rapid", "b")), 1u);
  // Nothing unverified: the totals stay (a counter), the series too.
  n.observe({});
  EXPECT_EQ(n.totals().at(Key("rapid", "a")), 3u);
  EXPECT_EQ(n.totals().size(), 2u);
  // a/1 back (written and cleaned up again): a new unverified cleanup.
  n.observe({unverified("a", {"a/1"})});
  EXPECT_EQ(n.totals().at(Key("rapid", "a")), 4u);
}

TEST(CleanupVerification, EachUnverifiedCleanupIsAFindingOfTheRulesNotOfTheWalk) {
  std::map<std::string, TierState> tiers;
  tiers["rapid"] = tier_state("rapid");
  const std::vector<Checkpoint> cks = {Ck("rapid", "a", 100).committed(2048, 10, 20),
                                       Ck("rapid", "a", 200).committed(10, 10, 20)};
  const EventCatalog ev = cleanups_at({{StepKey{"rapid", "a", 100}, 1000}});
  // 1000 + 300: past the one-minute floor a hand-built policy gets.
  const RuleFigures f = evaluate_rules(tiers, cks, {}, {}, RulesPolicy{}, 1300, {}, &ev);
  ASSERT_EQ(f.estate_findings.size(), 1u);
  const AccessFinding& x = f.estate_findings[0];
  EXPECT_EQ(x.kind, FindingKind::kCleanupUnverified);
  EXPECT_EQ(to_string(x.kind), "cleanup_unverified");
  EXPECT_EQ(x.tier, "rapid");
  EXPECT_EQ(x.job, "a");
  EXPECT_EQ(x.path, "a/step-100");
  EXPECT_EQ(
      x.detail,
      "a cleanup event said step 100 of job a was removed from tier rapid (the step's "
      "last event: 1970-01-01T00:16:40.000Z), but the walk still finds it (2.0 KiB) 5m later");
  // Not a walk's kind: ckpt_access_findings and CheckpointAccessFinding leave it out.
  EXPECT_FALSE(walk_finding_kind(x.kind));
  // Too recent to judge: nothing.
  EXPECT_TRUE(
      evaluate_rules(tiers, cks, {}, {}, RulesPolicy{}, 1030, {}, &ev).estate_findings.empty());
}

}  // namespace
}  // namespace ckptmon
