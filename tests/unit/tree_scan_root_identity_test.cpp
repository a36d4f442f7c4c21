// Issue 27.2: a tier root that is no longer the tree the first walk walked
// (its mount gone with umount -l, leaving the empty directory of the parent
// file system; or the tier path a symlink re-pointed elsewhere) is a tier that
// is down, not a tier that is empty: its catalog is kept and flagged, and when
// the tree comes back nothing is counted again.

#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/tier_stats.hpp"
#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"
#include "model/state.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;

void write_checkpoints(const testing::TempDir& d, const std::string& under) {
  for (const char* ck : {"jobA/save_100", "jobA/save_200", "jobB/save_100"}) {
    d.write(under + std::string(ck) + "/rank0.bin", 100);
    d.write(under + std::string(ck) + "/COMMITTED", 0);
  }
}

std::uint64_t skew_count(const TierCatalog& cat) {
  std::uint64_t n = 0;
  for (const auto& [_, h] : cat.skew_by_job) n += h.count;
  return n;
}

std::size_t flagged(const TierCatalog& cat) {
  return static_cast<std::size_t>(std::count_if(cat.checkpoints.begin(), cat.checkpoints.end(),
                                                [](const Checkpoint& c) { return c.unreadable; }));
}

// The two collectors that judge a tier, on one State, as the daemon runs them.
class TreeScanRootIdentity : public ::testing::Test {
 protected:
  void configure(const std::string& path) {
    Config cfg;
    cfg.global.proc_path = "/proc";
    TierConfig t;
    t.name = "rapid";
    t.path = path;
    t.jobs.depth = 1;
    t.partial_after = std::chrono::seconds(1);
    t.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
    cfg.tiers = {t};
    stamp_generation(cfg, state_.config.get());
    auto shared = std::make_shared<const Config>(cfg);
    state_.apply_config(shared);
    scan_.configure(*shared);
    stats_.configure(*shared);
  }
  // One probe and one walk, applied; the walk's outcome.
  void cycle() {
    stats_.prepare("rapid", state_)()(state_);
    state_.catalogs["rapid"].edit().removed.clear();
    scan_.prepare("rapid", state_)()(state_);
    stats_.prepare("rapid", state_)()(state_);  // the next probe does not bring it back up
    clock_->advance(15);
  }
  const TierCatalog& cat() { return *state_.catalogs["rapid"]; }
  const TierState& tier() { return state_.tiers.at("rapid"); }

  // Checks the tier is down as `why` says, with all 3 checkpoints kept and flagged.
  void expect_down_and_kept(const std::string& why) {
    EXPECT_FALSE(tier().up);
    EXPECT_NE(tier().down_reason.find(why), std::string::npos) << tier().down_reason;
    EXPECT_NE(cat().scan.last_error.find(why), std::string::npos) << cat().scan.last_error;
    EXPECT_TRUE(cat().removed.empty());
    EXPECT_EQ(cat().checkpoints.size(), 3u);
    EXPECT_EQ(flagged(cat()), 3u);
    EXPECT_EQ(skew_count(cat()), 3u);
    auto jobs = summarize_jobs(cat());
    EXPECT_TRUE(jobs["jobA"].unreadable);
    ASSERT_NE(jobs["jobA"].latest_committed, nullptr);  // the recovery point stays
    EXPECT_EQ(jobs["jobA"].latest_committed_step(), 200);
  }
  void expect_up_and_same() {
    EXPECT_TRUE(tier().up) << tier().down_reason;
    EXPECT_EQ(cat().scan.last_error, "");
    EXPECT_TRUE(cat().removed.empty());
    EXPECT_EQ(cat().checkpoints.size(), 3u);
    EXPECT_EQ(flagged(cat()), 0u);
    EXPECT_EQ(skew_count(cat()), 3u);  // not counted again
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>(1'000'000'000.0);
  State state_;
  TreeScanCollector scan_{clock_};
  TierStatsCollector stats_{clock_};
};

TEST_F(TreeScanRootIdentity, ATierPathSymlinkRepointedAndBackIsDownMeanwhileAndNotRecounted) {
  testing::TempDir d;
  write_checkpoints(d, "a/");
  fs::create_directories(d.path() / "b");  // elsewhere on the same file system: same device
  const fs::path link = d.path() / "tier";
  auto point = [&](const char* to) {
    const fs::path tmp = d.path() / "tier.new";
    fs::create_directory_symlink(d.path() / to, tmp);
    fs::rename(tmp, link);  // atomically, as an operator's ln -sfn does
  };
  point("a");
  configure(link.string());
  cycle();
  ASSERT_TRUE(tier().up) << tier().down_reason;
  ASSERT_EQ(cat().checkpoints.size(), 3u);
  ASSERT_EQ(skew_count(cat()), 3u);

  for (int flap = 0; flap < 3; ++flap) {
    SCOPED_TRACE("flap " + std::to_string(flap));
    point("b");
    cycle();
    expect_down_and_kept("root changed");
    point("a");
    cycle();
    expect_up_and_same();
  }
}

// The same with a real mount: a bind mount of a tmpfs detached as umount -l
// does (the path is then the empty directory below it), and mounted again.
TEST_F(TreeScanRootIdentity, AMountDetachedAndBackIsDownMeanwhileAndNotRecounted) {
  testing::TempDir d;
  const fs::path src = d.path() / "src";
  const fs::path tier_path = d.path() / "tier";
  fs::create_directories(src);
  fs::create_directories(tier_path);
  if (::geteuid() != 0 || ::mount("ckptmon-test", src.c_str(), "tmpfs", 0, "size=16m") != 0) {
    GTEST_SKIP() << "needs to mount a tmpfs (root with CAP_SYS_ADMIN)";
  }
  struct Unmount {
    std::vector<fs::path> at;
    ~Unmount() {
      for (const auto& p : at) ::umount2(p.c_str(), MNT_DETACH);
    }
  } unmount{{tier_path, src}};
  write_checkpoints(d, "src/");
  auto attach = [&] {
    ASSERT_EQ(::mount(src.c_str(), tier_path.c_str(), nullptr, MS_BIND, nullptr), 0);
  };
  attach();
  configure(tier_path.string());
  cycle();
  ASSERT_TRUE(tier().up) << tier().down_reason;
  ASSERT_EQ(cat().checkpoints.size(), 3u);

  for (int flap = 0; flap < 2; ++flap) {
    SCOPED_TRACE("flap " + std::to_string(flap));
    ASSERT_EQ(::umount2(tier_path.c_str(), MNT_DETACH), 0);
    cycle();
    expect_down_and_kept("mount gone");
    attach();
    cycle();
    expect_up_and_same();
  }
}

}  // namespace
}  // namespace ckptmon
