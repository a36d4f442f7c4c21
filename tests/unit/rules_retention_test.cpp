#include "rules/retention.hpp"

#include <gtest/gtest.h>

#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;

// Six committed checkpoints of one job, step 100..600, each committed at 1000 + step.
std::vector<Checkpoint> six_steps(const std::string& tier = "rapid", const std::string& job = "a") {
  std::vector<Checkpoint> v;
  for (int step = 100; step <= 600; step += 100) {
    v.push_back(Ck(tier, job, step).committed(1000 + step, 990.0 + step, 1000.0 + step));
  }
  return v;
}

std::vector<std::int64_t> steps_of(const std::vector<RetentionDecision>& d, RetentionKind k) {
  std::vector<std::int64_t> out;
  for (const auto& x : d) {
    if (x.kind == k) out.push_back(x.checkpoint->step);
  }
  return out;
}

TEST(RulesRetention, EmptyTierHasNoQueue) {
  std::vector<Checkpoint> none;
  auto f = evaluate_retention(none, "rapid", RetentionPolicy{}, 5000);
  EXPECT_TRUE(f.empty());
  EXPECT_EQ(cleanup_oldest_age(f, 5000), 0.0);
}

TEST(RulesRetention, KeepLastExpiresTheOlderOnesSinceTheirReplacementCommitted) {
  auto cks = six_steps();
  RetentionPolicy p;
  p.keep_last = 3;
  auto d = decide_retention(cks, "rapid", "a", p, 2000);
  EXPECT_EQ(steps_of(d, RetentionKind::kExpired), (std::vector<std::int64_t>{100, 200, 300}));
  EXPECT_EQ(steps_of(d, RetentionKind::kKeptLast), (std::vector<std::int64_t>{400, 500}));
  EXPECT_EQ(steps_of(d, RetentionKind::kKeptNewest), (std::vector<std::int64_t>{600}));
  // Step 100 left keep_last when step 400 committed (1400), 200 at 1500, 300 at 1600.
  EXPECT_EQ(d[0].due_since, 1400);
  EXPECT_EQ(d[1].due_since, 1500);
  EXPECT_EQ(d[2].due_since, 1600);

  auto f = evaluate_retention(cks, "rapid", p, 2000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].expired_checkpoints, 3u);
  EXPECT_EQ(f[0].expired_bytes, 1100u + 1200u + 1300u);
  EXPECT_EQ(f[0].retained_checkpoints, 3u);
  EXPECT_EQ(f[0].retained_bytes, 1400u + 1500u + 1600u);
  EXPECT_EQ(f[0].pending_paths,
            (std::vector<std::string>{"a/step-100", "a/step-200", "a/step-300"}));
  EXPECT_EQ(cleanup_oldest_age(f, 2000), 600.0);
}

TEST(RulesRetention, MilestonesSurviveKeepLast) {
  auto cks = six_steps();
  RetentionPolicy p;
  p.keep_last = 2;
  p.keep_every = 200;
  auto d = decide_retention(cks, "rapid", "a", p, 2000);
  EXPECT_EQ(steps_of(d, RetentionKind::kKeptMilestone), (std::vector<std::int64_t>{200, 400}));
  EXPECT_EQ(steps_of(d, RetentionKind::kExpired), (std::vector<std::int64_t>{100, 300}));
  auto f = evaluate_retention(cks, "rapid", p, 2000);
  EXPECT_EQ(f[0].milestone_checkpoints, 2u);
  EXPECT_EQ(f[0].retained_checkpoints, 4u);
}

