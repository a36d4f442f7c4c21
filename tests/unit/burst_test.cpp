// The burst engine with a fake clock and pacer: pacing (interval, drain
// rate) is computed from time that only moves when the engine sleeps, so
// these tests never wait; the files are real.

#include "tools/burst/burst.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"
#include "tools/burst/burst_fs.hpp"
#include "tools/burst/burst_manifest.hpp"

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
  o.key_file = dir.file("state/burst.key");  // never the user's own
  return o;
}

CleanupReport clean(const std::string& dir, const std::string& key_file) {
  CleanupReport r;
  cleanup(dir, key_file, &r);
  return r;
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
  // 3 saves of 2 shards of 1 MiB plus each one's .metadata (its size on disk).
  const auto meta = static_cast<double>(fs::file_size(dir.path() / "d/job0/step-300/.metadata"));
  ASSERT_GT(meta, 500);  // two tensors' chunks and storage rows for two ranks, pickled
  const double bytes = 3 * (2.0 * (1 << 20) + meta);
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
  CleanupReport rep;
  EXPECT_FALSE(cleanup(o.target, o.key_file, &rep));
  // Everything burst made is gone except the directories holding the user's file.
  EXPECT_TRUE(fs::exists(dir.path() / "t/job0/200/user-notes.txt"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/100"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/200/commit_success.txt"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/job0/200/state"));
  EXPECT_EQ(rep.kept, 2u);  // job0/200 and job0
  EXPECT_EQ(rep.refused, 0u);
  fs::remove(dir.path() / "t/job0/200/user-notes.txt");
  EXPECT_TRUE(cleanup(o.target, o.key_file, &rep));
  EXPECT_TRUE(fs::is_empty(dir.path() / "t"));
}

// ---- hostile manifests and swapped directories ---------------------------------

// "dev ino sec.nsec" of `p` as the manifest lists it.
std::string identity_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  char ns[16];
  std::snprintf(ns, sizeof ns, "%09ld", static_cast<long>(st.st_ctim.tv_nsec));
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_ctim.tv_sec) + "." + ns;
}

// Regular files below `dir`, counted without burst's code.
std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && !e.is_symlink()) ++n;
  }
  return n;
}

// A target with a file outside it that a planted manifest aims at, and the
// invoking user's burst key (they have run burst before).
struct Planted {
  testing::TempDir dir;
  fs::path target = dir.path() / "t";
  fs::path outside = dir.path() / "outside";
  fs::path victim = outside / "victim.txt";
  std::string key_file = dir.file("state/burst.key");
  ManifestKey key;
  Planted() {
    fs::create_directories(target);
    fs::create_directories(outside);
    dir.write_text("outside/victim.txt", "not burst's\n");
    std::string err;
    EXPECT_TRUE(load_key(key_file, true, &key, &err)) << err;
  }
  // Lines as an attacker writes them: no digest.
  void plant(const std::string& text) const {
    std::ofstream(target / ".ckptmon-burst.manifest") << text;
  }
  // Lines with valid digests, as if burst itself had been led to write them:
  // what cleanup's own checks must still refuse.
  void plant_signed(const std::vector<std::string>& lines) const {
    std::string text;
    for (const auto& l : lines) text += sign_line(key, l);
    std::ofstream(target / ".ckptmon-burst.manifest") << text;
  }
};

