#include "collectors/mountinfo.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// Lines as proc(5) documents them, written out by hand.
constexpr const char* kRoot = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n";

TEST(ParseMountinfo, ReadsEveryField) {
  int skipped = -1;
  auto m = parse_mountinfo(
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n", &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount_id, 36);
  EXPECT_EQ(m[0].parent_id, 35);
  EXPECT_EQ(m[0].major, 98u);
  EXPECT_EQ(m[0].minor, 0u);
  EXPECT_EQ(m[0].root, "/mnt1");
  EXPECT_EQ(m[0].mount_point, "/mnt2");
  EXPECT_EQ(m[0].mount_options, "rw,noatime");
  EXPECT_EQ(m[0].fstype, "ext3");
  EXPECT_EQ(m[0].source, "/dev/root");
  EXPECT_EQ(m[0].super_options, "rw,errors=continue");
}

TEST(ParseMountinfo, DecodesOctalEscapes) {
  // The kernel writes space, tab, newline and backslash as \040 \011 \012 \134.
  auto m = parse_mountinfo(
      "50 27 0:45 / /mnt/my\\040ckpt\\011dir\\134x rw - tmpfs my\\040src rw,size=4k\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount_point, "/mnt/my ckpt\tdir\\x");
  EXPECT_EQ(m[0].source, "my src");
}

TEST(ParseMountinfo, LeavesIncompleteOrNonOctalEscapesAlone) {
  auto m = parse_mountinfo("50 27 0:45 / /a\\08x\\04 rw - tmpfs t rw\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount_point, "/a\\08x\\04");
}

TEST(ParseMountinfo, AcceptsAnyNumberOfOptionalFields) {
  auto m = parse_mountinfo(
      "60 27 0:50 / /a rw - tmpfs a rw\n"
      "61 27 0:51 / /b rw shared:7 master:2 propagate_from:1 unbindable - nfs4 srv:/x rw,vers=4\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].fstype, "tmpfs");
  EXPECT_EQ(m[1].fstype, "nfs4");
  EXPECT_EQ(m[1].source, "srv:/x");
  EXPECT_EQ(m[1].super_options, "rw,vers=4");
}

TEST(ParseMountinfo, MissingSuperOptionsAreEmpty) {
  int skipped = -1;
  auto m = parse_mountinfo("70 27 0:52 / /old rw - ext2 /dev/sda1\n", &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].source, "/dev/sda1");
  EXPECT_EQ(m[0].super_options, "");
}

TEST(ParseMountinfo, EmptySourceDoesNotShiftTheSuperOptions) {
  // `mount -t tmpfs "" /x -o ro` makes the kernel print an empty source field,
  // i.e. two spaces in a row. The superblock options must still be read as such.
  int skipped = -1;
  auto m = parse_mountinfo("43 27 0:40 / /tmp/x ro,relatime - tmpfs  ro,size=1024k\n", &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fstype, "tmpfs");
  EXPECT_EQ(m[0].source, "");
  EXPECT_EQ(m[0].super_options, "ro,size=1024k");
}

TEST(ParseMountinfo, CountsMalformedLinesAsSkipped) {
  const std::string text = std::string(kRoot) +
                           "garbage\n"                                // too few fields
                           "x 27 0:1 / /a rw - tmpfs a rw\n"          // id not a number
                           "80 27 01 / /b rw - tmpfs b rw\n"          // no major:minor colon
                           "81 27 0:z / /c rw - tmpfs c rw\n"         // minor not a number
                           "82 27 0:2 / /d rw shared:1 tmpfs d rw\n"  // no separator
                           "83 27 0:3 / /e rw -\n"                    // nothing after '-'
                           "84 27 0:4 / /f rw - tmpfs\n"              // no source
                           "-1 27 0:5 / /g rw - tmpfs g rw\n"         // negative id: still int
                           "\n"
                           "   \n"
                           "28 27 0:25 / /ok ro - tmpfs ok ro\n";
  int skipped = -1;
  auto m = parse_mountinfo(text, &skipped);
  EXPECT_EQ(skipped, 7);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].mount_point, "/");
  EXPECT_EQ(m[1].mount_point, "/g");
  EXPECT_EQ(m[1].mount_id, -1);
  EXPECT_EQ(m[2].mount_point, "/ok");
}

TEST(ParseMountinfo, LastLineWithoutNewlineIsRead) {
  auto m = parse_mountinfo("27 1 254:0 / / rw - ext4 /dev/vda rw");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].super_options, "rw");
}

TEST(ParseMountinfo, SkippedMayBeNull) {
  EXPECT_TRUE(parse_mountinfo("bad line\n", nullptr).empty());
}

// --- find_mount ---------------------------------------------------------------

