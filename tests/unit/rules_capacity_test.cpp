#include "rules/capacity.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double GB = 1e9;

TEST(RulesCapacity, EmptyTierNeedsNothing) {
  TierState t = tier_state("rapid", TierRole::kRapid, "", 1000 * GB, 400 * GB);
  auto f = evaluate_capacity({}, t, {}, TierPolicy{}, 1000);
  EXPECT_EQ(f.required_bytes, 0);
  EXPECT_EQ(f.still_needed_bytes, 0);
  EXPECT_EQ(f.headroom_ratio, kInf);
  EXPECT_EQ(f.concurrent_jobs, 0);
  EXPECT_DOUBLE_EQ(*f.used_ratio, 0.6);
  EXPECT_TRUE(*f.next_fits);
  // One sample (the current stats) is not a trend.
  EXPECT_FALSE(f.time_to_full_seconds);
}

TEST(RulesCapacity, OneJobTermByTerm) {
  // keep_last 3, replicas 2, temp 1.0, growth 0.2; latest 100 GB (two kept:
  // 90 + 100), a 10 GB partial. Avail 880 GB.
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 100).committed(static_cast<std::uint64_t>(90 * GB), 10, 20),
      Ck("rapid", "a", 200).committed(static_cast<std::uint64_t>(100 * GB), 110, 120),
      Ck("rapid", "a", 150).partial(static_cast<std::uint64_t>(10 * GB), 60, 70),
  };
  TierPolicy p;
  p.retention.keep_last = 3;
  p.sizing.replicas = 2;
  p.sizing.temp_write_allowance_ratio = 1.0;
  p.sizing.growth_headroom_ratio = 0.2;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 2000 * GB, 880 * GB);
  auto f = evaluate_capacity(cks, t, {}, p, 1000);
  EXPECT_EQ(f.concurrent_jobs, 1);
  EXPECT_TRUE(f.concurrency_observed);
  // Retained: 100 GB x 3 versions x 2 replicas = 600 GB.
  EXPECT_DOUBLE_EQ(f.retained_required_bytes, 600 * GB);
  EXPECT_DOUBLE_EQ(f.temp_write_allowance_bytes, 100 * GB);
  EXPECT_DOUBLE_EQ(f.residue_bytes, 10 * GB);
  EXPECT_DOUBLE_EQ(f.growth_headroom_bytes, 120 * GB);
  EXPECT_DOUBLE_EQ(f.required_bytes, 830 * GB);
  // Present: (90 + 100) x 2 = 380 retained, nothing in progress, 10 partial.
  EXPECT_DOUBLE_EQ(f.present_bytes, 390 * GB);
  // Still needed: (600 - 380) + 100 + 120 = 440 GB; 880 / 440 = 2.
  EXPECT_DOUBLE_EQ(f.still_needed_bytes, 440 * GB);
  EXPECT_DOUBLE_EQ(*f.headroom_ratio, 2.0);
  ASSERT_EQ(f.jobs.size(), 1u);
  EXPECT_EQ(f.jobs[0].latest_bytes, static_cast<std::uint64_t>(100 * GB));
  EXPECT_EQ(f.jobs[0].retained_versions, 3);
  EXPECT_DOUBLE_EQ(f.jobs[0].next_checkpoint_bytes, 200 * GB);
  EXPECT_TRUE(*f.jobs[0].next_fits);
}

