#include "rules/downsample.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

constexpr double kDay = 86400;
// Aligned to an hour so bucket boundaries are easy to reason about.
constexpr double kNow = 1'700'002'800.0;  // 1700002800 % 3600 == 0

std::vector<double> kept(const std::vector<double>& ts, double now, const HistoryPolicy& p) {
  auto drop = samples_to_delete(ts, now, p);
  std::set<std::size_t> d(drop.begin(), drop.end());
  std::vector<double> out;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!d.contains(i)) out.push_back(ts[i]);
  }
  return out;
}

TEST(RulesDownsample, YoungSamplesAllStay) {
  std::vector<double> ts;
  for (int i = 0; i < 100; ++i) ts.push_back(kNow - i * 15.0);
  EXPECT_TRUE(samples_to_delete(ts, kNow, HistoryPolicy{}).empty());
}

TEST(RulesDownsample, OneSamplePerFiveMinutesAfterADay) {
  // Every 60 s for one hour, two days ago: 12 buckets of 5 minutes, the
  // earliest of each stays.
  const double start = kNow - 2 * kDay;  // hour-aligned
  std::vector<double> ts;
  for (int i = 59; i >= 0; --i) ts.push_back(start + i * 60.0);  // any order
  auto k = kept(ts, kNow, HistoryPolicy{});
  std::sort(k.begin(), k.end());
  ASSERT_EQ(k.size(), 12u);
  for (int b = 0; b < 12; ++b) EXPECT_EQ(k[b], start + b * 300.0);
}

TEST(RulesDownsample, OneSamplePerHourAfterThirtyDaysAndNoneAfterAYear) {
  const double start = kNow - 40 * kDay;
  std::vector<double> ts;
  for (int i = 0; i < 24 * 12; ++i) ts.push_back(start + i * 300.0);  // a day of 5-minute samples
  ts.push_back(kNow - 366 * kDay);
  auto k = kept(ts, kNow, HistoryPolicy{});
  ASSERT_EQ(k.size(), 24u);
  for (int h = 0; h < 24; ++h) EXPECT_EQ(k[h], start + h * 3600.0);
}

TEST(RulesDownsample, PruningAgainLaterKeepsWhatPruningOnceWouldKeep) {
  // Irregular samples over 40 days; prune every 6 hours of simulated time and
  // compare with a single prune of the full set at the end.
  std::vector<double> all;
  double t = kNow - 40 * kDay;
  std::uint64_t x = 12345;
  while (t < kNow) {
    all.push_back(t);
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t += 20 + static_cast<double>((x >> 33) % 200);
  }
  const HistoryPolicy p;
  std::vector<double> live;
  std::size_t next = 0;
  for (double now = kNow - 35 * kDay; now <= kNow + 35 * kDay; now += 6 * 3600) {
    while (next < all.size() && all[next] <= now) live.push_back(all[next++]);
    live = kept(live, now, p);
  }
  while (next < all.size()) live.push_back(all[next++]);
  const double end = kNow + 35 * kDay;
  EXPECT_EQ(kept(live, end, p), kept(all, end, p));
  EXPECT_LT(kept(all, end, p).size(), all.size() / 4);
}

TEST(RulesDownsample, SamplesFromTheFutureStayAndNaNGoes) {
  std::vector<double> ts{kNow + 1000, std::nan(""), kNow - 400 * kDay};
  EXPECT_EQ(samples_to_delete(ts, kNow, HistoryPolicy{}), (std::vector<std::size_t>{1, 2}));
}

TEST(RulesDownsample, LevelsAreConfigurable) {
  HistoryPolicy p;
  p.raw_retention_seconds = 60;
  p.levels = {{10, 120}};
  // Ages 61..119 s at 1 s spacing: one per 10 s bucket; older than 120 s: gone.
  std::vector<double> ts;
  for (int age = 61; age <= 130; ++age) ts.push_back(kNow - age);
  auto k = kept(ts, kNow, p);
  std::sort(k.begin(), k.end());
  // Buckets of ages 61..120: t from kNow-120 to kNow-61; kNow is a multiple of 10.
  std::vector<double> expect;
  for (double b = kNow - 120; b <= kNow - 61; b += 10) expect.push_back(b);
  EXPECT_EQ(k, expect);
}

}  // namespace
}  // namespace ckptmon
