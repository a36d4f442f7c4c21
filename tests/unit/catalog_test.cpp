#include "model/catalog.hpp"

#include <algorithm>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

Checkpoint ckpt(const std::string& path, CkptState state, double first, double last) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = "job";
  c.path = path;
  c.state = state;
  c.first_write = first;
  c.last_write = last;
  c.bytes = 100;
  return c;
}

ScanOutcome outcome(std::vector<Checkpoint> cs) {
  ScanOutcome o;
  o.checkpoints = std::move(cs);
  o.jobs = {"job"};
  return o;
}

TEST(Catalog, FirstSeenIsKeptAndLastSeenMoves) {
  TierCatalog cat;
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kInProgress, 0, 5)}), 100);
  ASSERT_EQ(cat.checkpoints.size(), 1u);
  EXPECT_EQ(cat.checkpoints[0].first_seen, 100);
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kInProgress, 0, 5)}), 200);
  EXPECT_EQ(cat.checkpoints[0].first_seen, 100);
  EXPECT_EQ(cat.checkpoints[0].last_seen, 200);
}

TEST(Catalog, SkewIsCountedOnceWhenFirstSeenCommitted) {
  TierCatalog cat;
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kInProgress, 0, 1)}), 10);
  EXPECT_TRUE(cat.skew_by_job.empty());  // not committed yet
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kCommitted, 0, 7)}), 20);
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kCommitted, 0, 7),
                           ckpt("job/b", CkptState::kCommitted, 10, 10.05)}),
             30);
  const HistogramData& h = cat.skew_by_job.at("job");
  EXPECT_EQ(h.count, 2u);
  EXPECT_DOUBLE_EQ(h.sum, 7.05);
  // 0.05 lands in the first bucket (<= 0.1), 7 in the <= 10 bucket.
  const auto bounds = skew_buckets();
  ASSERT_EQ(h.buckets.size(), bounds.size() + 1);
  EXPECT_EQ(h.buckets[0], 1u);
  const auto ten = static_cast<std::size_t>(std::find(bounds.begin(), bounds.end(), 10.0) - bounds.begin());
  EXPECT_EQ(h.buckets[ten], 1u);
  EXPECT_TRUE(cat.checkpoints[0].skew_observed);
}

TEST(Catalog, ReportsChangedAndRemoved) {
  TierCatalog cat;
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kCommitted, 0, 1),
                           ckpt("job/b", CkptState::kInProgress, 0, 1)}),
             10);
  EXPECT_EQ(cat.changed.size(), 2u);
  cat.changed.clear();
  // a unchanged, b grows, c is new, nothing removed.
  auto b = ckpt("job/b", CkptState::kInProgress, 0, 2);
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kCommitted, 0, 1), b,
                           ckpt("job/c", CkptState::kInProgress, 0, 1)}),
             20);
  ASSERT_EQ(cat.changed.size(), 2u);
  EXPECT_EQ(cat.changed[0].path, "job/b");
  EXPECT_EQ(cat.changed[1].path, "job/c");
  EXPECT_TRUE(cat.removed.empty());
  cat.changed.clear();
  merge_scan(cat, outcome({ckpt("job/c", CkptState::kInProgress, 0, 1)}), 30);
  std::sort(cat.removed.begin(), cat.removed.end());
  EXPECT_EQ(cat.removed, (std::vector<std::string>{"job/a", "job/b"}));
  EXPECT_EQ(cat.checkpoints.size(), 1u);
}

TEST(Catalog, UnreachableRootKeepsTheCatalog) {
  TierCatalog cat;
  merge_scan(cat, outcome({ckpt("job/a", CkptState::kCommitted, 0, 1)}), 10);
  ScanOutcome failed;
  failed.root_ok = false;
  failed.error = "/lustre/ckpt: No such file or directory";
  merge_scan(cat, failed, 20);
  EXPECT_EQ(cat.checkpoints.size(), 1u);
  EXPECT_TRUE(cat.removed.empty());
  EXPECT_EQ(cat.scan.last_error, failed.error);
  EXPECT_EQ(cat.scan.scans, 2u);
}

}  // namespace
}  // namespace ckptmon