// The inode term: files per latest checkpoint x retained versions, plus the
// next checkpoint's files, less what is on the tier.
TEST(RulesCapacity, InodeTermByTerm) {
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 100).committed(10, 10, 20).file_count(500),
      Ck("rapid", "a", 200).committed(10, 110, 120).file_count(1000),
      Ck("rapid", "a", 300).in_progress(5, 200, 210).file_count(400),
      Ck("rapid", "b", 10).committed(10, 10, 20).file_count(50),
  };
  TierPolicy p;
  p.retention.keep_last = 3;
  p.sizing.concurrent_jobs = 1;
  p.sizing.replicas = 2;  // scales bytes, not inodes
  TierState t = tier_state("rapid", TierRole::kRapid, "", 1000, 500);
  t.stats.files = 100'000;
  t.stats.files_free = 3'000;
  auto f = evaluate_capacity(cks, t, {}, p, 1000);
  ASSERT_TRUE(f.files_known);
  EXPECT_EQ(f.files_total, 100'000);
  EXPECT_EQ(f.files_free, 3'000);
  ASSERT_EQ(f.jobs.size(), 2u);
  EXPECT_EQ(f.jobs[0].latest_files, 1000u);  // the latest committed, not the save in progress
  EXPECT_DOUBLE_EQ(f.jobs[0].required_files, 3000);
  EXPECT_DOUBLE_EQ(f.jobs[1].required_files, 150);
  // 3000 + 150 retained, plus a's next checkpoint of 1000 files.
  EXPECT_DOUBLE_EQ(f.required_files, 4150);
  // On the tier: 500 + 1000 + 50 retained, 400 of the save in progress:
  // (3150 - 1550) + (1000 - 400).
  EXPECT_DOUBLE_EQ(f.still_needed_files, 2200);

  t.stats.files = 0;  // btrfs: no fixed inode count
  EXPECT_FALSE(evaluate_capacity(cks, t, {}, p, 1000).files_known);
  t.stats.files = 100'000;
  t.up = false;  // stale stats are not judged
  EXPECT_FALSE(evaluate_capacity(cks, t, {}, p, 1000).files_known);
}

TEST(RulesCapacity, NextCheckpointCountsWhatTheSaveInProgressAlreadyWrote) {
  std::vector<Checkpoint> cks{Ck("rapid", "a", 1).committed(100, 10, 20)};
  TierPolicy p;
  p.sizing.replicas = 2;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 1000, 150);
  auto f = evaluate_capacity(cks, t, {}, p, 1000);
  EXPECT_DOUBLE_EQ(f.jobs[0].next_checkpoint_bytes, 200);
  EXPECT_FALSE(*f.jobs[0].next_fits);
  EXPECT_FALSE(*f.next_fits);
  cks.push_back(Ck("rapid", "a", 2).in_progress(60, 30, 40));
  f = evaluate_capacity(cks, t, {}, p, 1000);
  EXPECT_DOUBLE_EQ(f.jobs[0].next_checkpoint_bytes, 140);
  EXPECT_TRUE(*f.jobs[0].next_fits);
}

TEST(RulesCapacity, ConcurrencyObservedFromOverlappingSavesOrSetByPolicy) {
  // a and b save at the same time, c later: two concurrent jobs.
  std::vector<Checkpoint> cks{Ck("rapid", "a", 1).committed(100, 10, 20),
                              Ck("rapid", "b", 1).committed(300, 15, 25),
                              Ck("rapid", "c", 1).committed(200, 30, 40)};
  TierPolicy p;
  p.retention.keep_last = 1;
  p.sizing.growth_headroom_ratio = 0;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 10000, 5000);
  auto f = evaluate_capacity(cks, t, {}, p, 1000);
  EXPECT_EQ(f.concurrent_jobs, 2);
  EXPECT_DOUBLE_EQ(f.temp_write_allowance_bytes, 300 + 200);  // the two biggest
  EXPECT_DOUBLE_EQ(f.next_checkpoint_bytes, 300 + 200);
  p.sizing.concurrent_jobs = 3;
  f = evaluate_capacity(cks, t, {}, p, 1000);
  EXPECT_EQ(f.concurrent_jobs, 3);
  EXPECT_FALSE(f.concurrency_observed);
  EXPECT_DOUBLE_EQ(f.temp_write_allowance_bytes, 600);
  EXPECT_DOUBLE_EQ(f.required_bytes, 600 + 600);  // 1 version each + temp
}

