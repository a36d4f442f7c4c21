// GET /api/v1/history underneath: query_history over a real state database,
// the parameters it takes, and the bound on the answer.

#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/web.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

using testing::TempDir;

// Tier "a": a sample every 60 s from t=0 to t=3540 (60 samples), avail falls
// 1000 bytes per sample from 100000, size 200000; job "j" stores 10 x i.
std::unique_ptr<Store> filled(const TempDir& dir) {
  std::string error;
  auto store = Store::open(dir.str() + "/state", &error);
  EXPECT_TRUE(store) << error;
  HistoryWrite w;
  for (int i = 0; i < 60; ++i) {
    TierSample s;
    s.t = 60.0 * i;
    s.size_bytes = 200000;
    s.avail_bytes = 100000 - 1000.0 * i;
    s.job_stored_bytes["j"] = 10.0 * i;
    w.samples.emplace_back("a", s);
    s.job_stored_bytes.clear();
    w.samples.emplace_back("b", s);
  }
  store->post([w](sql::Db& db) { write_history(db, w); });
  store->flush();
  return store;
}

HistoryResult run(Store& store, const HistoryQuery& q) {
  return store.call<HistoryResult>([q](sql::Db& db) { return query_history(db, q); });
}

TEST(HistoryQuery, EverySampleOfTheRangeWithoutAStep) {
  TempDir dir;
  auto store = filled(dir);
  HistoryQuery q;
  q.tier = "a";
  q.since = 600;  // samples 10..20
  q.until = 1200;
  const HistoryResult r = run(*store, q);
  ASSERT_FALSE(r.too_many_points);
  // size, avail, used of a, stored of a/j: 11 points each.
  ASSERT_EQ(r.series.size(), 4u);
  EXPECT_EQ(r.points, 44u);
  EXPECT_EQ(r.series[0].series, "avail_bytes");  // tier series by name, then the job
  EXPECT_EQ(r.series[1].series, "size_bytes");
  EXPECT_EQ(r.series[2].series, "used_bytes");
  EXPECT_EQ(r.series[3].series, "stored_bytes");
  EXPECT_EQ(r.series[3].job, "j");
  ASSERT_EQ(r.series[0].points.size(), 11u);
  EXPECT_EQ(r.series[0].points.front().t, 600);
  EXPECT_EQ(r.series[0].points.front().v, 90000);  // 100000 - 1000 x 10
  EXPECT_EQ(r.series[2].points.back().v, 120000);  // 200000 - (100000 - 20000)
  EXPECT_EQ(r.series[3].points.back().v, 200);
}

TEST(HistoryQuery, AStepKeepsTheNewestSampleOfEachBucket) {
  TempDir dir;
  auto store = filled(dir);
  HistoryQuery q;
  q.tier = "a";
  q.series = "avail_bytes";
  q.since = 0;
  q.until = 3600;
  q.step = 600;  // buckets [0,600) ... [3000,3600): 6, newest sample of each
  const HistoryResult r = run(*store, q);
  ASSERT_EQ(r.series.size(), 1u);
  ASSERT_EQ(r.series[0].points.size(), 6u);
  for (int b = 0; b < 6; ++b) {
    const double t = 600.0 * b + 540;
    EXPECT_EQ(r.series[0].points[static_cast<std::size_t>(b)].t, t);
    EXPECT_EQ(r.series[0].points[static_cast<std::size_t>(b)].v, 100000 - 1000 * (t / 60));
  }
}

TEST(HistoryQuery, AJobFilterGivesOnlyThatJobsStoredBytes) {
  TempDir dir;
  auto store = filled(dir);
  HistoryQuery q;
  q.job = "j";
  q.since = 0;
  q.until = 3600;
  const HistoryResult r = run(*store, q);
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_EQ(r.series[0].tier, "a");
  EXPECT_EQ(r.series[0].series, "stored_bytes");
  EXPECT_EQ(r.series[0].points.size(), 60u);
}

TEST(HistoryQuery, AnAnswerPastTheLimitIsCountedNotRead) {
  TempDir dir;
  auto store = filled(dir);
  HistoryQuery q;
  q.since = 0;
  q.until = 3600;
  q.max_points = 400;  // a: 3 x 60 + 60, b: 3 x 60 = 420
  const HistoryResult r = run(*store, q);
  ASSERT_TRUE(r.too_many_points);
  EXPECT_EQ(*r.too_many_points, 420u);
  EXPECT_TRUE(r.series.empty());
  q.max_points = 420;
  EXPECT_FALSE(run(*store, q).too_many_points);
}

