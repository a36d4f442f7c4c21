#include "rules/recovery.hpp"

#include <gtest/gtest.h>

#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;

TEST(RulesRecovery, EmptyCatalogHasNoJobs) { EXPECT_TRUE(evaluate_recovery({}, {}, {}).empty()); }

TEST(RulesRecovery, HighestCommittedStepOnAnyTierWithItsEarliestCopy) {
  std::vector<Checkpoint> cks{
      Ck("staging", "a", 300).committed(10, 290, 300),
      Ck("staging", "a", 400).in_progress(10, 390, 395),
      Ck("rapid", "a", 300).committed(10, 350, 360),  // drained copy, later
      Ck("rapid", "a", 200).committed(10, 250, 260),
      Ck("rapid", "b", 100).committed(10, 90, 100),
  };
  auto r = evaluate_recovery(cks, {}, {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].job, "a");
  EXPECT_TRUE(r[0].restorable);
  EXPECT_EQ(r[0].step, 300);
  EXPECT_EQ(r[0].timestamp, 300);
  EXPECT_EQ(r[0].tier, "staging");
  EXPECT_EQ(r[0].path, "a/step-300");
  EXPECT_EQ(r[0].tiers, (std::vector<std::string>{"rapid", "staging"}));
  EXPECT_FALSE(r[0].verified);
  EXPECT_EQ(r[0].last_activity, 395);
  EXPECT_EQ(r[0].first_activity, 250);
  EXPECT_EQ(r[1].job, "b");
  EXPECT_EQ(r[1].step, 100);
}

TEST(RulesRecovery, FailedVerificationIsNotRestorableAndPassedIsMarked) {
  std::vector<Checkpoint> cks{Ck("rapid", "a", 300).committed(10, 290, 300),
                              Ck("rapid", "a", 200).committed(10, 190, 200)};
  Verifications v{{{"rapid", "a/step-300"}, false}, {{"rapid", "a/step-200"}, true}};
  auto r = evaluate_recovery(cks, v, {});
  EXPECT_EQ(r[0].step, 200);
  EXPECT_TRUE(r[0].verified);
  // A failed copy on one tier does not hide a good copy of the same step elsewhere.
  cks.push_back(Ck("capacity", "a", 300).committed(10, 400, 410));
  r = evaluate_recovery(cks, v, {});
  EXPECT_EQ(r[0].step, 300);
  EXPECT_EQ(r[0].tier, "capacity");
  EXPECT_FALSE(r[0].verified);
}

TEST(RulesRecovery, OnlyPartialsMeansNotRestorableButActive) {
  std::vector<Checkpoint> cks{Ck("rapid", "a", 1).partial(10, 100, 200),
                              Ck("rapid", "a", 2).in_progress(10, 300, 350)};
  auto r = evaluate_recovery(cks, {}, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].restorable);
  EXPECT_EQ(r[0].step, -1);
  EXPECT_EQ(r[0].first_activity, 100);
  EXPECT_EQ(r[0].last_activity, 350);
}

TEST(RulesRecovery, DeletionTiersDoNotCount) {
  std::vector<Checkpoint> cks{Ck("trash", "a", 900).committed(10, 1, 2),
                              Ck("rapid", "a", 100).committed(10, 1, 2)};
  auto r = evaluate_recovery(cks, {}, {"trash"});
  EXPECT_EQ(r[0].step, 100);
}

TEST(RulesRecovery, WithoutStepsTheNewestCommitWins) {
  std::vector<Checkpoint> cks{Ck("rapid", "a", -1).path("a/x.ckpt").committed(10, 1, 500),
                              Ck("rapid", "a", 7).path("a/y.ckpt").committed(10, 1, 400)};
  auto r = evaluate_recovery(cks, {}, {});
  EXPECT_EQ(r[0].path, "a/x.ckpt");
  EXPECT_EQ(r[0].timestamp, 500);
}

TEST(RulesRecovery, KeptUnreadableCopiesKeepThePointButMarkItStale) {
  Checkpoint staging = Ck("staging", "a", 300).committed(10, 290, 300);
  Checkpoint rapid = Ck("rapid", "a", 300).committed(10, 350, 360);
  staging.unreadable = true;
  rapid.unreadable = true;
  std::vector<Checkpoint> cks{staging, rapid, Ck("rapid", "a", 200).committed(10, 250, 260)};
  auto r = evaluate_recovery(cks, {}, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].restorable);
  EXPECT_EQ(r[0].step, 300);  // kept, not fallen back to 200
  EXPECT_EQ(r[0].timestamp, 300);
  EXPECT_TRUE(r[0].unreadable);
  // One copy that can still be read vouches for the point.
  cks[1].unreadable = false;
  r = evaluate_recovery(cks, {}, {});
  EXPECT_EQ(r[0].step, 300);
  EXPECT_FALSE(r[0].unreadable);
}

}  // namespace
}  // namespace ckptmon
