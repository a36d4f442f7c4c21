#include "rules/estate.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rules/recovery.hpp"
#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

// Node-local staging (not durable) draining to a shared rapid tier, and a
// deletion queue.
std::map<std::string, TierState> estate_tiers() {
  std::map<std::string, TierState> tiers;
  tiers["staging"] = tier_state("staging", TierRole::kStaging, "rapid");
  tiers["staging"].config.durable = false;
  tiers["rapid"] = tier_state("rapid", TierRole::kRapid);
  tiers["trash"] = tier_state("trash", TierRole::kDeletion);
  return tiers;
}

std::vector<DurabilityFigures> figures(const std::vector<Checkpoint>& cks,
                                       const std::map<std::string, TierState>& tiers,
                                       const EstatePolicy& policy, double now,
                                       const Verifications& verified = {}) {
  std::set<std::string> skip;
  for (const auto& [name, t] : tiers) {
    if (t.config.role == TierRole::kDeletion) skip.insert(name);
  }
  const auto recovery = evaluate_recovery(cks, verified, skip);
  const auto versions = join_versions(cks, tiers, verified);
  return evaluate_durability(versions, recovery, cks, tiers, verified, policy, now);
}

TEST(RulesEstate, VersionsJoinCopiesAcrossTiersByJobAndStep) {
  std::vector<Checkpoint> cks{
      Ck("staging", "a", 300).committed(10, 290, 300),
      Ck("rapid", "a", 300).committed(10, 350, 360),
      Ck("rapid", "a", 200).committed(10, 190, 200),
      Ck("staging", "a", 400).in_progress(4, 390, 395),
      Ck("trash", "a", 100).committed(10, 90, 100),
      Ck("elsewhere", "a", 300).committed(10, 1, 2),  // a tier this estate does not hold
  };
  const auto v = join_versions(cks, estate_tiers(), {});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].step, 100);
  EXPECT_FALSE(v[0].restorable);  // only in the deletion queue
  EXPECT_EQ(v[1].step, 200);
  EXPECT_EQ(v[1].durable_copies, 1u);
  EXPECT_EQ(v[2].step, 300);
  ASSERT_EQ(v[2].copies.size(), 2u);
  EXPECT_TRUE(v[2].restorable);
  EXPECT_EQ(v[2].durable_copies, 1u);  // rapid's; staging is node-local
  EXPECT_EQ(v[2].commit_time, 300);    // the first copy to commit
  EXPECT_EQ(v[3].step, 400);
  EXPECT_FALSE(v[3].restorable);
}

TEST(RulesEstate, NewestCopyDurableMeansNothingAtRisk) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 300).committed(10, 290, 300),
                              Ck("rapid", "a", 300).committed(10, 350, 360)};
  const auto f = figures(cks, estate_tiers(), {}, 1000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].durable_known);
  EXPECT_TRUE(f[0].durable.restorable);
  EXPECT_EQ(f[0].durable.step, 300);
  EXPECT_EQ(f[0].durable.tier, "rapid");
  ASSERT_TRUE(f[0].steps_at_risk.has_value());
  EXPECT_EQ(*f[0].steps_at_risk, 0);
  EXPECT_EQ(f[0].durable_lag_seconds, 0);
  EXPECT_EQ(f[0].versions, 1u);
  EXPECT_EQ(f[0].versions_under_copied, 0u);
}

TEST(RulesEstate, NewestCopyNodeLocalPutsItsStepsAtRisk) {
  // Steps 700 and 900 only on node-local staging; the newest durable is 500.
  std::vector<Checkpoint> cks{Ck("rapid", "a", 500).committed(10, 100, 120),
                              Ck("staging", "a", 500).committed(10, 90, 100),
                              Ck("staging", "a", 700).committed(10, 190, 200),
                              Ck("staging", "a", 900).committed(10, 290, 300)};
  const auto f = figures(cks, estate_tiers(), {}, 5000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].durable.step, 500);
  EXPECT_EQ(*f[0].steps_at_risk, 400);  // 900 - 500
  // The oldest version newer than the durable point (700, committed at 200)
  // has waited 4800 s.
  EXPECT_DOUBLE_EQ(f[0].durable_lag_seconds, 4800);
  EXPECT_EQ(f[0].versions, 3u);
  // 700 and 900 are older than durable_within (3600 s) with no durable copy.
  EXPECT_EQ(f[0].versions_under_copied, 2u);
}

TEST(RulesEstate, NothingDurableYetRisksTheWholeStep) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 900).committed(10, 290, 300)};
  const auto f = figures(cks, estate_tiers(), {}, 400);
  EXPECT_FALSE(f[0].durable.restorable);
  EXPECT_EQ(*f[0].steps_at_risk, 900);
  EXPECT_DOUBLE_EQ(f[0].durable_lag_seconds, 100);
  EXPECT_EQ(f[0].versions_under_copied, 0u);  // within durable_within still
}