TEST(RulesRetention, MaxAgeExpiresEverythingButTheNewest) {
  auto cks = six_steps();  // committed at 1100 .. 1600
  RetentionPolicy p;
  p.keep_last = 10;
  p.keep_every = 100;  // every one a milestone: max_age still wins
  p.max_age_seconds = 300;
  auto d = decide_retention(cks, "rapid", "a", p, 2000);
  EXPECT_EQ(steps_of(d, RetentionKind::kExpired),
            (std::vector<std::int64_t>{100, 200, 300, 400, 500}));
  EXPECT_EQ(steps_of(d, RetentionKind::kKeptNewest), (std::vector<std::int64_t>{600}));
  // Due when both old enough (commit + 300) and no longer the newest (next commit).
  EXPECT_EQ(d[0].due_since, 1400);  // max(1100 + 300, 1200)
  EXPECT_EQ(d[4].due_since, 1800);  // max(1500 + 300, 1600)
}

TEST(RulesRetention, TheNewestNeverExpiresHoweverOld) {
  std::vector<Checkpoint> cks{Ck("rapid", "a", 7).committed(10, 1, 2)};
  RetentionPolicy p;
  p.max_age_seconds = 60;
  auto f = evaluate_retention(cks, "rapid", p, 1e9);
  EXPECT_EQ(f[0].expired_checkpoints, 0u);
  EXPECT_EQ(f[0].retained_checkpoints, 1u);
}

TEST(RulesRetention, PartialsOlderThanTheirWindowAreResidue) {
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 100).partial(500, 900, 1000),   // due at 1000 + 3600 = 4600
      Ck("rapid", "a", 200).partial(700, 1900, 2000),  // within its window at 5000
      Ck("rapid", "a", 300).in_progress(900, 4900, 4990),
      Ck("rapid", "a", 50).committed(100, 10, 20),
  };
  RetentionPolicy p;
  p.partial_window_seconds = 3600;
  auto f = evaluate_retention(cks, "rapid", p, 5000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].residue_checkpoints, 1u);
  EXPECT_EQ(f[0].residue_bytes, 500u);
  EXPECT_EQ(f[0].pending_bytes(), 500u);
  EXPECT_EQ(f[0].oldest_due_since, 4600);
  EXPECT_EQ(cleanup_oldest_age(f, 5000), 400.0);
}

TEST(RulesRetention, ManyJobsAndTiersAreIndependent) {
  auto cks = six_steps("rapid", "a");
  for (auto& c : six_steps("rapid", "b")) cks.push_back(c);
  for (auto& c : six_steps("staging", "a")) cks.push_back(c);
  RetentionPolicy p;
  p.keep_last = 5;
  auto f = evaluate_retention(cks, "rapid", p, 2000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].job, "a");
  EXPECT_EQ(f[1].job, "b");
  EXPECT_EQ(f[0].expired_checkpoints, 1u);
  EXPECT_EQ(f[1].expired_checkpoints, 1u);
  EXPECT_EQ(f[0].tier, "rapid");
}

TEST(RulesRetention, WithoutStepsTheOrderIsByCommitTime) {
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", -1).path("a/last.ckpt").committed(10, 300, 300),
      Ck("rapid", "a", -1).path("a/epoch=1.ckpt").committed(10, 100, 100),
      Ck("rapid", "a", 5).path("a/epoch=2.ckpt").committed(10, 200, 200),
  };
  RetentionPolicy p;
  p.keep_last = 1;
  auto d = decide_retention(cks, "rapid", "a", p, 1000);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].checkpoint->path, "a/epoch=1.ckpt");
  EXPECT_EQ(d[2].checkpoint->path, "a/last.ckpt");
  EXPECT_EQ(d[2].kind, RetentionKind::kKeptNewest);
  EXPECT_EQ(d[0].due_since, 200);  // pushed out when epoch=2 committed
}

TEST(RulesRetention, AClockThatJumpedBackNeverGivesANegativeAge) {
  auto cks = six_steps();
  RetentionPolicy p;
  p.keep_last = 1;
  auto f = evaluate_retention(cks, "rapid", p, 1000);  // before every commit
  EXPECT_GT(f[0].expired_checkpoints, 0u);
  EXPECT_EQ(cleanup_oldest_age(f, 1000), 0.0);
}

}  // namespace
}  // namespace ckptmon