// The rules' figures kept with each sample from schema 6 on: a series each,
// a point only where the sample has the figure (unknown is not 0), thinned
// by step like the others.
TEST(HistoryQuery, TheRulesFiguresAreSeriesWithPointsOnlyWhereKnown) {
  TempDir dir;
  std::string error;
  auto store = Store::open(dir.str() + "/state", &error);
  ASSERT_TRUE(store) << error;
  HistoryWrite w;
  for (int i = 0; i < 4; ++i) {
    TierSample s;
    s.t = 100.0 * i;
    s.size_bytes = 1000;
    s.avail_bytes = 500;
    if (i >= 1) {  // the first sample was taken before the tier's first walk
      s.cleanup_pending_bytes = 10.0 * i;
      s.cleanup_oldest_age_seconds = 60.0 * i;
      s.partial_bytes = 0;  // known to be none: a point at 0
      s.required_capacity_bytes = 700.0 + i;
    }
    w.samples.emplace_back("a", s);
  }
  store->post([w](sql::Db& db) { write_history(db, w); });
  store->flush();

  HistoryQuery q;
  q.since = 0;
  q.until = 1000;
  const HistoryResult r = run(*store, q);
  std::map<std::string, std::vector<HistoryPoint>> by;
  for (const HistorySeries& s : r.series) by[s.series] = s.points;
  ASSERT_EQ(by.size(), 7u);  // size, avail, used + the four figures
  for (const char* f : {"cleanup_pending_bytes", "cleanup_oldest_age_seconds", "partial_bytes",
                        "required_capacity_bytes"}) {
    ASSERT_EQ(by[f].size(), 3u) << f;
    EXPECT_EQ(by[f].front().t, 100) << f;
  }
  EXPECT_EQ(by["size_bytes"].size(), 4u);
  EXPECT_EQ(by["cleanup_pending_bytes"].back().v, 30);
  EXPECT_EQ(by["cleanup_oldest_age_seconds"].back().v, 180);
  EXPECT_EQ(by["partial_bytes"].back().v, 0);
  EXPECT_EQ(by["required_capacity_bytes"].back().v, 703);
  EXPECT_EQ(r.points, 4u * 3 + 3u * 4);  // points returned, not rows counted

  q.series = "required_capacity_bytes";
  q.step = 200;  // buckets [0,200) [200,400): the newest of each
  const HistoryResult one = run(*store, q);
  ASSERT_EQ(one.series.size(), 1u);
  ASSERT_EQ(one.series[0].points.size(), 2u);
  EXPECT_EQ(one.series[0].points[0].t, 100);
  EXPECT_EQ(one.series[0].points[0].v, 701);
  EXPECT_EQ(one.series[0].points[1].v, 703);
  EXPECT_TRUE(is_history_series("cleanup_oldest_age_seconds"));
}

TEST(HistoryQuery, ParametersAreCheckedAndNamed) {
  const HistoryPolicy policy;  // raw 1d, 5m for 30d, 1h for 365d
  const double now = 100 * 86400.0;
  HistoryQuery q;
  std::string error;
  ASSERT_TRUE(parse_history_query({{"since", "30d"}}, now, policy, &q, &error)) << error;
  EXPECT_EQ(q.since, now - 30 * 86400.0);
  EXPECT_EQ(q.until, now);
  EXPECT_EQ(q.step, 300);  // the 30-day-old end is at 5 m resolution
  ASSERT_TRUE(parse_history_query({{"since", "2h"}}, now, policy, &q, &error)) << error;
  EXPECT_EQ(q.step, 0);  // all raw
  ASSERT_TRUE(parse_history_query({{"since", "90d"}, {"step", "2h"}}, now, policy, &q, &error));
  EXPECT_EQ(q.step, 7200);
  ASSERT_TRUE(parse_history_query({{"since", "90d"}}, now, policy, &q, &error));
  EXPECT_EQ(q.step, 3600);

  EXPECT_FALSE(parse_history_query({{"series", "bogus"}}, now, policy, &q, &error));
  EXPECT_EQ(error,
            "series: unknown series \"bogus\"; expected size_bytes, avail_bytes, used_bytes, "
            "stored_bytes, cleanup_pending_bytes, cleanup_oldest_age_seconds, partial_bytes or "
            "required_capacity_bytes");
  EXPECT_FALSE(parse_history_query({{"since", "yesterday"}}, now, policy, &q, &error));
  EXPECT_NE(error.find("since: expected a duration"), std::string::npos) << error;
  EXPECT_FALSE(parse_history_query({{"since", std::to_string(now + 60)}}, now, policy, &q, &error));
  EXPECT_NE(error.find("since: "), std::string::npos);
  EXPECT_NE(error.find("is in the future"), std::string::npos) << error;
  EXPECT_FALSE(parse_history_query({{"step", "-5"}}, now, policy, &q, &error));
  EXPECT_NE(error.find("step: "), std::string::npos) << error;
  EXPECT_FALSE(parse_history_query({{"since", "1h"}, {"until", "2h"}}, now, policy, &q, &error));
  EXPECT_NE(error.find("until: "), std::string::npos) << error;
  EXPECT_FALSE(
      parse_history_query({{"job", "j"}, {"series", "avail_bytes"}}, now, policy, &q, &error));
  EXPECT_NE(error.find("series: avail_bytes is a tier series"), std::string::npos) << error;
}

TEST(HistoryQuery, TheJsonNamesTheResolutionOfEachPartOfTheRange) {
  const HistoryPolicy policy;
  const double now = 100 * 86400.0;
  HistoryQuery q;
  q.since = now - 40 * 86400.0;
  q.until = now;
  q.step = 3600;
  HistoryResult r;
  r.series.push_back({"a", "", "avail_bytes", {{1, 2}, {3, 4}}});
  r.points = 2;
  auto doc = nlohmann::json::parse(render_history_json(q, r, now, policy));
  ASSERT_EQ(doc["resolutions"].size(), 3u) << doc.dump();
  EXPECT_EQ(doc["resolutions"][0]["resolution"], "1h");
  EXPECT_EQ(doc["resolutions"][0]["from"], q.since);
  EXPECT_EQ(doc["resolutions"][0]["to"], now - 30 * 86400.0);
  EXPECT_EQ(doc["resolutions"][1]["resolution"], "5m");
  EXPECT_EQ(doc["resolutions"][2]["resolution"], "raw");
  EXPECT_EQ(doc["resolutions"][2]["to"], now);
  EXPECT_EQ(doc["series"][0]["job"], nullptr);
  EXPECT_EQ(doc["series"][0]["points"][1][1], 4);
  EXPECT_EQ(doc["points"], 2);
}

}  // namespace
}  // namespace ckptmon
