#include "rules/series.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

constexpr double kNow = 1'700'000'000.0;

TEST(RulesSeries, LeastSquaresOnAnExactLine) {
  // v = 1000 - 2 (t - now): slope -2, value 1000 at now, zero 500 s later.
  std::vector<Point> p;
  for (int i = 0; i <= 10; ++i) p.push_back({kNow - 100 + 10 * i, 1000 + 2.0 * (100 - 10 * i)});
  auto fit = least_squares(p, kNow);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->slope, -2.0, 1e-9);
  EXPECT_NEAR(fit->intercept, 1000.0, 1e-6);
  EXPECT_NEAR(*time_to_zero(p, kNow), 500.0, 1e-6);
}

TEST(RulesSeries, LeastSquaresOnScatteredPointsMatchesHandComputation) {
  // x = 0, 10, 20, 30 (now = 30), y = 10, 8, 7, 3: mean x 15, mean y 7,
  // Sxy = -110, Sxx = 500, slope -0.22, value at now 7 - 0.22*15 = 3.7.
  const double t0 = kNow - 30;
  std::vector<Point> p{{t0, 10}, {t0 + 10, 8}, {t0 + 20, 7}, {t0 + 30, 3}};
  auto fit = least_squares(p, kNow);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->slope, -0.22, 1e-12);
  EXPECT_NEAR(fit->intercept, 3.7, 1e-9);
  EXPECT_NEAR(*time_to_zero(p, kNow), 3.7 / 0.22, 1e-9);
}

TEST(RulesSeries, TimeToZeroWhenFlatRisingUnknownOrAlreadyEmpty) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Point> flat{{kNow - 10, 5}, {kNow, 5}};
  std::vector<Point> rising{{kNow - 10, 5}, {kNow, 6}};
  std::vector<Point> one{{kNow, 5}};
  std::vector<Point> same_time{{kNow, 5}, {kNow, 4}};
  std::vector<Point> empty_now{{kNow - 10, 10}, {kNow, -1}};
  EXPECT_EQ(time_to_zero(flat, kNow), inf);
  EXPECT_EQ(time_to_zero(rising, kNow), inf);
  EXPECT_FALSE(time_to_zero(one, kNow));
  EXPECT_FALSE(time_to_zero(same_time, kNow));
  EXPECT_EQ(time_to_zero(empty_now, kNow), 0.0);
}

TEST(RulesSeries, WindowDropsFutureOldAndNaNAndSorts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Point> p{
      {kNow - 5, 1}, {kNow + 5, 2}, {kNow - 50, 3}, {kNow - 1, nan}, {kNow - 9, 4}};
  auto w = window_points(p, kNow, 10);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].v, 4);
  EXPECT_EQ(w[1].v, 1);
}

TEST(RulesSeries, CounterRateHandlesResetsLikePromQL) {
  // 100 -> 200 (+100) -> 50 (reset: +50) -> 80 (+30): 180 over 30 s.
  std::vector<Point> p{{0, 100}, {10, 200}, {20, 50}, {30, 80}};
  EXPECT_DOUBLE_EQ(*counter_rate(p), 6.0);
  // Rises only: 100 + 0 + 30 over 30 s.
  EXPECT_DOUBLE_EQ(*rise_rate(p), 130.0 / 30.0);
  EXPECT_FALSE(counter_rate(std::vector<Point>{{0, 1}}));
  EXPECT_FALSE(rise_rate(std::vector<Point>{{5, 1}, {5, 2}}));
}

TEST(RulesSeries, NearestRankQuantiles) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Ten values 1..10 shuffled: p50 is the 5th smallest (ceil(0.5 x 10)), p90
  // the 9th, q = 1 the largest.
  std::vector<double> v{7, 3, 10, 1, 9, 2, 8, 5, 4, 6};
  EXPECT_EQ(*nearest_rank(v, 0.5), 5);
  EXPECT_EQ(*nearest_rank(v, 0.9), 9);
  EXPECT_EQ(*nearest_rank(v, 1.0), 10);
  // Three values: p50 is the 2nd (ceil 1.5), p90 the 3rd (ceil 2.7).
  EXPECT_EQ(*nearest_rank({30, 10, 20}, 0.5), 20);
  EXPECT_EQ(*nearest_rank({30, 10, 20}, 0.9), 30);
  EXPECT_EQ(*nearest_rank({42}, 0.5), 42);
  // NaN is not a value; nothing left is nothing known.
  EXPECT_EQ(*nearest_rank({nan, 4, nan}, 0.9), 4);
  EXPECT_FALSE(nearest_rank({}, 0.5));
  EXPECT_FALSE(nearest_rank({nan}, 0.5));
  EXPECT_FALSE(nearest_rank({1, 2}, 0));
}

}  // namespace
}  // namespace ckptmon