TEST(RulesCapacity, MaxAgeAndMilestonesChangeTheRetainedVersions) {
  // Hourly commits; keep_last 10 but max_age 3h keeps 4 (3h / 1h + 1); a
  // milestone outside those is one more version.
  std::vector<Checkpoint> cks;
  const double h = 3600;
  for (int i = 1; i <= 6; ++i) {
    cks.push_back(Ck("rapid", "a", i * 100).committed(1000, i * h - 10, i * h));
  }
  TierPolicy p;
  p.retention.keep_last = 10;
  p.retention.max_age_seconds = 3 * h;
  p.retention.keep_every = 0;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 1e6, 1e5);
  auto f = evaluate_capacity(cks, t, {}, p, 6 * h + 60);
  EXPECT_EQ(f.jobs[0].retained_versions, 4);
  p.retention.max_age_seconds = 0;
  p.retention.keep_last = 2;
  p.retention.keep_every = 200;  // steps 200, 400 kept as milestones (600 is newest)
  f = evaluate_capacity(cks, t, {}, p, 6 * h + 60);
  EXPECT_EQ(f.jobs[0].retained_versions, 2 + 2);
}

// The arithmetic tests below use samples seconds apart; the minimum span has
// a test of its own.
TierPolicy any_span() {
  TierPolicy p;
  p.sizing.min_trend_span_seconds = 0;
  return p;
}

TEST(RulesCapacity, NoTrendUntilTheSamplesSpanTheMinimum) {
  const double now = 100'000;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 5000, 800);
  TierPolicy p;  // default: 30 minutes
  std::vector<TierSample> close{{now - 200, 5000, 1000, {}}, {now - 100, 5000, 900, {}}};
  EXPECT_FALSE(evaluate_capacity({}, t, close, p, now).time_to_full_seconds);
  // The same slope (1 byte/s) over 40 minutes is a trend.
  std::vector<TierSample> wide{{now - 2400, 5000, 3200, {}}, {now - 1200, 5000, 2000, {}}};
  auto f = evaluate_capacity({}, t, wide, p, now);
  ASSERT_TRUE(f.time_to_full_seconds);
  EXPECT_NEAR(*f.time_to_full_seconds, 800.0, 1e-6);
}

TEST(RulesCapacity, TimeToFullFromTheTrendOfAvail) {
  // Avail falls 1 byte/s: 1000 at now-200, 900 at now-100; now 800.
  const double now = 10'000;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 5000, 800);
  std::vector<TierSample> h{{now - 200, 5000, 1000, {}}, {now - 100, 5000, 900, {}}};
  auto f = evaluate_capacity({}, t, h, any_span(), now);
  ASSERT_TRUE(f.time_to_full_seconds);
  EXPECT_NEAR(*f.time_to_full_seconds, 800.0, 1e-6);
  // Samples outside the trend window are ignored: one left is no trend.
  TierPolicy p = any_span();
  p.sizing.trend_window_seconds = 150;
  std::vector<TierSample> old{{now - 200, 5000, 1000, {}}};
  EXPECT_FALSE(evaluate_capacity({}, t, old, p, now).time_to_full_seconds);
}

TEST(RulesCapacity, ATierThatShrinksFillsUpEvenWithoutNewData) {
  // Quota cut from 5000 to 3000 to 1000: avail 4000 -> 2000 -> 0 with the same data.
  const double now = 1000;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 1000, 0.0001);
  std::vector<TierSample> h{{now - 20, 5000, 4000, {}}, {now - 10, 3000, 2000, {}}};
  auto f = evaluate_capacity({}, t, h, any_span(), now);
  ASSERT_TRUE(f.time_to_full_seconds);
  EXPECT_NEAR(*f.time_to_full_seconds, 0.0, 1e-3);
  EXPECT_NEAR(*f.used_ratio, 1.0, 1e-6);
}

TEST(RulesCapacity, AvailNotFallingMeansNeverFull) {
  const double now = 1000;
  TierState t = tier_state("rapid", TierRole::kRapid, "", 5000, 3000);
  std::vector<TierSample> h{{now - 20, 5000, 1000, {}}, {now - 10, 5000, 2000, {}}};
  auto f = evaluate_capacity({}, t, h, any_span(), now);
  EXPECT_EQ(f.time_to_full_seconds, kInf);
}

