#include "collectors/dir_watcher.hpp"

#include <poll.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "temp_dir.hpp"

namespace ckptmon {
namespace {

// Waits (bounded) until the inotify descriptor has something to read.
bool readable(int fd) {
  struct pollfd p {
    fd, POLLIN, 0
  };
  return ::poll(&p, 1, 10'000) == 1;
}

TEST(DirWatcher, ReportsTheTierOfAChangedDirectory) {
  testing::TempDir t;
  std::filesystem::create_directories(t.path() / "a");
  std::filesystem::create_directories(t.path() / "b");
  DirWatcher w;
  ASSERT_GE(w.fd(), 0);
  ASSERT_TRUE(w.watch("staging", (t.path() / "a").string()));
  ASSERT_TRUE(w.watch("rapid", (t.path() / "b").string()));
  EXPECT_EQ(w.watches("staging"), 1u);
  t.write("a/step-1/__0_0.distcp", 10);
  ASSERT_TRUE(readable(w.fd()));
  EXPECT_EQ(w.drain(), (std::set<std::string>{"staging"}));
  EXPECT_TRUE(w.drain().empty());  // nothing more
}

TEST(DirWatcher, WatchingTwiceKeepsOneWatchAndTheCapHolds) {
  testing::TempDir t;
  DirWatcher w(DirWatcher::kEntryChanges, 2);
  for (const char* d : {"x", "y", "z"}) std::filesystem::create_directories(t.path() / d);
  EXPECT_TRUE(w.watch("t", (t.path() / "x").string()));
  EXPECT_TRUE(w.watch("t", (t.path() / "x").string()));
  EXPECT_EQ(w.watches("t"), 1u);
  EXPECT_TRUE(w.watch("t", (t.path() / "y").string()));
  EXPECT_FALSE(w.watch("t", (t.path() / "z").string()));  // cap of 2 reached
  EXPECT_FALSE(w.watch("t", (t.path() / "missing").string()));
}

TEST(DirWatcher, NeverWatchesThroughASymlink) {
  testing::TempDir t;
  std::filesystem::create_directories(t.path() / "real");
  std::filesystem::create_directory_symlink(t.path() / "real", t.path() / "link");
  DirWatcher w;
  EXPECT_FALSE(w.watch("t", (t.path() / "link").string()));
}

TEST(DirWatcher, ForgottenTiersReportNothing) {
  testing::TempDir t;
  DirWatcher w;
  ASSERT_TRUE(w.watch("old", t.str()));
  w.forget("old");
  EXPECT_EQ(w.watches("old"), 0u);
  t.write("file", 1);
  EXPECT_TRUE(w.drain().empty());
}

TEST(DirWatcher, DeletedDirectoryDropsItsWatch) {
  testing::TempDir t;
  std::filesystem::create_directories(t.path() / "ckpt");
  DirWatcher w;
  ASSERT_TRUE(w.watch("t", (t.path() / "ckpt").string()));
  std::filesystem::remove(t.path() / "ckpt");
  ASSERT_TRUE(readable(w.fd()));
  EXPECT_EQ(w.drain(), (std::set<std::string>{"t"}));
  EXPECT_EQ(w.watches("t"), 0u);
}

TEST(DirWatcher, NetworkFileSystemsArePolled) {
  EXPECT_TRUE(is_network_fs(0x6969));       // NFS
  EXPECT_TRUE(is_network_fs(0x0BD00BD0));   // Lustre
  EXPECT_TRUE(is_network_fs(0x65735546));   // FUSE
  EXPECT_FALSE(is_network_fs(0xEF53));      // ext4
  EXPECT_FALSE(is_network_fs(0x01021994));  // tmpfs
  EXPECT_FALSE(is_network_fs(0x58465342));  // XFS
}

}  // namespace
}  // namespace ckptmon

namespace ckptmon {
namespace {

TEST(DirWatcher, SetKeepsExactlyTheGivenDirectoriesAndSharesOverlaps) {
  testing::TempDir t;
  for (const char* d : {"a", "b", "c"}) std::filesystem::create_directories(t.path() / d);
  const std::string a = (t.path() / "a").string();
  const std::string b = (t.path() / "b").string();
  const std::string c = (t.path() / "c").string();
  DirWatcher w;
  w.set("glob1", {a, b});
  w.set("glob2", {b});
  EXPECT_EQ(w.watches("glob1"), 2u);
  w.set("glob1", {c});
  EXPECT_EQ(w.watches("glob1"), 1u);
  // b stays watched for glob2 only; a is no longer watched at all.
  t.write("b/x", 1);
  ASSERT_TRUE(readable(w.fd()));
  EXPECT_EQ(w.drain(), (std::set<std::string>{"glob2"}));
  t.write("a/y", 1);
  EXPECT_TRUE(w.drain().empty());
  w.retain({"glob2"});
  EXPECT_EQ(w.watches("glob1"), 0u);
  EXPECT_EQ(w.watches("glob2"), 1u);
}

}  // namespace
}  // namespace ckptmon
