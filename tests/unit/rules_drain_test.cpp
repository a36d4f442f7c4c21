#include "rules/drain.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;

DrainRoute staging() { return DrainRoute{"staging", "rapid"}; }

TEST(RulesDrain, BytesToCopyByRelativePathAndSize) {
  Checkpoint src = Ck("staging", "a", 1)
                       .committed(0, 1, 2)
                       .files({{"__0_0.distcp", 100},
                               {"__1_0.distcp", 200},
                               {"__2_0.distcp", 300},
                               {".metadata", 7}});
  Checkpoint dst =
      Ck("rapid", "a", 1)
          .in_progress(0, 1, 2)
          .files({{"__0_0.distcp", 100}, {"__1_0.distcp", 50}, {".metadata", 9}, {"extra", 1000}});
  // __1_0 is 150 short, __2_0 missing (300); .metadata is bigger there: copied.
  EXPECT_EQ(bytes_to_copy(src, &dst), 450u);
  EXPECT_EQ(bytes_to_copy(src, nullptr), 607u);
}

TEST(RulesDrain, BytesToCopyFallsBackToTotalsWithoutFileLists) {
  Checkpoint src = Ck("staging", "a", 1).committed(1000, 1, 2);
  Checkpoint dst = Ck("rapid", "a", 1).in_progress(400, 1, 2);
  EXPECT_EQ(bytes_to_copy(src, &dst), 600u);
  dst.bytes = 5000;
  EXPECT_EQ(bytes_to_copy(src, &dst), 0u);
  // One side with a list, the other without: totals.
  Checkpoint listed = Ck("staging", "a", 1).committed(0, 1, 2).files({{"x", 1000}});
  dst.bytes = 300;
  EXPECT_EQ(bytes_to_copy(listed, &dst), 700u);
}

TEST(RulesDrain, TierWithoutDrainsToHasNoFigures) {
  DrainRoute t = staging();
  t.drains_to.clear();
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(10, 1, 2)};
  EXPECT_TRUE(evaluate_drain(cks, t, {}, DrainPolicy{}, 100).empty());
  EXPECT_TRUE(evaluate_drain({}, staging(), {}, DrainPolicy{}, 100).empty());
}

TEST(RulesDrain, BacklogOverlapAndOldestPendingForOneJob) {
  std::vector<Checkpoint> cks{
      Ck("staging", "a", 100).committed(1000, 90, 100),
      Ck("staging", "a", 200).committed(1000, 190, 200),
      Ck("staging", "a", 300).committed(1000, 290, 300),
      Ck("staging", "a", 400).in_progress(700, 390, 395),  // not ready to drain
      Ck("staging", "a", 50).partial(500, 40, 45),         // never drains
      Ck("rapid", "a", 100).committed(1000, 150, 160),
      Ck("rapid", "a", 200).in_progress(400, 250, 260),
      Ck("rapid", "b", 300).committed(1000, 350, 360),  // another job's step 300
  };
  auto f = evaluate_drain(cks, staging(), {}, DrainPolicy{}, 1000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tier, "staging");
  EXPECT_EQ(f[0].to_tier, "rapid");
  EXPECT_EQ(f[0].job, "a");
  EXPECT_EQ(f[0].backlog_bytes, 600u + 1000u);
  EXPECT_EQ(f[0].copied_bytes, 1000u + 400u);
  EXPECT_EQ(f[0].pending_checkpoints, 2u);
  EXPECT_EQ(f[0].overlapping_checkpoints, 1);
  EXPECT_EQ(f[0].oldest_pending_since, 200);
  EXPECT_EQ(f[0].oldest_pending_age, 800);
  ASSERT_EQ(f[0].pending.size(), 2u);
  EXPECT_EQ(f[0].pending[0].step, 200);
  EXPECT_EQ(f[0].pending[0].pending_bytes, 600u);
  // No history: rate unknown, so is time to empty.
  EXPECT_FALSE(f[0].rate_bytes_per_second);
  EXPECT_FALSE(f[0].time_to_empty_seconds);
}

TEST(RulesDrain, FullyDrainedJobHasZeroBacklogAndZeroTimeToEmpty) {
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(10, 1, 2),
                              Ck("rapid", "a", 1).committed(10, 3, 4)};
  auto f = evaluate_drain(cks, staging(), {}, DrainPolicy{}, 100);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].backlog_bytes, 0u);
  EXPECT_EQ(f[0].overlapping_checkpoints, 0);
  EXPECT_EQ(f[0].oldest_pending_age, 0);
  EXPECT_EQ(f[0].time_to_empty_seconds, 0.0);
}

