#include "rules/estate.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rules/evaluate.hpp"
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

// Milestones move from rapid to capacity after 7 days (drain.move_after).
TEST(RulesEstate, LifecycleCountsVersionsPastMoveAfterWithNoCopyOnTheTarget) {
  constexpr double kDay = 86400;
  std::map<std::string, TierState> tiers;
  tiers["rapid"] = tier_state("rapid", TierRole::kRapid, "capacity");
  tiers["capacity"] = tier_state("capacity", TierRole::kCapacity);
  tiers["lonely"] = tier_state("lonely", TierRole::kRapid, "unwatched");  // target not watched
  RulesPolicy policy;
  policy.tiers["rapid"].drain.move_after_seconds = 7 * kDay;
  policy.tiers["lonely"].drain.move_after_seconds = 7 * kDay;
  const double now = 8 * kDay;
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 100).committed(10, 10, 20),  // 8 days old, only on rapid: overdue
      Ck("rapid", "a", 200).committed(10, 10, 30),  // moved
      Ck("capacity", "a", 200).committed(10, 40, 50),
      Ck("rapid", "a", 300).committed(10, now - kDay, now - kDay + 5),  // young
      Ck("rapid", "a", 400).committed(10, 40, 50),  // its move is still being written: overdue
      Ck("capacity", "a", 400).in_progress(4, 60, 70),
      Ck("rapid", "a", 500).committed(10, 0, 0),  // no commit time: no age to judge
      Ck("lonely", "a", 100).committed(10, 10, 20),
  };
  const auto versions = join_versions(cks, tiers, {});
  const auto f = evaluate_lifecycle(versions, tiers, policy, now);
  // Only rapid: capacity has no move_after; lonely drains to a tier this
  // instance does not watch (a copy there is unknown, not missing).
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tier, "rapid");
  EXPECT_EQ(f[0].job, "a");
  EXPECT_EQ(f[0].drains_to, "capacity");
  EXPECT_EQ(f[0].move_after_seconds, 7 * kDay);
  EXPECT_EQ(f[0].overdue, 2u);
  EXPECT_EQ(f[0].oldest_overdue_step, 100);
  EXPECT_EQ(f[0].oldest_overdue_commit, 20);
  // A day later than the young one's move_after, it is overdue too.
  EXPECT_EQ(evaluate_lifecycle(versions, tiers, policy, now + 7 * kDay)[0].overdue, 3u);
}

NamespaceRule ns(const std::string& regex, std::vector<std::string> residency) {
  NamespaceRule r;
  r.job_regex = regex;
  r.regex = std::make_shared<const std::regex>(regex);
  r.residency = std::move(residency);
  return r;
}

// team-a may live in eu-west only; its checkpoints drain from an eu-west
// tier to a us-east one whose namespaces say nothing of team-a.
std::map<std::string, TierState> residency_tiers() {
  std::map<std::string, TierState> tiers;
  tiers["eu"] = tier_state("eu", TierRole::kRapid, "us");
  tiers["eu"].config.residency = "eu-west";
  tiers["eu"].config.namespaces = {ns("^team-a", {"eu-west"}), ns(".", {})};
  tiers["us"] = tier_state("us", TierRole::kCapacity);
  tiers["us"].config.residency = "us-east";
  return tiers;
}

TEST(RulesEstate, ResidencyFollowsEveryCopyOfTheJob) {
  std::vector<Checkpoint> cks{
      Ck("eu", "team-a-llama", 1).committed(10, 1, 2),
      Ck("us", "team-a-llama", 1).committed(10, 3, 4),   // drained across residencies
      Ck("us", "team-a-llama", 2).in_progress(4, 5, 6),  // a copy being written counts too
      Ck("us", "team-b-gpt", 1).committed(10, 1, 2),     // no rule restricts team-b
  };
  const auto tiers = residency_tiers();
  const ResidencyResult r = evaluate_residency(join_versions(cks, tiers, {}), tiers);
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].tier, "eu");
  EXPECT_EQ(r.figures[0].copies, 1u);
  EXPECT_EQ(r.figures[0].violations, 0u);
  EXPECT_EQ(r.figures[1].tier, "us");
  EXPECT_EQ(r.figures[1].job, "team-a-llama");
  EXPECT_EQ(r.figures[1].residency, "us-east");
  EXPECT_EQ(r.figures[1].allowed, std::vector<std::string>{"eu-west"});
  EXPECT_EQ(r.figures[1].copies, 2u);
  EXPECT_EQ(r.figures[1].violations, 2u);
  ASSERT_EQ(r.findings.size(), 2u);
  // Newest version first; each names the version, the tier and its residency.
  EXPECT_EQ(r.findings[0].tier, "us");
  EXPECT_EQ(r.findings[0].path, "team-a-llama/step-2");
  EXPECT_EQ(r.findings[0].kind, FindingKind::kResidency);
  EXPECT_EQ(r.findings[0].detail,
            "a copy of step 2 of job team-a-llama is on tier us (residency 'us-east'), outside "
            "the residencies the job's namespaces allow: eu-west");
  EXPECT_EQ(r.findings[1].path, "team-a-llama/step-1");
}

