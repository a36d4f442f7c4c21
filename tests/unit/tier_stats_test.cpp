#include "collectors/tier_stats.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "temp_dir.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testing::TempDir;

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string dev_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return "0:0";
  return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

// The mountinfo escaping of proc(5), done here rather than borrowed.
std::string escape_mountinfo(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ') {
      out += "\\040";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(ProbeTier, FiguresEqualStatvfs) {
  TempDir dir;
  TierProbe p = probe_tier(dir.path().string(), "/proc");
  struct statvfs v {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &v), 0);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.error, "");
  const double unit = static_cast<double>(v.f_frsize);
  EXPECT_EQ(p.stats.size_bytes, static_cast<double>(v.f_blocks) * unit);
  EXPECT_EQ(p.stats.files, static_cast<double>(v.f_files));
  // Other processes write to the same file system between the two reads.
  const double slack_bytes = 4096.0 * unit;
  EXPECT_NEAR(p.stats.free_bytes, static_cast<double>(v.f_bfree) * unit, slack_bytes);
  EXPECT_NEAR(p.stats.avail_bytes, static_cast<double>(v.f_bavail) * unit, slack_bytes);
  EXPECT_NEAR(p.stats.files_free, static_cast<double>(v.f_ffree), 1024.0);
  EXPECT_LE(p.stats.avail_bytes, p.stats.free_bytes);
  EXPECT_LE(p.stats.free_bytes, p.stats.size_bytes);
  // The real mount table: the mount holds the path.
  EXPECT_FALSE(p.stats.fstype.empty());
  ASSERT_FALSE(p.stats.mountpoint.empty());
  const std::string real = dir.path().string();
  EXPECT_TRUE(p.stats.mountpoint == "/" || real == p.stats.mountpoint ||
              real.starts_with(p.stats.mountpoint + "/"))
      << p.stats.mountpoint << " does not hold " << real;
}

TEST(ProbeTier, MissingPathIsDown) {
  TempDir dir;
  TierProbe p = probe_tier((dir.path() / "nope").string(), "/proc");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "path does not exist");
}

TEST(ProbeTier, RegularFileIsDown) {
  TempDir dir;
  write_file(dir.path() / "file", "x");
  TierProbe p = probe_tier((dir.path() / "file").string(), "/proc");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "path is not a directory");
}

TEST(ProbeTier, PathThroughARegularFileIsDown) {
  TempDir dir;
  write_file(dir.path() / "file", "x");
  TierProbe p = probe_tier((dir.path() / "file" / "sub").string(), "/proc");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "path is not a directory");
}

TEST(ProbeTier, UnreadableMountinfoIsDown) {
  TempDir dir;
  fs::create_directories(dir.path() / "tier");
  const std::string proc = (dir.path() / "emptyproc").string();
  TierProbe p = probe_tier((dir.path() / "tier").string(), proc);
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(p.error.starts_with("cannot read " + proc + "/self/mountinfo")) << p.error;
}

// A fake procfs whose mountinfo puts a mount at `mount_point`, on the real
// device of the tier so that the device tie-break applies as in real life.
struct FakeMount {
  TempDir dir;
  fs::path tier;
  fs::path proc;
  fs::path mount_point;

  explicit FakeMount(const std::string& mount_options, const std::string& super_options,
                     const std::string& mount_dir_name = "mnt") {
    mount_point = dir.path() / mount_dir_name;
    tier = mount_point / "ckpt";
    proc = dir.path() / "proc";
    fs::create_directories(tier);
    write_file(proc / "self" / "mountinfo",
               "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
               "100 27 " +
                   dev_of(tier) + " / " + escape_mountinfo(mount_point.string()) + " " +
                   mount_options + " shared:9 - fakefs /dev/fake0 " + super_options + "\n");
  }
};

TEST(ProbeTier, SuperblockReadOnlyIsReadOnly) {
  FakeMount m("ro,relatime", "ro,inode64");
  TierProbe p = probe_tier(m.tier.string(), m.proc.string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.stats.readonly);
  EXPECT_EQ(p.stats.mountpoint, m.mount_point.string());
  EXPECT_EQ(p.stats.fstype, "fakefs");
  EXPECT_EQ(p.stats.device, "/dev/fake0");
}