TEST(RulesDrain, MatchesByPathWhenTheLayoutHasNoStep) {
  std::vector<Checkpoint> cks{Ck("staging", "a", -1).path("a/last.ckpt").committed(100, 1, 2),
                              Ck("rapid", "a", -1).path("a/last.ckpt").committed(100, 3, 4),
                              Ck("rapid", "a", -1).path("a/other.ckpt").committed(100, 3, 4)};
  auto f = evaluate_drain(cks, staging(), {}, DrainPolicy{}, 100);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].backlog_bytes, 0u);
}

TEST(RulesDrain, RateFromSuccessiveObservationsAndTimeToEmpty) {
  // Now: 1000 of 3000 bytes copied. Remembered: 0 at now-100, 600 at now-50;
  // a sample outside the 15-minute window is ignored. Copied 1000 in 100 s.
  const double now = 10'000;
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(3000, 1, 2),
                              Ck("rapid", "a", 1).in_progress(1000, 3, 4)};
  DrainHistory h;
  h[{"staging", "rapid", "a"}] = {
      {now - 5000, 3000, 0}, {now - 100, 3000, 0}, {now - 50, 2400, 600}};
  auto f = evaluate_drain(cks, staging(), h, DrainPolicy{}, now);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_TRUE(f[0].rate_bytes_per_second);
  EXPECT_DOUBLE_EQ(*f[0].rate_bytes_per_second, 10.0);
  EXPECT_FALSE(f[0].rate_from_events);
  EXPECT_DOUBLE_EQ(*f[0].time_to_empty_seconds, 2000 / 10.0);
}

TEST(RulesDrain, DeletingDrainedCheckpointsFromTheSourceIsNotCopying) {
  // Copied fell from 5000 (a drained checkpoint was deleted) to 1000, then
  // rose to 1200: 200 bytes copied in 60 s.
  const double now = 1000;
  std::vector<Checkpoint> cks{Ck("staging", "a", 2).committed(2000, 1, 2),
                              Ck("rapid", "a", 2).in_progress(1200, 3, 4)};
  DrainHistory h;
  h[{"staging", "rapid", "a"}] = {{now - 60, 0, 5000}, {now - 30, 1000, 1000}};
  auto f = evaluate_drain(cks, staging(), h, DrainPolicy{}, now);
  EXPECT_DOUBLE_EQ(*f[0].rate_bytes_per_second, 200.0 / 60.0);
}

TEST(RulesDrain, EventCounterRateSurvivesAReset) {
  // Drained-bytes counter 100 -> 400 -> (restart) 50 -> 250 over 90 s: 300 + 50 + 200.
  const double now = 1000;
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(5000, 1, 2)};
  DrainHistory h;
  DrainKey key{"staging", "rapid", "a"};
  h[key] = {{now - 90, 5000, 0, 100}, {now - 60, 5000, 0, 400}, {now - 30, 5000, 0, 50}};
  auto f = evaluate_drain(cks, staging(), h, DrainPolicy{}, now, {{key, 250}});
  ASSERT_TRUE(f[0].rate_bytes_per_second);
  EXPECT_TRUE(f[0].rate_from_events);
  EXPECT_DOUBLE_EQ(*f[0].rate_bytes_per_second, 550.0 / 90.0);
}

TEST(RulesDrain, NothingCopiedMeansInfiniteTimeToEmpty) {
  const double now = 1000;
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(5000, 1, 2)};
  DrainHistory h;
  h[{"staging", "rapid", "a"}] = {{now - 60, 5000, 0}};
  auto f = evaluate_drain(cks, staging(), h, DrainPolicy{}, now);
  EXPECT_EQ(f[0].rate_bytes_per_second, 0.0);
  EXPECT_EQ(f[0].time_to_empty_seconds, std::numeric_limits<double>::infinity());
}