TEST(RulesEstate, ResidencyRulesOfSeveralTiersIntersect) {
  auto tiers = residency_tiers();
  tiers["eu"].config.namespaces = {ns("^team-a", {"eu-west", "eu-central"})};
  tiers["us"].config.namespaces = {ns("^team-a", {"eu-west", "us-east"})};
  std::vector<Checkpoint> cks{Ck("us", "team-a-llama", 1).committed(10, 3, 4)};
  const ResidencyResult r = evaluate_residency(join_versions(cks, tiers, {}), tiers);
  ASSERT_EQ(r.figures.size(), 1u);
  EXPECT_EQ(r.figures[0].allowed, std::vector<std::string>{"eu-west"});
  EXPECT_EQ(r.figures[0].violations, 1u);
  // us's own rule allows us-east, so its walk says nothing: the estate does.
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(r.findings[0].detail.find("allow: eu-west"), std::string::npos);
}

TEST(RulesEstate, ACopyItsOwnTiersAuditForbidsIsCountedNotReportedTwice) {
  auto tiers = residency_tiers();
  tiers["us"].config.namespaces = {ns("^team-a", {"eu-west"})};
  std::vector<Checkpoint> cks{Ck("us", "team-a-llama", 1).committed(10, 3, 4)};
  const ResidencyResult r = evaluate_residency(join_versions(cks, tiers, {}), tiers);
  ASSERT_EQ(r.figures.size(), 1u);
  EXPECT_EQ(r.figures[0].violations, 1u);
  EXPECT_TRUE(r.findings.empty());  // us's access audit reports the job directory
}

TEST(RulesEstate, NoResidencyRuleMeansNoResidencyFigures) {
  auto tiers = residency_tiers();
  tiers["eu"].config.namespaces.clear();
  std::vector<Checkpoint> cks{Ck("us", "team-a-llama", 1).committed(10, 3, 4)};
  const ResidencyResult r = evaluate_residency(join_versions(cks, tiers, {}), tiers);
  EXPECT_TRUE(r.figures.empty());
  EXPECT_TRUE(r.findings.empty());
}

TEST(RulesEstate, ResidencyFindingsAreCappedPerTierAndJobButAllCounted) {
  const auto tiers = residency_tiers();
  std::vector<Checkpoint> cks;
  const std::size_t n = ResidencyResult::kMaxFindingsPerTierJob + 5;
  for (std::size_t i = 0; i < n; ++i) {
    cks.push_back(Ck("us", "team-a-llama", static_cast<std::int64_t>(i)).committed(10, 3, 4));
  }
  const ResidencyResult r = evaluate_residency(join_versions(cks, tiers, {}), tiers);
  ASSERT_EQ(r.figures.size(), 1u);
  EXPECT_EQ(r.figures[0].violations, n);
  ASSERT_EQ(r.findings.size(), ResidencyResult::kMaxFindingsPerTierJob);
  EXPECT_EQ(r.findings.front().path, "team-a-llama/step-" + std::to_string(n - 1));
}

TEST(RulesEstate, EncryptionRequiredAndDetectedNoneIsAFindingUnknownIsNot) {
  std::map<std::string, TierState> tiers;
  auto tier = [&](const std::string& name, bool required, const std::string& at_rest,
                  const std::string& in_transit, bool up = true) {
    TierState t = tier_state(name, TierRole::kRapid, "", 1e9, 5e8);
    t.config.encryption_required = required;
    t.up = up;
    t.stats.encryption_at_rest = at_rest;
    t.stats.encryption_in_transit = in_transit;
    t.stats.encryption_detail = "detail of " + name;
    tiers[name] = t;
  };
  tier("plain", true, "none", "local");
  tier("wire", true, "unknown", "none");       // NFS in the clear: the server's disks unknown
  tier("vault", true, "unknown", "krb5p");     // cannot be told: not a violation
  tier("down", true, "none", "local", false);  // its last detection is not a fact about now
  tier("scratch", false, "none", "none");      // requires nothing
  const RuleFigures f = evaluate_rules(tiers, {}, {}, {}, RulesPolicy{}, 1000);
  std::map<std::string, EncryptionFigures> by;
  for (const EncryptionFigures& e : f.encryption) by[e.tier] = e;
  ASSERT_EQ(by.size(), 5u);
  EXPECT_TRUE(by["plain"].violation);
  EXPECT_TRUE(by["wire"].violation);
  EXPECT_FALSE(by["vault"].violation);
  EXPECT_FALSE(by["down"].known);
  EXPECT_FALSE(by["down"].violation);
  EXPECT_FALSE(by["scratch"].violation);
  ASSERT_EQ(f.estate_findings.size(), 2u);
  EXPECT_EQ(f.estate_findings[0].tier, "plain");
  EXPECT_EQ(f.estate_findings[0].kind, FindingKind::kNotEncrypted);
  EXPECT_EQ(f.estate_findings[0].detail,
            "tier plain requires encryption (encryption_required) but is not encrypted at rest: "
            "detail of plain");
  EXPECT_EQ(f.estate_findings[1].tier, "wire");
  EXPECT_EQ(f.estate_findings[1].detail,
            "tier wire requires encryption (encryption_required) but is sent in the clear over "
            "the network: detail of wire");
}

}  // namespace
}  // namespace ckptmon