TEST(ProbeTier, ReadOnlyBindMountOfAWritableFileSystemIsNotReadOnly) {
  // Per-mount "ro" (what statvfs' ST_RDONLY reflects) but the superblock is rw.
  FakeMount m("ro,relatime", "rw,inode64");
  TierProbe p = probe_tier(m.tier.string(), m.proc.string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_FALSE(p.stats.readonly);
  EXPECT_EQ(p.stats.fstype, "fakefs");
}

TEST(ProbeTier, OptionMerelyContainingRoIsNotReadOnly) {
  FakeMount m("rw", "rw,errors=remount-ro");
  TierProbe p = probe_tier(m.tier.string(), m.proc.string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_FALSE(p.stats.readonly);
}

TEST(ProbeTier, MountPointWithASpace) {
  FakeMount m("rw", "ro", "my ckpt");
  TierProbe p = probe_tier(m.tier.string(), m.proc.string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.stats.mountpoint, m.mount_point.string());
  EXPECT_TRUE(p.stats.readonly);
}

TEST(ProbeTier, SymlinkedTierIsMatchedByItsRealPath) {
  FakeMount m("rw", "ro");
  const fs::path link = m.dir.path() / "link";
  fs::create_directory_symlink(m.tier, link);
  TierProbe p = probe_tier(link.string(), m.proc.string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.stats.mountpoint, m.mount_point.string());
  EXPECT_EQ(p.stats.fstype, "fakefs");
}

TEST(ProbeTier, NoMatchingMountLeavesIdentityEmptyButIsUp) {
  TempDir dir;
  fs::create_directories(dir.path() / "tier");
  write_file(dir.path() / "proc/self/mountinfo", "100 27 0:1 / /elsewhere rw - tmpfs x ro\n");
  TierProbe p = probe_tier((dir.path() / "tier").string(), (dir.path() / "proc").string());
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.stats.mountpoint, "");
  EXPECT_FALSE(p.stats.readonly);
  EXPECT_GT(p.stats.size_bytes, 0.0);
}

// --- the collector around probe_tier ----------------------------------------

class TierStatsCollectorTest : public ::testing::Test {
 protected:
  void configure(const std::vector<TierConfig>& tiers) {
    Config cfg;
    cfg.global.proc_path = "/proc";
    cfg.global.probe_timeout = 300ms;
    cfg.tiers = tiers;
    stamp_generation(cfg, state_.config.get());  // as the daemon does on every load
    auto shared = std::make_shared<const Config>(cfg);
    state_.apply_config(shared);
    collector_.configure(*shared);
  }
  void run(const std::string& target) {
    Job job = collector_.prepare(target, state_);
    Update u = job();
    ASSERT_TRUE(u);
    u(state_);
  }

  TempDir dir_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>(1000.0);
  TierStatsCollector collector_{clock_};
  State state_;
};

TEST_F(TierStatsCollectorTest, TargetsAreTheTierNamesInConfigOrder) {
  configure({{"z", "/z", TierRole::kRapid, ""}, {"a", "/a", TierRole::kStaging, "z"}});
  EXPECT_EQ(collector_.targets(), (std::vector<std::string>{"z", "a"}));
  EXPECT_EQ(collector_.name(), "tier_stats");
}

TEST_F(TierStatsCollectorTest, UpTierGetsFiguresAndTimestamps) {
  configure({{"t", dir_.path().string(), TierRole::kRapid, ""}});
  run("t");
  const TierState& t = state_.tiers.at("t");
  EXPECT_TRUE(t.up);
  EXPECT_TRUE(t.has_stats);
  EXPECT_EQ(t.down_reason, "");
  EXPECT_EQ(t.last_success, 1000.0);
  EXPECT_EQ(t.last_probe, 1000.0);
  EXPECT_GT(t.stats.size_bytes, 0.0);
}

TEST_F(TierStatsCollectorTest, MissingTierIsDownAndKeepsItsLastGoodFigures) {
  const fs::path p = dir_.path() / "tier";
  fs::create_directories(p);
  configure({{"t", p.string(), TierRole::kRapid, ""}});
  run("t");
  ASSERT_TRUE(state_.tiers.at("t").up);
  const double size = state_.tiers.at("t").stats.size_bytes;
  fs::remove(p);
  clock_->advance(15);
  run("t");
  const TierState& t = state_.tiers.at("t");
  EXPECT_FALSE(t.up);
  EXPECT_EQ(t.down_reason, "path does not exist");
  EXPECT_EQ(t.last_probe, 1015.0);
  EXPECT_EQ(t.last_success, 1000.0);
  EXPECT_TRUE(t.has_stats);
  EXPECT_EQ(t.stats.size_bytes, size);
}

TEST_F(TierStatsCollectorTest, DeadlineMarksTheTierDownAndALateResultRecoversIt) {
  configure({{"t", dir_.path().string(), TierRole::kRapid, ""}});
  Job job = collector_.prepare("t", state_);
  clock_->advance(1);
  collector_.on_deadline("t", state_);
  EXPECT_FALSE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").down_reason, "statfs did not return within 300ms (hung mount?)");
  EXPECT_EQ(state_.tiers.at("t").last_probe, 1001.0);
  clock_->advance(1);
  job()(state_);
  EXPECT_TRUE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").last_success, 1002.0);
}

TEST_F(TierStatsCollectorTest, FailureMarksTheTierDownWithTheError) {
  configure({{"t", dir_.path().string(), TierRole::kRapid, ""}});
  run("t");
  collector_.on_failure("t", "worker exploded", state_);
  EXPECT_FALSE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").down_reason, "worker exploded");
}

TEST_F(TierStatsCollectorTest, NotProbedTurnsAnUpTierDownAndKeepsADownTiersReason) {
  configure({{"t", dir_.path().string(), TierRole::kRapid, ""},
             {"h", (dir_.path() / "missing").string(), TierRole::kRapid, ""}});
  run("t");
  run("h");
  ASSERT_TRUE(state_.tiers.at("t").up);
  clock_->advance(5);
  // Its probe never reached a worker: "up" is no longer a fact about now.
  collector_.on_not_started("t", "not probed: all workers busy with stuck jobs", state_);
  EXPECT_FALSE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").down_reason, "not probed: all workers busy with stuck jobs");
  EXPECT_EQ(state_.tiers.at("t").not_probed_since, 1005.0);
  EXPECT_EQ(state_.tiers.at("t").last_success, 1000.0);  // the age: since this
  clock_->advance(5);
  collector_.on_not_started("t", "not probed: all workers busy with stuck jobs", state_);
  EXPECT_EQ(state_.tiers.at("t").not_probed_since, 1005.0);  // since the first
  // A tier already down keeps why it was found down.
  collector_.on_not_started("h", "not probed: another job for this target is stuck", state_);
  EXPECT_EQ(state_.tiers.at("h").down_reason, "path does not exist");
  EXPECT_EQ(state_.tiers.at("h").not_probed_since, 1010.0);
  // The next probe that runs ends the stretch.
  clock_->advance(1);
  run("t");
  EXPECT_TRUE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").not_probed_since, 0.0);
  EXPECT_EQ(state_.tiers.at("t").last_success, 1011.0);
}

TEST_F(TierStatsCollectorTest, ALateResultForARepointedOrRemovedTierIsIgnored) {
  const fs::path old_path = dir_.path() / "old";
  fs::create_directories(old_path);
  configure({{"t", old_path.string(), TierRole::kRapid, ""}});
  Job job = collector_.prepare("t", state_);
  // A reload points the tier elsewhere while the probe of the old path runs.
  configure({{"t", (dir_.path() / "missing").string(), TierRole::kRapid, ""}});
  job()(state_);
  EXPECT_FALSE(state_.tiers.at("t").up);
  EXPECT_EQ(state_.tiers.at("t").down_reason, "not probed yet");

  Job job2 = collector_.prepare("t", state_);
  configure({});
  job2()(state_);  // must not re-create the removed tier
  EXPECT_TRUE(state_.tiers.empty());
  collector_.on_deadline("t", state_);
  collector_.on_failure("t", "x", state_);
  EXPECT_TRUE(state_.tiers.empty());
}

}  // namespace
}  // namespace ckptmon