TEST(BurstCleanup, PlantedAbsoluteEntryDeletesNothingOutside) {
  Planted p;
  const std::string line = "e " + identity_of(p.victim) + " " + p.victim.string();
  p.plant(line + "\n");
  CleanupReport r = clean(p.target.string(), p.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_TRUE(fs::exists(p.victim));
  EXPECT_EQ(r.removed, 0u);
  // Signed: an event log outside the target is named, never deleted; an
  // absolute file entry is refused.
  p.plant_signed({line});
  r = clean(p.target.string(), p.key_file);
  EXPECT_TRUE(r.trusted);
  EXPECT_TRUE(fs::exists(p.victim));
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(r.outside, 1u);
  EXPECT_EQ(r.refused, 0u);
  p.plant_signed({"f " + identity_of(p.victim) + " " + p.victim.string()});
  r = clean(p.target.string(), p.key_file);
  EXPECT_TRUE(r.trusted);
  EXPECT_TRUE(fs::exists(p.victim));
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(r.refused, 1u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find(p.victim.string() + ": refused: not a relative path"),
            std::string::npos)
      << r.problems[0];
}

TEST(BurstCleanup, PlantedEntryThroughASymlinkedDirectoryDeletesNothingOutside) {
  for (const bool walk : {false, true}) {
    use_walk_fallback_for_testing(walk);
    Planted p;
    fs::create_directory_symlink(p.outside, p.target / "link");
    const std::string line = "f " + identity_of(p.victim) + " link/victim.txt";
    p.plant(line + "\n");
    CleanupReport r = clean(p.target.string(), p.key_file);
    EXPECT_FALSE(r.trusted);
    EXPECT_TRUE(fs::exists(p.victim));
    EXPECT_EQ(r.removed, 0u);
    p.plant_signed({line});
    r = clean(p.target.string(), p.key_file);
    EXPECT_TRUE(fs::exists(p.victim)) << "walk fallback " << walk;
    EXPECT_EQ(r.removed, 0u);
    EXPECT_EQ(r.refused, 1u);
    ASSERT_EQ(r.problems.size(), 1u);
    EXPECT_NE(r.problems[0].find("link/victim.txt: refused: a symlink is on the way"),
              std::string::npos)
        << r.problems[0];
    use_walk_fallback_for_testing(false);
  }
}

TEST(BurstCleanup, PlantedRenameLineDeletesNothingOutside) {
  Planted p;
  // A relative entry renamed to an absolute directory, and a ".." entry.
  const std::vector<std::string> lines = {
      "e " + identity_of(p.victim) + " job0/victim.txt", "m job0 " + p.outside.string(),
      "f " + identity_of(p.victim) + " job1/victim.txt", "m job1 job1/../../outside",
      "f " + identity_of(p.victim) + " job2/../../outside/victim.txt"};
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  p.plant(text);
  CleanupReport r = clean(p.target.string(), p.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_TRUE(fs::exists(p.victim));
  EXPECT_EQ(r.removed, 0u);
  p.plant_signed(lines);
  r = clean(p.target.string(), p.key_file);
  EXPECT_TRUE(fs::exists(p.victim));
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(r.refused, 2u);  // the two ".." paths; the relative "e" entry is not a log path
}

TEST(BurstCleanup, ForgedManifestWithoutADigestDeletesNothing) {
  Planted p;
  // The user's own file in the target, listed with its true identity.
  const fs::path mine = p.dir.write_text("t/mine.txt", "user data\n");
  const std::string line = "f " + identity_of(mine) + " mine.txt";
  p.plant(line + "\n");
  CleanupReport r = clean(p.target.string(), p.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_EQ(r.removed, 0u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("not trusted, deleted nothing: line 1 carries no digest"),
            std::string::npos)
      << r.problems[0];
  // A digest made with another key is no better.
  ManifestKey other;
  other.bytes[0] = 1;
  std::ofstream(p.target / ".ckptmon-burst.manifest") << sign_line(other, line);
  r = clean(p.target.string(), p.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_NE(r.problems[0].find("line 1: its digest does not match"), std::string::npos)
      << r.problems[0];
  // No key at all: nothing can be checked, nothing goes.
  r = clean(p.target.string(), p.dir.file("state/missing.key"));
  EXPECT_FALSE(r.trusted);
  EXPECT_TRUE(fs::exists(mine));
}

TEST(BurstCleanup, ALineAddedToBurstsOwnManifestMakesItUntrusted) {
  testing::TempDir dir;
  Options o = base(dir);
  o.interval = 0;
  o.checkpoints = 1;
  FakeClock clock;
  FakePacer pacer;
  {
    Burst b(o, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
  }
  const fs::path mine = dir.write_text("t/mine.txt", "user data\n");
  std::ofstream(dir.path() / "t" / kManifestName, std::ios::app)
      << "f " << identity_of(mine) << " mine.txt\n";
  const std::size_t before = count_files(dir.path() / "t");
  CleanupReport r = clean(o.target, o.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(count_files(dir.path() / "t"), before);
  // And a burst will not add to it either.
  Options again = o;
  again.job_names = {"other"};
  Burst b(again, clock, pacer);
  Result res;
  EXPECT_FALSE(b.run(res));
  EXPECT_NE(res.error.find("not written by your burst"), std::string::npos) << res.error;
}

TEST(BurstCleanup, ManifestOfAnotherUserDeletesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the manifest";
  testing::TempDir dir;
  Options o = base(dir);
  o.checkpoints = 1;
  FakeClock clock;
  FakePacer pacer;
  {
    Burst b(o, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
  }
  ASSERT_EQ(::chown((dir.path() / "t" / kManifestName).c_str(), 65534, 65534), 0);
  const std::size_t before = count_files(dir.path() / "t");
  CleanupReport r = clean(o.target, o.key_file);
  EXPECT_FALSE(r.trusted);
  EXPECT_NE(r.problems[0].find("owned by uid 65534"), std::string::npos) << r.problems[0];
  EXPECT_EQ(count_files(dir.path() / "t"), before);
}

TEST(BurstCleanup, DirectorySwappedForASymlinkMidRunWritesNothingOutside) {
  for (const bool walk : {false, true}) {
    use_walk_fallback_for_testing(walk);
    for (const Layout layout : {Layout::kDcp, Layout::kOrbax, Layout::kDeepSpeed}) {
      testing::TempDir dir;
      Options o = base(dir);
      o.layout = layout;
      o.interval = 0;
      const fs::path outside = dir.path() / "outside";
      fs::create_directories(outside);
      FakeClock clock;
      FakePacer pacer;
      Burst b(o, clock, pacer);
      bool swapped = false;
      // After the first save commits, job0 (burst's own directory) becomes a
      // symlink to a directory outside the target.
      b.on_checkpoint([&](const CheckpointResult&) {
        if (swapped) return;
        swapped = true;
        fs::rename(dir.path() / "t/job0", dir.path() / "t/job0.moved");
        fs::create_directory_symlink(outside, dir.path() / "t/job0");
      });
      Result r;
      EXPECT_FALSE(b.run(r));
      EXPECT_TRUE(swapped);
      EXPECT_TRUE(fs::is_empty(outside))
          << layout_name(layout) << ": " << count_files(outside) << " files written outside";
      EXPECT_NE(r.error.find(o.target + "/job0"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("symlink"), std::string::npos) << r.error;
      // What burst did write (now under job0.moved) is still its to clean up
      // by hand; cleanup refuses the symlinked paths and leaves outside alone.
      CleanupReport rep = clean(o.target, o.key_file);
      EXPECT_TRUE(fs::is_empty(outside));
      EXPECT_GT(rep.refused, 0u);
    }
    use_walk_fallback_for_testing(false);
  }
}

TEST(BurstCleanup, LegitimateCleanupRemovesEverythingBurstCreated) {
  for (const bool walk : {false, true}) {
    use_walk_fallback_for_testing(walk);
    for (const Layout layout :
         {Layout::kDcp, Layout::kDeepSpeed, Layout::kMegatron, Layout::kHf, Layout::kOrbax}) {
      testing::TempDir dir;
      Options o = base(dir);
      o.layout = layout;
      o.interval = 0;
      o.jobs = 2;
      o.fail = {{1, 2}};
      fs::create_directories(dir.path() / "d");
      o.drain_to = dir.file("d");
      o.events = dir.file("t/events.jsonl");
      o.restore = true;
      o.keep_last = 1;
      FakeClock clock;
      FakePacer pacer;
      {
        Burst b(o, clock, pacer);
        Result r;
        ASSERT_TRUE(b.run(r)) << r.error;
        EXPECT_EQ(r.restores.size(), 2u);
        for (const auto& x : r.restores) EXPECT_TRUE(x.ok);
      }
      EXPECT_GT(count_files(dir.path() / "t"), 4u);
      EXPECT_GT(count_files(dir.path() / "d"), 2u);
      for (const std::string& d : {o.target, o.drain_to}) {
        CleanupReport r;
        EXPECT_TRUE(cleanup(d, o.key_file, &r))
            << layout_name(layout) << ": " << (r.problems.empty() ? "" : r.problems[0]);
        EXPECT_GT(r.removed, 0u);
        EXPECT_EQ(r.kept, 0u);
        EXPECT_EQ(r.refused, 0u);
        EXPECT_TRUE(fs::is_empty(d)) << layout_name(layout) << " " << d;
      }
    }
    use_walk_fallback_for_testing(false);
  }
}

TEST(BurstCleanup, KeyIsCreatedPrivateAndAPublicOneIsRefused) {
  testing::TempDir dir;
  const std::string kf = dir.file("a/b/burst.key");
  ManifestKey k1, k2;
  std::string err;
  ASSERT_TRUE(load_key(kf, true, &k1, &err)) << err;
  EXPECT_EQ(fs::status(kf).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(dir.path() / "a/b").permissions() & fs::perms::all, fs::perms::owner_all);
  ASSERT_TRUE(load_key(kf, true, &k2, &err)) << err;
  EXPECT_EQ(k1.bytes, k2.bytes);
  fs::permissions(kf, fs::perms::group_read, fs::perm_options::add);
  EXPECT_FALSE(load_key(kf, false, &k2, &err));
  EXPECT_NE(err.find("readable or writable by others"), std::string::npos) << err;
}

TEST(BurstCleanup, TornLastLineIsIgnoredAndCutByTheNextBurst) {
  testing::TempDir dir;
  Options o = base(dir);
  o.interval = 0;
  o.checkpoints = 1;
  FakeClock clock;
  FakePacer pacer;
  {
    Burst b(o, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
  }
  // A burst killed mid-line.
  std::ofstream(dir.path() / "t" / kManifestName, std::ios::app) << "f 1 2 3.000000004 job0/st";
  {
    Options again = o;
    again.job_names = {"other"};
    Burst b(again, clock, pacer);
    Result r;
    ASSERT_TRUE(b.run(r)) << r.error;
  }
  CleanupReport r;
  EXPECT_TRUE(cleanup(o.target, o.key_file, &r)) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_TRUE(fs::is_empty(dir.path() / "t"));
}

}  // namespace
}  // namespace ckptmon::burst
