#include "model/catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

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
  merge_scan(cat,
             outcome({ckpt("job/a", CkptState::kCommitted, 0, 7),
                      ckpt("job/b", CkptState::kCommitted, 10, 10.05)}),
             30);
  const HistogramData& h = cat.skew_by_job.at("job");
  EXPECT_EQ(h.count, 2u);
  EXPECT_DOUBLE_EQ(h.sum, 7.05);
  // 0.05 lands in the first bucket (<= 0.1), 7 in the <= 10 bucket.
  const auto bounds = skew_buckets();
  ASSERT_EQ(h.buckets.size(), bounds.size() + 1);
  EXPECT_EQ(h.buckets[0], 1u);
  const auto ten =
      static_cast<std::size_t>(std::find(bounds.begin(), bounds.end(), 10.0) - bounds.begin());
  EXPECT_EQ(h.buckets[ten], 1u);
  EXPECT_TRUE(cat.checkpoints[0].skew_observed);
}

TEST(Catalog, ReportsChangedAndRemoved) {
  TierCatalog cat;
  merge_scan(cat,
             outcome({ckpt("job/a", CkptState::kCommitted, 0, 1),
                      ckpt("job/b", CkptState::kInProgress, 0, 1)}),
             10);
  EXPECT_EQ(cat.changed.size(), 2u);
  cat.changed.clear();
  // a unchanged, b grows, c is new, nothing removed.
  auto b = ckpt("job/b", CkptState::kInProgress, 0, 2);
  merge_scan(cat,
             outcome({ckpt("job/a", CkptState::kCommitted, 0, 1), b,
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
  // Verified removals, counted (100 bytes each) and kept across the store's hand-off.
  EXPECT_EQ(cat.removed_checkpoints_total, 2u);
  EXPECT_EQ(cat.removed_bytes_total, 200u);
  cat.removed.clear();
  merge_scan(cat, outcome({}), 40);
  EXPECT_EQ(cat.removed_checkpoints_total, 3u);
  EXPECT_EQ(cat.removed_bytes_total, 300u);
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
  EXPECT_EQ(cat.removed_checkpoints_total, 0u);  // not seen is not removed
  EXPECT_EQ(cat.scan.last_error, failed.error);
  EXPECT_EQ(cat.scan.scans, 2u);
}

TEST(Catalog, SummarizeJobsCountsAndPicksTheLatestCommitted) {
  TierCatalog cat;
  cat.jobs = {"empty", "job"};
  auto with = [](Checkpoint c, std::int64_t step) {
    c.step = step;
    return c;
  };
  cat.checkpoints = {
      with(ckpt("job/s10", CkptState::kCommitted, 0, 10), 10),
      with(ckpt("job/s20-old", CkptState::kCommitted, 0, 20), 20),
      with(ckpt("job/s20-new", CkptState::kCommitted, 0, 30), 20),  // same step, written last
      with(ckpt("job/s30", CkptState::kPartial, 0, 40), 30),
      with(ckpt("job/s40", CkptState::kInProgress, 0, 50), 40),
      with(ckpt("job/unknown", CkptState::kCommitted, 0, 60), -1),
  };
  cat.checkpoints.push_back(ckpt("other/x", CkptState::kCommitted, 0, 1));
  cat.checkpoints.back().job = "other";  // step unknown, no job directory listed
  const auto jobs = summarize_jobs(cat);
  ASSERT_EQ(jobs.size(), 3u);
  const JobSummary& j = jobs.at("job");
  EXPECT_EQ(j.checkpoints, 6u);
  EXPECT_EQ(j.count(CkptState::kCommitted), 4u);
  EXPECT_EQ(j.count(CkptState::kInProgress), 1u);
  EXPECT_EQ(j.count(CkptState::kPartial), 1u);
  EXPECT_EQ(j.stored_bytes, 600u);
  EXPECT_EQ(j.partial_bytes, 100u);
  ASSERT_NE(j.latest_committed, nullptr);
  EXPECT_EQ(j.latest_committed->path, "job/s20-new");
  EXPECT_EQ(j.latest_committed_step(), 20);
  const JobSummary& e = jobs.at("empty");
  EXPECT_EQ(e.checkpoints, 0u);
  EXPECT_EQ(e.latest_committed, nullptr);
  EXPECT_EQ(e.latest_committed_step(), -1);
  const JobSummary& o = jobs.at("other");
  ASSERT_NE(o.latest_committed, nullptr);
  EXPECT_EQ(o.latest_committed_step(), -1);
}

TEST(Catalog, PathsOverlap) {
  EXPECT_TRUE(paths_overlap("job", "job"));
  EXPECT_TRUE(paths_overlap("job", "job/a"));
  EXPECT_TRUE(paths_overlap("job/a/b", "job"));
  EXPECT_TRUE(paths_overlap("", "job/a"));  // the root holds everything
  EXPECT_FALSE(paths_overlap("job", "jobs/a"));
  EXPECT_FALSE(paths_overlap("job/a", "job/b"));
}

// Issue 9.2: a directory that becomes unreadable three times and readable
// again keeps its checkpoints, flagged while unreadable; nothing is removed
// and the skew histogram counts each checkpoint once.
TEST(Catalog, UnreadableIsNotDeleted) {
  TierCatalog cat;
  const std::vector<Checkpoint> all{ckpt("job/a", CkptState::kCommitted, 0, 2),
                                    ckpt("job/b", CkptState::kCommitted, 0, 3),
                                    ckpt("other/c", CkptState::kCommitted, 0, 1)};
  merge_scan(cat, outcome(all), 100);
  ASSERT_EQ(cat.skew_by_job["job"].count, 3u);  // all three are in job "job"
  cat.changed.clear();
  for (int flap = 0; flap < 3; ++flap) {
    const double seen = cat.checkpoints[0].last_seen;
    ScanOutcome gone = outcome({all[2]});
    gone.unreadable = {{"job", "job", EACCES}};
    merge_scan(cat, std::move(gone), 200 + flap);
    ASSERT_EQ(cat.checkpoints.size(), 3u) << flap;
    EXPECT_TRUE(cat.removed.empty());
    EXPECT_EQ(cat.skew_by_job["job"].count, 3u);
    EXPECT_TRUE(cat.checkpoints[0].unreadable);     // job/a
    EXPECT_TRUE(cat.checkpoints[1].unreadable);     // job/b
    EXPECT_FALSE(cat.checkpoints[2].unreadable);    // other/c was read
    EXPECT_EQ(cat.checkpoints[0].last_seen, seen);  // as last seen
    EXPECT_EQ(cat.checkpoints[0].first_seen, 100);
    auto jobs = summarize_jobs(cat);
    EXPECT_TRUE(jobs["job"].unreadable);
    EXPECT_EQ(jobs["job"].count(CkptState::kCommitted), 3u);
    EXPECT_EQ(cat.unreadable.size(), 1u);

    merge_scan(cat, outcome(all), 300 + flap);
    ASSERT_EQ(cat.checkpoints.size(), 3u);
    EXPECT_TRUE(cat.removed.empty());
    EXPECT_EQ(cat.skew_by_job["job"].count, 3u);
    EXPECT_FALSE(cat.checkpoints[0].unreadable);
    EXPECT_EQ(cat.checkpoints[0].first_seen, 100);
    EXPECT_FALSE(summarize_jobs(cat)["job"].unreadable);
    EXPECT_TRUE(cat.unreadable.empty());
  }
  EXPECT_TRUE(cat.changed.empty());              // the store has nothing new to write
  EXPECT_EQ(cat.removed_checkpoints_total, 0u);  // unreadable three times: nothing removed
  // Gone for real (no unreadable directory covers it): removed.
  merge_scan(cat, outcome({all[0], all[2]}), 400);
  EXPECT_EQ(cat.removed, std::vector<std::string>{"job/b"});
  EXPECT_EQ(cat.removed_checkpoints_total, 1u);
  EXPECT_EQ(cat.removed_bytes_total, 100u);
}

// The daemon merges into a catalog its published snapshots share (the
// CopyOnWrite overload). It must come out exactly as the in-place merge, with
// nothing the snapshot holds changed and nothing pending for the store lost.
TEST(Catalog, ASharedCatalogMergesAsInPlaceAndLeavesTheSnapshotAsItWas) {
  auto same = [](const TierCatalog& a, const TierCatalog& b) -> std::string {
    if (a.checkpoints.size() != b.checkpoints.size()) return "checkpoint count";
    for (std::size_t i = 0; i < a.checkpoints.size(); ++i) {
      const Checkpoint& x = a.checkpoints[i];
      const Checkpoint& y = b.checkpoints[i];
      if (!same_record(x, y) || x.last_seen != y.last_seen || x.unreadable != y.unreadable) {
        return "checkpoint " + x.path;
      }
    }
    if (a.changed.size() != b.changed.size()) return "changed";
    if (a.removed != b.removed) return "removed";
    if (a.unreadable != b.unreadable) return "unreadable";
    if (a.jobs != b.jobs || a.scanned != b.scanned || a.stale != b.stale) return "flags";
    if (a.scan.scans != b.scan.scans || a.scan.last_error != b.scan.last_error) return "scan";
    if (a.findings != b.findings) return "findings";
    if (a.skew_by_job.size() != b.skew_by_job.size()) return "skew jobs";
    for (const auto& [job, h] : a.skew_by_job) {
      if (b.skew_by_job.at(job).count != h.count) return "skew " + job;
    }
    return "";
  };
  const std::vector<Checkpoint> all{ckpt("job/a", CkptState::kCommitted, 0, 2),
                                    ckpt("job/b", CkptState::kCommitted, 0, 3),
                                    ckpt("other/c", CkptState::kInProgress, 0, 1)};
  std::vector<ScanOutcome> walks;
  walks.push_back(outcome(all));
  walks.push_back(outcome({all[2]}));
  walks.back().unreadable = {{"job", "job", EACCES}};  // job/a and job/b kept as they were
  walks.push_back(outcome({all[0], ckpt("job/d", CkptState::kCommitted, 4, 9)}));  // b, c gone
  walks.push_back(ScanOutcome{});
  walks.back().root_ok = false;  // the root could not be walked: nothing changes
  walks.back().error = "EIO";
  walks.push_back(outcome({all[0]}));

  TierCatalog plain;
  CopyOnWrite<TierCatalog> shared;
  double now = 100;
  for (std::size_t w = 0; w < walks.size(); ++w) {
    const std::shared_ptr<const TierCatalog> snapshot = shared.shared();
    const TierCatalog before = *snapshot;
    if (w == 2) {
      // Not yet handed to the store when the next walk reports: kept.
      plain.removed.emplace_back("old/x");
      shared.edit().removed.emplace_back("old/x");
    }
    merge_scan(plain, walks[w], now);
    merge_scan(shared, walks[w], now);
    EXPECT_EQ(same(*shared, plain), "") << "walk " << w;
    EXPECT_EQ(same(*snapshot, before), "") << "walk " << w << ": the snapshot changed";
    now += 10;
  }
  // The figures themselves, from the walks above: job/a kept through the
  // unreadable walk with its first sighting; b and c removed once, x kept.
  ASSERT_EQ(shared->checkpoints.size(), 1u);
  EXPECT_EQ(shared->checkpoints[0].path, "job/a");
  EXPECT_EQ(shared->checkpoints[0].first_seen, 100);
  EXPECT_EQ(shared->checkpoints[0].last_seen, 140);
  std::vector<std::string> removed = shared->removed;
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"job/b", "job/d", "old/x", "other/c"}));
  EXPECT_EQ(shared->scan.scans, 5u);
  EXPECT_EQ(shared->skew_by_job.at("job").count, 3u);  // a, b, d: each once
}

TEST(Catalog, UnreadableAboveTheJobLevelKeepsEveryJobBelow) {
  TierCatalog cat;
  merge_scan(cat, outcome({ckpt("team/job/a", CkptState::kCommitted, 0, 2)}), 100);
  ScanOutcome o = outcome({});
  o.unreadable = {{"", "team", EIO}};
  merge_scan(cat, std::move(o), 200);
  ASSERT_EQ(cat.checkpoints.size(), 1u);
  EXPECT_TRUE(cat.checkpoints[0].unreadable);
  EXPECT_TRUE(summarize_jobs(cat)["job"].unreadable);
  EXPECT_TRUE(cat.removed.empty());
}

}  // namespace
}  // namespace ckptmon