TEST(RulesEstate, NoDurableTierWatchedIsUnknownNotZero) {
  std::map<std::string, TierState> tiers;
  tiers["staging"] = tier_state("staging", TierRole::kStaging);
  tiers["staging"].config.durable = false;
  std::vector<Checkpoint> cks{Ck("staging", "a", 900).committed(10, 290, 300)};
  const auto f = figures(cks, tiers, {}, 99999);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].durable_known);
  EXPECT_FALSE(f[0].steps_at_risk.has_value());
  EXPECT_EQ(f[0].versions_under_copied, 0u);
  EXPECT_EQ(f[0].versions, 1u);
}

TEST(RulesEstate, UnderCopiedCountsAgainstThePolicyOfTheJob) {
  std::map<std::string, TierState> tiers = estate_tiers();
  tiers["capacity"] = tier_state("capacity", TierRole::kCapacity);
  std::vector<Checkpoint> cks{
      Ck("rapid", "llama", 100).committed(10, 10, 20),
      Ck("capacity", "llama", 100).committed(10, 30, 40),
      Ck("rapid", "llama", 200).committed(10, 110, 120),
      Ck("rapid", "gpt", 100).committed(10, 10, 20),
  };
  EstatePolicy policy;
  EstateJobRule rule;
  rule.job_regex = "llama.*";
  rule.regex = std::make_shared<const std::regex>("llama.*");
  rule.policy.copies_required = 2;
  rule.policy.durable_within_seconds = 60;
  policy.jobs.push_back(rule);
  const auto f = figures(cks, tiers, policy, 1000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].job, "gpt");
  EXPECT_EQ(f[0].policy.copies_required, 1);
  EXPECT_EQ(f[0].versions_under_copied, 0u);
  EXPECT_EQ(f[1].job, "llama");
  EXPECT_EQ(f[1].policy.copies_required, 2);
  // Step 100 has two durable copies; step 200 only one.
  EXPECT_EQ(f[1].versions_under_copied, 1u);
}

TEST(RulesEstate, CopiesThatDisagreeOnSizeAreFlaggedNotCounted) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 300).committed(10, 290, 300),
                              Ck("rapid", "a", 300).committed(9, 350, 360)};
  const auto v = join_versions(cks, estate_tiers(), {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].durable_copies, 0u);
  ASSERT_EQ(v[0].copies.size(), 2u);
  EXPECT_EQ(v[0].copies[0].checkpoint->tier, "rapid");  // sorted by tier
  EXPECT_TRUE(v[0].copies[0].mismatched);
  EXPECT_FALSE(v[0].copies[1].mismatched);  // staging, the reference: first to commit
  const auto f = figures(cks, estate_tiers(), {}, 5000);
  EXPECT_EQ(f[0].mismatched_copies, 1u);
  EXPECT_EQ(f[0].versions_under_copied, 1u);
  // Nor is the short copy the durable recovery point: nothing durable yet.
  EXPECT_FALSE(f[0].durable.restorable);
  EXPECT_EQ(*f[0].steps_at_risk, 300);
  EXPECT_DOUBLE_EQ(f[0].durable_lag_seconds, 4700);  // since staging's commit at 300
}

TEST(RulesEstate, AFailedVerificationIsNotADurableCopy) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 300).committed(10, 290, 300),
                              Ck("rapid", "a", 300).committed(10, 350, 360),
                              Ck("rapid", "a", 200).committed(10, 190, 200)};
  Verifications ver{{{"rapid", "a/step-300"}, false}};
  const auto f = figures(cks, estate_tiers(), {}, 400, ver);
  EXPECT_EQ(f[0].durable.step, 200);
  EXPECT_EQ(*f[0].steps_at_risk, 100);
}

TEST(RulesEstate, WithoutStepsVersionsAreOrderedByCommitTime) {
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", -1).path("a/x.ckpt").committed(10, 1, 100),
      Ck("staging", "a", -1).path("a/x.ckpt").committed(10, 1, 90),
      Ck("staging", "a", -1).path("a/y.ckpt").committed(10, 1, 200),
  };
  const auto f = figures(cks, estate_tiers(), {}, 500);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].durable.path, "a/x.ckpt");
  EXPECT_FALSE(f[0].steps_at_risk.has_value());     // no steps to subtract
  EXPECT_DOUBLE_EQ(f[0].durable_lag_seconds, 300);  // y.ckpt, committed at 200
}

// A drain that keeps the source's times (cp -p, rsync -t) ties with it: the
// copy on the drain source is the original, the short one on rapid is flagged.
TEST(RulesEstate, OnATieTheDrainSourceIsTheReference) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 300).committed(10, 290, 300),
                              Ck("rapid", "a", 300).committed(9, 290, 300)};
  const auto v = join_versions(cks, estate_tiers(), {});
  ASSERT_EQ(v.size(), 1u);
  ASSERT_EQ(v[0].copies.size(), 2u);
  EXPECT_EQ(v[0].copies[0].checkpoint->tier, "rapid");  // sorted by tier
  EXPECT_TRUE(v[0].copies[0].mismatched);
  EXPECT_FALSE(v[0].copies[1].mismatched);
  EXPECT_EQ(v[0].durable_copies, 0u);
}

}  // namespace
}  // namespace ckptmon
