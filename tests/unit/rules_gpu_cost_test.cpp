// The GPU join on scripted samples. Expected values are worked out by hand
// in the comments: lost = sum over GPUs of max(0, baseline - during) x window.
#include "rules/gpu_cost.hpp"

#include <deque>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// One bucket per second, (t-1, t], utilisation `f(t - 0.5)`, from t0 to t1.
template <typename F>
GpuSeries series(double t0, double t1, F f) {
  GpuSeries s(10'000, 1.0);
  for (double t = t0 + 1; t <= t1; t += 1) s.add_bucket(t, f(t - 0.5), 6);
  return s;
}

// 0.9 busy, `low` during [a, b).
auto dip(double a, double b, double low, double high = 0.9) {
  return [=](double t) { return t >= a && t < b ? low : high; };
}

GpuState state_with(std::map<unsigned, GpuSeries> s) {
  GpuState st;
  st.source = "nvml";
  st.up = true;
  for (auto& [i, series] : s) st.devices.push_back(GpuDevice{i, "GPU-" + std::to_string(i), "T"});
  st.series = std::move(s);
  return st;
}

EventStep paused(double a, double b) {
  EventStep s;
  s.start_ts = a - 2;
  s.commit_ts = b + 2;
  s.committed = true;
  s.pauses = 1;
  s.pause_first_start = a;
  s.pause_last_end = b;
  return s;
}

TEST(GpuCost, DipFromNinetyToTenPercentForTenSecondsOnTwoGpusLosesSixteenGpuSeconds) {
  // Each GPU: baseline 0.9 over [90, 100), during 0.1 over [100, 110):
  // (0.9 - 0.1) x 10 s = 8 GPU-seconds; two GPUs = 16.
  GpuState st = state_with(
      {{0, series(0, 200, dip(100, 110, 0.1))}, {1, series(0, 200, dip(100, 110, 0.1))}});
  CheckpointGpuCost c = join_window(GpuWindow{{100, 110}, true}, {0, 1}, st, {});
  ASSERT_TRUE(c.lost_gpu_seconds) << c.unknown_reason;
  EXPECT_NEAR(*c.lost_gpu_seconds, 16.0, 1e-9);
  EXPECT_NEAR(*c.during, 0.1, 1e-9);
  EXPECT_NEAR(*c.baseline, 0.9, 1e-9);
  EXPECT_NEAR(*c.drop_ratio(), 8.0 / 9.0, 1e-9);
  ASSERT_EQ(c.gpus.size(), 2u);
  EXPECT_NEAR(*c.gpus[1].lost_seconds, 8.0, 1e-9);
}

TEST(GpuCost, AWindowOffTheBucketGridStaysWithinTheStatedGranularity) {
  // The events say [100.5, 110.5] while the GPUs dipped over [100, 110).
  // By hand, with 1 s buckets: during = (9.5 x 0.1 + 0.5 x 0.9) / 10 = 0.14,
  // baseline over [90.5, 100.5) = (9.5 x 0.9 + 0.5 x 0.1) / 10 = 0.86, so
  // (0.86 - 0.14) x 10 s x 2 GPUs = 14.4; within the stated granularity of
  // 4 x interval x dip per GPU (docs/rules.md) of the aligned 16.
  GpuState st = state_with(
      {{0, series(0, 200, dip(100, 110, 0.1))}, {1, series(0, 200, dip(100, 110, 0.1))}});
  CheckpointGpuCost c = join_window(GpuWindow{{100.5, 110.5}, true}, {0, 1}, st, {});
  ASSERT_TRUE(c.lost_gpu_seconds);
  EXPECT_NEAR(*c.lost_gpu_seconds, 14.4, 1e-9);
  EXPECT_NEAR(*c.lost_gpu_seconds, 16.0, 2 * 4 * 1.0 * 0.8);
}

TEST(GpuCost, NoDipLosesNothing) {
  GpuState st = state_with({{0, series(0, 200, dip(0, 0, 0.1))}});
  CheckpointGpuCost c = join_window(GpuWindow{{100, 110}, false}, {0}, st, {});
  ASSERT_TRUE(c.lost_gpu_seconds);
  EXPECT_EQ(*c.lost_gpu_seconds, 0.0);
  EXPECT_EQ(*c.drop_ratio(), 0.0);
  // Busier during the save than before is no loss either (max(0, ...)).
  GpuState up = state_with({{0, series(0, 200, dip(100, 110, 1.0, 0.5))}});
  c = join_window(GpuWindow{{100, 110}, false}, {0}, up, {});
  ASSERT_TRUE(c.lost_gpu_seconds);
  EXPECT_EQ(*c.lost_gpu_seconds, 0.0);
}

TEST(GpuCost, MissingSamplesAreUnknownNotZero) {
  // GPU 1 has no buckets for (102, 108]: 6 of 10 s are not covered.
  GpuSeries gap(10'000, 1.0);
  for (double t = 1; t <= 200; t += 1) {
    if (t > 102 && t <= 108) continue;
    gap.add_bucket(t, 0.9, 6);
  }
  GpuState st = state_with({{0, series(0, 200, dip(100, 110, 0.1))}, {1, gap}});
  CheckpointGpuCost c = join_window(GpuWindow{{100, 110}, true}, {0, 1}, st, {});
  EXPECT_FALSE(c.lost_gpu_seconds);
  EXPECT_FALSE(c.drop_ratio());
  EXPECT_NE(c.unknown_reason.find("GPU 1"), std::string::npos) << c.unknown_reason;
  ASSERT_TRUE(c.gpus[0].lost_seconds);  // GPU 0 alone is known ...
  EXPECT_NEAR(*c.gpus[0].lost_seconds, 8.0, 1e-9);
  EXPECT_FALSE(c.gpus[1].during);  // ... GPU 1's window is not
  // A GPU with no series at all, and samples ending before the window.
  st = state_with({{0, series(0, 105, dip(100, 110, 0.1))}});
  c = join_window(GpuWindow{{100, 110}, true}, {0, 7}, st, {});
  EXPECT_FALSE(c.lost_gpu_seconds);
  // 9 s of 10 covered is the least that counts (kGpuMinCoverage = 0.9).
  GpuSeries nine(10'000, 1.0);
  for (double t = 1; t <= 200; t += 1) {
    if (t != 105) nine.add_bucket(t, t > 100 && t <= 110 ? 0.1 : 0.9, 6);
  }
  c = join_window(GpuWindow{{100, 110}, true}, {0}, state_with({{0, nine}}), {});
  ASSERT_TRUE(c.lost_gpu_seconds);
  EXPECT_NEAR(*c.lost_gpu_seconds, 8.0, 1e-9);
}

TEST(GpuCost, BaselineSkipsOtherCheckpointWindows) {
  // Before 100: another save dipped [80, 95) to 0.3. The baseline of the
  // window [100, 110) is 10 s of non-checkpoint time: [95, 100) and [75, 80).
  auto parts = baseline_parts(100, 10, {{80, 95}, {100, 110}}, 0);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_DOUBLE_EQ(parts[0].start, 95);
  EXPECT_DOUBLE_EQ(parts[0].end, 100);
  EXPECT_DOUBLE_EQ(parts[1].start, 75);
  EXPECT_DOUBLE_EQ(parts[1].end, 80);
  auto f = [](double t) { return t >= 80 && t < 95 ? 0.3 : t >= 100 && t < 110 ? 0.1 : 0.9; };
  GpuState st = state_with({{0, series(0, 200, f)}});
  CheckpointGpuCost c = join_window(GpuWindow{{100, 110}, true}, {0}, st, {{80, 95}});
  ASSERT_TRUE(c.lost_gpu_seconds);
  EXPECT_NEAR(*c.baseline, 0.9, 1e-9);
  EXPECT_NEAR(*c.lost_gpu_seconds, 8.0, 1e-9);
  // Without the exclusion the baseline would be (5 x 0.9 + 5 x 0.3) / 10 = 0.6.
  c = join_window(GpuWindow{{100, 110}, true}, {0}, st, {});
  EXPECT_NEAR(*c.baseline, 0.6, 1e-9);
  // The ring's start bounds the walk: not enough baseline is unknown.
  GpuState late = state_with({{0, series(96, 200, f)}});
  c = join_window(GpuWindow{{100, 110}, true}, {0}, late, {{80, 95}});
  EXPECT_FALSE(c.lost_gpu_seconds);
}

TEST(GpuCost, BlockingWindowPrefersPauses) {
  EventStep s = paused(100, 110);
  auto w = blocking_window(s);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->from_pause);
  EXPECT_EQ(w->span.start, 100);
  EXPECT_EQ(w->span.end, 110);
  s.pauses = 0;
  w = blocking_window(s);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->from_pause);
  EXPECT_EQ(w->span.start, 98);
  EXPECT_EQ(w->span.end, 112);
  s.committed = false;
  EXPECT_FALSE(blocking_window(s));
}

TEST(GpuCost, AttributionOrderJobMapThenFilesThenLabelsThenEveryUnmappedGpu) {
  GpuState st;
  for (unsigned i = 0; i < 5; ++i) st.devices.push_back(GpuDevice{i});
  st.mapped_jobs[0] = {"b"};  // overridden by job_map below
  st.mapped_jobs[1] = {"a", "c"};
  st.devices[2].source_job = "a";
  st.devices[3].source_job = "b";
  // GPU 4: nobody's, so everybody's.
  std::map<unsigned, std::string> job_map{{0, "a"}};
  GpuAttribution how{};
  EXPECT_EQ(gpus_of_job("a", st, job_map, &how), (std::vector<unsigned>{0, 1, 2, 4}));
  EXPECT_EQ(how, GpuAttribution::kJobMap);
  EXPECT_EQ(gpus_of_job("b", st, job_map, &how), (std::vector<unsigned>{3, 4}));
  EXPECT_EQ(how, GpuAttribution::kSourceLabels);
  EXPECT_EQ(gpus_of_job("c", st, job_map, &how), (std::vector<unsigned>{1, 4}));
  EXPECT_EQ(how, GpuAttribution::kMappingDir);
  EXPECT_EQ(gpus_of_job("z", st, {}, &how), (std::vector<unsigned>{4}));
  EXPECT_EQ(how, GpuAttribution::kAllLocal);
}

TEST(GpuCostTracker, OverlappingCheckpointsOfTwoJobsOnDisjointGpusAreAttributedSeparately) {
  // Job a on GPUs 0,1 dips 0.9 -> 0.1 over [100, 110): 2 x 0.8 x 10 = 16.
  // Job b on GPUs 2,3 dips 0.8 -> 0.2 over [105, 120): its baseline is 15 s of
  // non-checkpoint time: [85, 100) (a's window is left out), 0.8, so
  // 2 x 0.6 x 15 = 18. Each job's GPUs see only their own job's dip.
  auto a = [](double t) { return t >= 100 && t < 110 ? 0.1 : 0.9; };
  auto b = [](double t) { return t >= 105 && t < 120 ? 0.2 : 0.8; };
  GpuState st = state_with({{0, series(0, 130, a)},
                            {1, series(0, 130, a)},
                            {2, series(0, 130, b)},
                            {3, series(0, 130, b)}});
  EventCatalog ev;
  ev.steps[StepKey{"staging", "a", 10}] = paused(100, 110);
  ev.steps[StepKey{"staging", "b", 20}] = paused(105, 120);
  std::map<unsigned, std::string> job_map{{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}};
  GpuCostTracker tr;
  tr.update(ev, st, job_map, 30, 130);
  ASSERT_EQ(tr.jobs().size(), 2u);
  const GpuJobCost& ja = tr.jobs().at("a");
  const GpuJobCost& jb = tr.jobs().at("b");
  EXPECT_NEAR(ja.lost_total, 16.0, 1e-9);
  EXPECT_NEAR(jb.lost_total, 18.0, 1e-9);
  EXPECT_EQ(ja.gpus, 2u);
  EXPECT_EQ(ja.attribution, GpuAttribution::kJobMap);
  EXPECT_EQ(ja.joined, 1u);
  EXPECT_EQ(ja.lost.count, 1u);
  // Both joined checkpoints are handed over once, for the state database.
  auto joined = tr.take_joined();
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_NEAR(*joined[0].lost_gpu_seconds + *joined[1].lost_gpu_seconds, 34.0, 1e-9);
  EXPECT_TRUE(tr.take_joined().empty());
  // Joined once: another cycle adds nothing.
  tr.update(ev, st, job_map, 30, 140);
  EXPECT_TRUE(tr.take_joined().empty());
  EXPECT_NEAR(tr.jobs().at("a").lost_total, 16.0, 1e-9);
  EXPECT_EQ(tr.jobs().at("a").joined, 1u);
}

TEST(GpuCostTracker, WaitsForSamplesThenCountsUnknown) {
  GpuState st = state_with({{0, series(0, 105, dip(100, 110, 0.1))}});
  EventCatalog ev;
  ev.steps[StepKey{"staging", "a", 1}] = paused(100, 110);
  GpuCostTracker tr;
  tr.update(ev, st, {}, 30, 111);  // samples end at 105: wait
  EXPECT_TRUE(tr.jobs().empty());
  tr.update(ev, st, {}, 30, 141);  // grace over: unknown, not 0
  ASSERT_EQ(tr.jobs().size(), 1u);
  const GpuJobCost& j = tr.jobs().at("a");
  EXPECT_EQ(j.unknown, 1u);
  EXPECT_EQ(j.joined, 0u);
  EXPECT_EQ(j.lost.count, 0u);
  ASSERT_TRUE(j.last);
  EXPECT_FALSE(j.last->lost_gpu_seconds);
  // The unknown one is handed over too: the report counts it unknown.
  auto joined = tr.take_joined();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_FALSE(joined[0].lost_gpu_seconds);
  EXPECT_EQ(joined[0].step, 1);
  // A window before the ring's first bucket is not ours: skipped, not counted.
  GpuState late = state_with({{0, series(500, 600, dip(0, 0, 0.1))}});
  GpuCostTracker tr2;
  tr2.update(ev, late, {}, 30, 600);
  EXPECT_TRUE(tr2.jobs().empty());
}

TEST(GpuCostTracker, GoodputFiguresOverTheWindow) {
  // Two saves of job a on 2 GPUs, 16 GPU-seconds each; over a 100 s window
  // ending at 200 with samples since 0: 2 GPUs x 100 s = 200 GPU-seconds;
  // only the save at [150, 160) ended inside: 16 / 200 = 8 %.
  auto f = [](double t) { return (t >= 50 && t < 60) || (t >= 150 && t < 160) ? 0.1 : 0.9; };
  GpuState st = state_with({{0, series(0, 200, f)}, {1, series(0, 200, f)}});
  EventCatalog ev;
  ev.steps[StepKey{"staging", "a", 1}] = paused(50, 60);
  ev.steps[StepKey{"staging", "a", 2}] = paused(150, 160);
  GpuCostTracker tr;
  tr.update(ev, st, {}, 30, 200);
  AlertRules rules;
  rules.goodput_low.window_seconds = 100;
  auto figs = gpu_job_figures(tr, 200, rules);
  ASSERT_EQ(figs.size(), 1u);
  EXPECT_NEAR(figs[0].lost_in_window, 16.0, 1e-9);
  EXPECT_NEAR(figs[0].gpu_seconds_in_window, 200.0, 1e-9);
  ASSERT_TRUE(figs[0].lost_ratio);
  EXPECT_NEAR(*figs[0].lost_ratio, 0.08, 1e-9);
  // Each save lost 16 GPU-seconds, below the default floor of 30: no streak.
  EXPECT_EQ(figs[0].stalled_streak, 0u);
  rules.stalling_gpus.min_lost_gpu_seconds = 16;
  EXPECT_EQ(gpu_job_figures(tr, 200, rules)[0].stalled_streak, 2u);
  ASSERT_EQ(figs[0].drops.size(), 2u);
  EXPECT_NEAR(figs[0].drops[1], 8.0 / 9.0, 1e-9);
}

TEST(GpuSeries, RingKeepsTheNewestAndFoldsSamplesIntoBuckets) {
  GpuSeries s(3, 1.0);
  EXPECT_TRUE(s.add(10.2, 0.5));
  EXPECT_TRUE(s.add(10.9, 1.0));  // same bucket (10, 11]
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].end, 11);
  EXPECT_DOUBLE_EQ(s[0].mean, 0.75);
  EXPECT_EQ(s[0].samples, 2u);
  EXPECT_TRUE(s.add(11.0, 0.25));  // t = 11 ends bucket (10, 11]
  EXPECT_DOUBLE_EQ(s[0].mean, (0.5 + 1.0 + 0.25) / 3);
  EXPECT_TRUE(s.add(12, 0));
  EXPECT_TRUE(s.add(13, 0));
  EXPECT_TRUE(s.add(14, 0));  // drops the oldest
  EXPECT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].end, 12);
  EXPECT_FALSE(s.add(5, 0.5));  // older than the newest bucket: dropped
  EXPECT_FALSE(s.add(15, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(s.add(15, 7));  // clamped to 1
  EXPECT_DOUBLE_EQ(s.back().mean, 1.0);
  // Now (12, 13], (13, 14], (14, 15]: the first ending after 13 is the second.
  EXPECT_EQ(s.upper(13), 1u);
  EXPECT_EQ(s.upper(12), 0u);
  EXPECT_EQ(s.upper(15), 3u);
}

// The chunked ring against a plain deque doing the same (the ring's old
// shape), over several chunks and wraps; and copies share all but the
// chunk the next write touches, while each copy keeps reading what it had.
TEST(GpuSeries, CopiesShareTheirChunksAndEachKeepsItsOwnBuckets) {
  const std::size_t cap = 3 * GpuSeries::kChunk + 5;
  GpuSeries s(cap, 1.0);
  std::deque<GpuBucket> want;
  auto add = [&](double end, double mean) {
    ASSERT_TRUE(s.add_bucket(end, mean, 1));
    if (want.size() == cap) want.pop_front();
    want.push_back(GpuBucket{end, mean, 1});
  };
  auto same = [](const GpuSeries& got, const std::deque<GpuBucket>& w) {
    ASSERT_EQ(got.size(), w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      ASSERT_DOUBLE_EQ(got[i].end, w[i].end) << i;
      ASSERT_DOUBLE_EQ(got[i].mean, w[i].mean) << i;
    }
  };
  for (int i = 1; i <= 1000; ++i) add(i, (i % 10) / 10.0);  // wraps the ring 4 times
  same(s, want);

  const GpuSeries copy = s;  // what a published snapshot holds
  const std::deque<GpuBucket> copy_want = want;
  // A bucket is shared when both series hand out the same object.
  ASSERT_EQ(&copy[0], &s[0]);
  ASSERT_EQ(&copy.back(), &s.back());
  add(1001, 0.5);  // the writer's next poll: the ring is full, the oldest goes
  same(s, want);
  same(copy, copy_want);  // untouched by the write
  // The write cloned the newest chunk only: older buckets are still shared
  // (s's bucket i is copy's i + 1 now).
  EXPECT_EQ(&copy[1], &s[0]);
  EXPECT_NE(&copy.back(), &s[s.size() - 2]);
  EXPECT_DOUBLE_EQ(copy.back().end, s[s.size() - 2].end);
  // Folding into the newest bucket of a fresh copy clones again, not in place.
  const GpuSeries copy2 = s;
  ASSERT_TRUE(s.add(1001, 1.0));  // t = 1001 ends bucket (1000, 1001]
  EXPECT_DOUBLE_EQ(s.back().mean, 0.75);
  EXPECT_DOUBLE_EQ(copy2.back().mean, 0.5);
}

// What the collector refuses: further than kGpuMaxFutureSkewSeconds past now.
// And why: a ring takes nothing older than its newest bucket, so one bucket
// from 2100 would make it refuse every sample of today.
TEST(GpuSeries, ASampleFromTheFutureIsBeyondTheSkewAndWouldHideEveryLaterOne) {
  EXPECT_DOUBLE_EQ(kGpuMaxFutureSkewSeconds, 60);
  EXPECT_FALSE(gpu_sample_from_future(1060, 1000));
  EXPECT_TRUE(gpu_sample_from_future(1060.5, 1000));
  EXPECT_TRUE(gpu_sample_from_future(4102444800, 1000));
  EXPECT_TRUE(gpu_sample_from_future(std::numeric_limits<double>::infinity(), 1000));
  EXPECT_FALSE(gpu_sample_from_future(std::numeric_limits<double>::quiet_NaN(), 1000));
  EXPECT_FALSE(gpu_sample_from_future(10, 1000));  // the past is the ring's to judge
  GpuSeries s(8, 1.0);
  EXPECT_TRUE(s.add(1000, 0.5));
  EXPECT_TRUE(s.add(4102444800, 0.5));
  EXPECT_FALSE(s.add(1001, 0.5));  // hence the refusal before the ring
}

}  // namespace
}  // namespace ckptmon