TEST(RulesCapacity, DownTierWithoutStatsHasNoHeadroomButStillATrend) {
  const double now = 1000;
  TierState t = tier_state("rapid");
  t.up = false;
  std::vector<TierSample> h{{now - 20, 5000, 1000, {}}, {now - 10, 5000, 900, {}}};
  std::vector<Checkpoint> cks{Ck("rapid", "a", 1).committed(100, 1, 2)};
  auto f = evaluate_capacity(cks, t, h, any_span(), now);
  EXPECT_FALSE(f.has_stats);
  EXPECT_FALSE(f.headroom_ratio);
  EXPECT_FALSE(f.next_fits);
  EXPECT_FALSE(f.jobs[0].next_fits);
  EXPECT_FALSE(f.used_ratio);
  ASSERT_TRUE(f.time_to_full_seconds);
  // Falling 10 B/s, 800 left at now by the fit: 80 s.
  EXPECT_NEAR(*f.time_to_full_seconds, 80.0, 1e-6);
  // Stats from before it went down are stale: not used either.
  TierState stale = tier_state("rapid", TierRole::kRapid, "", 5000, 10);
  stale.up = false;
  f = evaluate_capacity(cks, stale, {}, TierPolicy{}, now);
  EXPECT_FALSE(f.has_stats);
  EXPECT_FALSE(f.headroom_ratio);
  EXPECT_FALSE(f.jobs[0].next_fits);
}

TEST(RulesBandwidth, RequiredAndObservedForTwoOverlappingJobs) {
  // a: 1000 B over [0, 10]; b: 3000 B over [5, 25]. Busy 25 s: 4000 / 25 = 160 B/s.
  const double now = 100;
  std::vector<Checkpoint> cks{Ck("rapid", "a", 1).committed(1000, 0.5, 10),
                              Ck("rapid", "b", 1).committed(3000, 5, 25)};
  cks[0].first_write = 0.0001;  // first shard at ~0
  BandwidthPolicy p;
  p.allowed_window_seconds = 100;
  p.overhead_ratio = 0.1;
  auto f = evaluate_bandwidth(cks, "rapid", p, now);
  EXPECT_EQ(f.concurrent_writers, 2);
  EXPECT_DOUBLE_EQ(f.bytes_per_checkpoint, 2000);
  // 2000 / 100 x 2 x 1.1 = 44.
  EXPECT_DOUBLE_EQ(f.required_bytes_per_second, 44);
  ASSERT_TRUE(f.observed_bytes_per_second);
  EXPECT_NEAR(*f.observed_bytes_per_second, 4000 / 24.9999, 1e-3);
  EXPECT_EQ(f.observed_checkpoints, 2u);
}

TEST(RulesBandwidth, StatedSaveIntervalWinsAndOldSavesAreIgnored) {
  const double now = 100'000;
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 2).committed(1000, now - 100, now - 90).save(now - 110, now - 90),
      Ck("rapid", "a", 1).committed(9999, 10, 20),              // outside the 24 h window
      Ck("rapid", "a", 3).committed(5000, now - 50, now - 50),  // one file: no duration
  };
  auto f = evaluate_bandwidth(cks, "rapid", BandwidthPolicy{}, now);
  ASSERT_TRUE(f.observed_bytes_per_second);
  EXPECT_DOUBLE_EQ(*f.observed_bytes_per_second, 1000.0 / 20);
  EXPECT_EQ(f.observed_checkpoints, 1u);
  // Concurrency set: 3 writers of the only job's latest checkpoint (5000 B).
  BandwidthPolicy p;
  p.concurrent_writers = 3;
  p.allowed_window_seconds = 50;
  p.overhead_ratio = 0;
  f = evaluate_bandwidth(cks, "rapid", p, now);
  EXPECT_DOUBLE_EQ(f.required_bytes_per_second, 5000.0 / 50 * 3);
}

TEST(RulesBandwidth, EmptyTier) {
  auto f = evaluate_bandwidth({}, "rapid", BandwidthPolicy{}, 100);
  EXPECT_EQ(f.required_bytes_per_second, 0);
  EXPECT_FALSE(f.observed_bytes_per_second);
}

}  // namespace
}  // namespace ckptmon