const std::vector<MountInfo> kMounts = parse_mountinfo(
    "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
    "40 27 0:40 / /mnt rw - tmpfs mnt rw\n"
    "41 40 0:41 / /mnt/a rw - tmpfs a rw\n"
    "42 40 0:42 / /mnt/ab rw - tmpfs ab rw\n"
    "43 41 0:43 / /mnt/a/deep rw - xfs /dev/nvme0n1 rw\n");

TEST(FindMount, LongestPrefixWins) {
  const MountInfo* m = find_mount(kMounts, "/mnt/a/deep/ckpt/step_100", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt/a/deep");
  m = find_mount(kMounts, "/mnt/a/shallow", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt/a");
  m = find_mount(kMounts, "/var/lib", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/");
}

TEST(FindMount, RespectsPathComponentBoundaries) {
  const MountInfo* m = find_mount(kMounts, "/mnt/abc", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt");  // neither /mnt/a nor /mnt/ab
  m = find_mount(kMounts, "/mnt/ab", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt/ab");
  m = find_mount(kMounts, "/mnt/a", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt/a");
  m = find_mount(kMounts, "/mnt/ab/x", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_point, "/mnt/ab");
}

TEST(FindMount, NoMountForRelativePathOrEmptyTable) {
  EXPECT_EQ(find_mount(kMounts, "relative/path", std::nullopt), nullptr);
  EXPECT_EQ(find_mount(kMounts, "", std::nullopt), nullptr);
  EXPECT_EQ(find_mount({}, "/mnt/a", std::nullopt), nullptr);
}

TEST(FindMount, LastListedWinsForStackedMounts) {
  // A read-only bind mount of the same file system on top of the writable one:
  // the process sees the one listed last.
  auto mounts = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "50 27 0:60 / /data rw - tmpfs data rw,size=4k\n"
      "51 50 0:60 / /data ro - tmpfs data rw,size=4k\n");
  const MountInfo* m = find_mount(mounts, "/data/x", std::make_pair(0u, 60u));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_id, 51);
  m = find_mount(mounts, "/data/x", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_id, 51);
}

TEST(FindMount, DeviceMatchBreaksTiesAtEqualLength) {
  // Two different file systems on the same mount point; the path's st_dev
  // says which one it really is on, whatever the order.
  auto mounts = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "50 27 0:60 / /data rw - tmpfs first rw\n"
      "51 50 0:61 / /data rw - tmpfs second rw\n");
  const MountInfo* m = find_mount(mounts, "/data", std::make_pair(0u, 60u));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source, "first");
  m = find_mount(mounts, "/data", std::make_pair(0u, 61u));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source, "second");
  // No device match at all: the one on top.
  m = find_mount(mounts, "/data", std::make_pair(9u, 9u));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source, "second");
}

TEST(FindMount, LongerMountPointBeatsDeviceMatchOnAShorterOne) {
  auto mounts = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "50 27 0:60 / /data rw - tmpfs outer rw\n");
  const MountInfo* m = find_mount(mounts, "/data/x", std::make_pair(254u, 0u));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source, "outer");
}

TEST(FindMount, MatchesEscapedMountPoints) {
  auto mounts = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "50 27 0:60 / /mnt/my\\040ckpt rw - tmpfs t rw\n");
  const MountInfo* m = find_mount(mounts, "/mnt/my ckpt/run1", std::nullopt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mount_id, 50);
}

// --- has_option ---------------------------------------------------------------

TEST(HasOption, MatchesWholeOptionsOnly) {
  EXPECT_TRUE(has_option("ro", "ro"));
  EXPECT_TRUE(has_option("rw,relatime,ro", "ro"));
  EXPECT_TRUE(has_option("ro,relatime", "ro"));
  EXPECT_FALSE(has_option("rw,errors=remount-ro", "ro"));
  EXPECT_FALSE(has_option("rootcontext=x,rw", "ro"));
  EXPECT_FALSE(has_option("rw", "ro"));
  EXPECT_FALSE(has_option("", "ro"));
  EXPECT_TRUE(has_option("size=4k,mode=755", "mode=755"));
}

// The decoding mountinfo and mountstats (io_parsers) share: \040 space,
// \011 tab, \012 newline, \134 backslash; anything short of three octal
// digits after a backslash is kept as written.
TEST(UnescapeMountField, DecodesThreeOctalDigitsAndKeepsTheRest) {
  EXPECT_EQ(unescape_mount_field("/mnt/a\\040b\\011c\\012d\\134e"), "/mnt/a b\tc\nd\\e");
  EXPECT_EQ(unescape_mount_field("\\040"), " ");        // at the very end
  EXPECT_EQ(unescape_mount_field("x\\04"), "x\\04");    // two digits: kept
  EXPECT_EQ(unescape_mount_field("x\\08a"), "x\\08a");  // 8 is no octal digit
  // A backslash followed by no digits stays; the next one starts an escape.
  EXPECT_EQ(unescape_mount_field("\\\\040"), "\\ ");
  EXPECT_EQ(unescape_mount_field(""), "");
}

}  // namespace
}  // namespace ckptmon