TEST(RulesDrain, ManyJobsEachGetTheirOwnFigures) {
  std::vector<Checkpoint> cks;
  for (int j = 0; j < 50; ++j) {
    const std::string job = "job" + std::to_string(100 + j);
    cks.push_back(Ck("staging", job, 1).committed(1000 + j, 1, 2));
    if (j % 2 == 0) cks.push_back(Ck("rapid", job, 1).committed(1000 + j, 3, 4));
  }
  auto f = evaluate_drain(cks, staging(), {}, DrainPolicy{}, 100);
  ASSERT_EQ(f.size(), 50u);
  for (int j = 0; j < 50; ++j) {
    EXPECT_EQ(f[j].job, "job" + std::to_string(100 + j));
    EXPECT_EQ(f[j].backlog_bytes, j % 2 == 0 ? 0u : static_cast<std::uint64_t>(1000 + j));
  }
}

TEST(RulesDrain, RecordingKeepsAWindowAndStartsOverWhenTheClockJumpsBack) {
  DrainHistory h;
  DrainFigures f;
  f.tier = "staging";
  f.to_tier = "rapid";
  f.job = "a";
  f.backlog_bytes = 10;
  std::vector<DrainFigures> figs{f};
  const auto appended = record_drain_samples(h, figs, 1000, 300);
  ASSERT_EQ(appended.size(), 1u);  // what the store is handed
  EXPECT_EQ(appended[0].first, (DrainKey{"staging", "rapid", "a"}));
  EXPECT_EQ(appended[0].second.t, 1000);
  EXPECT_EQ(appended[0].second.backlog_bytes, 10);
  record_drain_samples(h, figs, 1100, 300);
  record_drain_samples(h, figs, 1400, 300);  // 1000 is now older than 300 s
  ASSERT_EQ(h.size(), 1u);
  auto& s = h.begin()->second;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].t, 1100);
  record_drain_samples(h, figs, 500, 300);  // the clock jumped back
  ASSERT_EQ(h.begin()->second.size(), 1u);
  EXPECT_EQ(h.begin()->second[0].t, 500);
  // A drain that no longer reports ages out.
  record_drain_samples(h, {}, 900, 300);
  EXPECT_TRUE(h.empty());
}

// Issue 9.10: the oldest pending age is measured on the monotonic clock. A
// wall clock stepped back an hour does not clamp it to 0; it keeps growing.
TEST(RulesDrain, PendingAgeGrowsOnTheMonotonicClockWhenTheWallJumpsBack) {
  const double t0 = 1'000'000;
  std::vector<Checkpoint> cks{Ck("staging", "a", 1).committed(100, t0 - 100, t0 - 90).c,
                              Ck("staging", "a", 2).committed(100, t0 - 40, t0 - 30).c};
  PendingAnchors anchors;
  double mono = 5000;  // any origin
  auto figures = evaluate_drain(cks, staging(), {}, DrainPolicy{}, t0);
  ASSERT_EQ(figures.size(), 1u);
  apply_monotonic_ages(figures, anchors, t0, mono);
  EXPECT_EQ(figures[0].oldest_pending_age, 90);  // t0 - commit of step 1
  EXPECT_EQ(anchors.size(), 2u);

  // 60 s pass; the wall clock is stepped back by an hour at the same time.
  const double wall = t0 + 60 - 3600;
  mono += 60;
  figures = evaluate_drain(cks, staging(), {}, DrainPolicy{}, wall);
  EXPECT_EQ(figures[0].oldest_pending_age, 0);  // what the wall clock alone says
  apply_monotonic_ages(figures, anchors, wall, mono);
  EXPECT_EQ(figures[0].oldest_pending_age, 150);  // 90 + 60

  mono += 30;
  figures = evaluate_drain(cks, staging(), {}, DrainPolicy{}, wall + 30);
  apply_monotonic_ages(figures, anchors, wall + 30, mono);
  EXPECT_EQ(figures[0].oldest_pending_age, 180);

  // Step 1 drained: step 2's age, 30 (wall, when first seen) + 90 s since.
  cks.push_back(Ck("rapid", "a", 1).committed(100, t0 - 20, t0 - 10).c);
  figures = evaluate_drain(cks, staging(), {}, DrainPolicy{}, wall + 30);
  apply_monotonic_ages(figures, anchors, wall + 30, mono);
  EXPECT_EQ(figures[0].oldest_pending_age, 120);
  EXPECT_EQ(anchors.size(), 1u);  // step 1's anchor forgotten
}

}  // namespace
}  // namespace ckptmon
