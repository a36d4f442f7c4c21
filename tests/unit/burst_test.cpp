// The burst engine with a fake clock and pacer: pacing (interval, drain
// rate) is computed from time that only moves when the engine sleeps, so
// these tests never wait; the files are real.

#include "daemon/burst.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"

namespace ckptmon::burst {
namespace {

namespace fs = std::filesystem;

Options base(const testing::TempDir& dir) {
  fs::create_directories(dir.path() / "t");
  Options o;
  o.target = dir.file("t");
  o.ranks = 2;
  o.shard_size = 1 << 20;
  o.checkpoints = 3;
  o.interval = 10;
  o.fsync = false;
  return o;
}

TEST(Burst, IntervalIsPacedOnTheInjectedClock) {
  testing::TempDir dir;
  Options o = base(dir);
  FakeClock clock;
  FakePacer pacer;
  Burst b(o, clock, pacer);
  Result r;
  ASSERT_TRUE(b.run(r)) << r.error;
  ASSERT_EQ(r.checkpoints.size(), 3u);
  // Two waits between three saves; the saves themselves take no fake time.
  EXPECT_DOUBLE_EQ(pacer.slept(), 20.0);
  for (const auto& c : r.checkpoints) EXPECT_EQ(c.outcome, CkptOutcome::kCommitted);
}

// Every look at the clock takes a second: each save lasts several seconds.
class TickingPacer final : public Pacer {
 public:
  double mono() override { return now_ += 1; }
  bool sleep(double) override { return true; }
  void stop() override {}
  bool stopped() const override { return false; }

 private:
  std::atomic<double> now_{0};
};

TEST(Burst, WindowMetOrMissedByTheSaveDuration) {
  for (const double window : {0.5, 1e9}) {
    testing::TempDir dir;
    Options o = base(dir);
    o.interval = 0;
    o.checkpoints = 1;
    o.window = window;
    FakeClock clock;
    TickingPacer pacer;
    Burst b(o, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
    ASSERT_EQ(r.checkpoints.size(), 1u);
    EXPECT_GT(r.checkpoints[0].duration, 1.0);
    ASSERT_TRUE(r.checkpoints[0].window_met.has_value());
    EXPECT_EQ(*r.checkpoints[0].window_met, window > 1);
  }
}

TEST(Burst, DrainRateLimitsTheCopy) {
  testing::TempDir dir;
  Options o = base(dir);
  o.interval = 0;
  fs::create_directories(dir.path() / "d");
  o.drain_to = dir.file("d");
  o.drain_rate = 1 << 20;  // 1 MiB/s
  FakeClock clock;
  FakePacer pacer;
  Burst b(o, clock, pacer);
  Result r;
  ASSERT_TRUE(b.run(r)) << r.error;
  // 3 saves of 2 shards of 1 MiB plus a .metadata of 4096 + 64 × 2 bytes each.
  const double bytes = 3 * (2.0 * (1 << 20) + 4096 + 128);
  EXPECT_NEAR(pacer.slept(), bytes / (1 << 20), 1e-6);
  ASSERT_EQ(r.drains.size(), 3u);
  for (const auto& d : r.drains) {
    EXPECT_TRUE(d.ok);
    EXPECT_EQ(d.files, 3u);
  }
  EXPECT_TRUE(fs::exists(dir.path() / "d/job0/step-300/.metadata"));
  EXPECT_EQ(b.drain_backlog(), 0u);
}

TEST(Burst, FailedWriterLeavesHalfAShardAndNoMarker) {
  testing::TempDir dir;
  Options o = base(dir);
  o.interval = 0;
  o.fail = {{1, 2}};
  FakeClock clock;
  FakePacer pacer;
  Burst b(o, clock, pacer);
  Result r;
  ASSERT_TRUE(b.run(r)) << r.error;
  ASSERT_EQ(r.checkpoints.size(), 3u);
  EXPECT_EQ(r.checkpoints[1].outcome, CkptOutcome::kPartial);
  EXPECT_EQ(r.checkpoints[1].failed_rank, 1);
  EXPECT_EQ(fs::file_size(dir.path() / "t/job0/step-200/__1_0.distcp"), 512u * 1024);
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/step-200/.metadata"));
  EXPECT_TRUE(fs::exists(dir.path() / "t/job0/step-300/.metadata"));
}

TEST(Burst, RefusesToWriteIntoADirectoryItDidNotCreate) {
  testing::TempDir dir;
  Options o = base(dir);
  fs::create_directories(dir.path() / "t/job0");
  FakeClock clock;
  FakePacer pacer;
  Burst b(o, clock, pacer);
  Result r;
  EXPECT_FALSE(b.run(r));
  EXPECT_NE(r.error.find("was not created by this burst"), std::string::npos) << r.error;
  EXPECT_TRUE(fs::is_empty(dir.path() / "t/job0"));
}

TEST(Burst, CleanupFollowsRenamesAndKeepsWhatChanged) {
  testing::TempDir dir;
  Options o = base(dir);
  o.layout = Layout::kOrbax;  // renames its temporary directory
  o.interval = 0;
  o.checkpoints = 2;
  FakeClock clock;
  FakePacer pacer;
  {
    Burst b(o, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
  }
  dir.write_text("t/job0/200/user-notes.txt", "mine\n");
  std::uint64_t removed = 0, kept = 0;
  std::vector<std::string> problems;
  EXPECT_FALSE(cleanup(o.target, &removed, &kept, &problems));
  // Everything burst made is gone except the directories holding the user's file.
  EXPECT_TRUE(fs::exists(dir.path() / "t/job0/200/user-notes.txt"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/100"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/200/commit_success.txt"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/200/state"));
  EXPECT_EQ(kept, 2u);  // job0/200 and job0
  fs::remove(dir.path() / "t/job0/200/user-notes.txt");
  EXPECT_TRUE(cleanup(o.target, &removed, &kept, &problems));
  EXPECT_TRUE(fs::is_empty(dir.path() / "t"));
}

}  // namespace
}  // namespace ckptmon::burst
