// The beneath-a-descriptor calls of the burst engine on real trees, with
// openat2 and with the O_NOFOLLOW walk a kernel without it gets.

#include "tools/burst/burst_fs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "temp_dir.hpp"

namespace ckptmon::burst {
namespace {

namespace fs = std::filesystem;

TEST(BurstFs, SplitRelativeRefusesWhatCouldLeave) {
  std::vector<std::string> parts;
  EXPECT_TRUE(split_relative("job0/step-100/x", &parts));
  EXPECT_EQ(parts, (std::vector<std::string>{"job0", "step-100", "x"}));
  for (const char* bad : {"", "/etc/passwd", "a/../b", "..", "./a", "a//b", "a/", "a/."}) {
    EXPECT_FALSE(split_relative(bad, &parts)) << bad;
  }
}

class BurstFsModes : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { use_walk_fallback_for_testing(GetParam()); }
  void TearDown() override { use_walk_fallback_for_testing(false); }
};

TEST_P(BurstFsModes, NoSymlinkIsFollowedOnTheWayOrAtTheEnd) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "t/a/b");
  fs::create_directories(dir.path() / "outside/b");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "t/link");
  Fd root(::open(dir.file("t").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root.ok());
  Fd ok(open_dir_beneath(root.get(), "a/b"));
  EXPECT_TRUE(ok.ok());
  for (const char* via : {"link", "link/b"}) {
    errno = 0;
    EXPECT_LT(open_dir_beneath(root.get(), via), 0) << via;
    EXPECT_EQ(errno, ELOOP) << via;
  }
  errno = 0;
  EXPECT_LT(open_dir_beneath(root.get(), "a/../../outside"), 0);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_LT(open_file_beneath(root.get(), "link/new", O_WRONLY | O_CREAT | O_EXCL), 0);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_TRUE(fs::is_empty(dir.path() / "outside/b"));
  EXPECT_FALSE(fs::exists(dir.path() / "outside/new"));
}

TEST_P(BurstFsModes, RemoveTreeRemovesASymlinkInsideNotWhatItNames) {
  testing::TempDir dir;
  dir.write_text("t/ck/step-1/x.bin", "x");
  dir.write_text("outside/keep.txt", "keep");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "t/ck/step-1/link");
  Fd root(::open(dir.file("t").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(remove_tree_beneath(root.get(), "ck"));
  EXPECT_FALSE(fs::exists(dir.path() / "t/ck"));
  EXPECT_TRUE(fs::exists(dir.path() / "outside/keep.txt"));
  // A tree whose top is a symlink is not entered.
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "t/ck2");
  EXPECT_FALSE(remove_tree_beneath(root.get(), "ck2"));
  EXPECT_TRUE(fs::exists(dir.path() / "outside/keep.txt"));
}

TEST_P(BurstFsModes, WalkListsEntriesAndDoesNotDescendThroughSymlinks) {
  testing::TempDir dir;
  dir.write_text("t/ck/a.bin", "aa");
  dir.write_text("t/ck/sub/b.bin", "bbb");
  dir.write_text("outside/c.bin", "c");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "t/ck/link");
  Fd root(::open(dir.file("t").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<std::string> files;
  std::uint64_t bytes = 0;
  EXPECT_TRUE(walk_beneath(root.get(), "ck", [&](const std::string& rel, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) return;
    files.push_back(rel);
    bytes += static_cast<std::uint64_t>(st.st_size);
  }));
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"ck/a.bin", "ck/sub/b.bin"}));
  EXPECT_EQ(bytes, 5u);
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, BurstFsModes, ::testing::Bool(),
                         [](const auto& param_info) {
                           return param_info.param ? "walk" : "openat2";
                         });

}  // namespace
}  // namespace ckptmon::burst
