// The storage-path parsers and sources on fixture captures
// (tests/fixtures/procfs-*, sysfs-*). Every expected counter is worked out by
// hand from the fixture text, in the comment beside it.

#include "collectors/io_parsers.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "collectors/io_sources.hpp"
#include "collectors/mountinfo.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"

namespace ckptmon {
namespace {

const std::string kFixtures = std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures";

std::string slurp(const std::string& rel) {
  std::ifstream in(kFixtures + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double op(const IoCounters& c, MetaOp m) { return c.metadata_ops[static_cast<std::size_t>(m)]; }

MountInfo mount_at(const std::string& procfs, const std::string& mount_point) {
  for (const MountInfo& m : parse_mountinfo(slurp(procfs + "/self/mountinfo"))) {
    if (m.mount_point == mount_point) return m;
  }
  ADD_FAILURE() << "no mount " << mount_point << " in " << procfs;
  return {};
}

const DiskStatsLine* line_of(const DiskStatsParse& p, const std::string& name) {
  for (const auto& l : p.lines) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

// --- /proc/diskstats -------------------------------------------------------

TEST(Diskstats, TwentyFieldLines) {
  const DiskStatsParse p = parse_diskstats(slurp("procfs-block/diskstats"));
  EXPECT_EQ(p.bad_lines, 0) << p.first_error;
  ASSERT_EQ(p.lines.size(), 13u);  // loop0-1, sda, sda1-2, sdb-sdd, md0, dm-0-1, nvme0n1, p1
  const DiskStatsLine* sda2 = line_of(p, "sda2");
  ASSERT_NE(sda2, nullptr);
  EXPECT_EQ(sda2->major, 8u);
  EXPECT_EQ(sda2->minor, 2u);
  EXPECT_EQ(sda2->fields, 20);
  EXPECT_EQ(sda2->reads, 611012u);
  EXPECT_EQ(sda2->sectors_read, 9670000u);  // third counter
  EXPECT_EQ(sda2->writes, 3051129u);
  EXPECT_EQ(sda2->sectors_written, 45678800u);  // seventh counter
}

TEST(Diskstats, FourteenEighteenAndSevenFieldLinesGiveTheSameCounters) {
  for (const char* f :
       {"procfs-block/diskstats-14", "procfs-block/diskstats-18", "procfs-block/diskstats-7"}) {
    SCOPED_TRACE(f);
    const DiskStatsParse p = parse_diskstats(slurp(f));
    EXPECT_EQ(p.bad_lines, 0) << p.first_error;
    ASSERT_EQ(p.lines.size(), 3u);
    const DiskStatsLine* sda = line_of(p, "sda");
    const DiskStatsLine* sda1 = line_of(p, "sda1");
    const DiskStatsLine* sda2 = line_of(p, "sda2");
    ASSERT_TRUE(sda && sda1 && sda2);
    EXPECT_EQ(sda->sectors_read, 9876544u);
    EXPECT_EQ(sda->sectors_written, 45678902u);
    EXPECT_EQ(sda1->sectors_read, 204800u);
    EXPECT_EQ(sda1->sectors_written, 8u);
    EXPECT_EQ(sda2->sectors_read, 9670000u);
    EXPECT_EQ(sda2->sectors_written, 45678800u);
  }
  EXPECT_EQ(line_of(parse_diskstats(slurp("procfs-block/diskstats-7")), "sda1")->fields, 7);
  EXPECT_EQ(line_of(parse_diskstats(slurp("procfs-block/diskstats-18")), "sda1")->fields, 18);
}

// Fields 9 to 11 (Documentation/admin-guide/iostats.rst): I/Os in flight,
// ms busy, weighted ms; a 7-field partition line has none.
TEST(Diskstats, TheTimeFieldsOfFourteenFieldLines) {
  const DiskStatsParse p = parse_diskstats(
      "   8      16 sdx 1 0 8 1 2 0 16 2 3 4500 9000\n   8      17 sdx1 1 8 2 16\n");
  ASSERT_EQ(p.lines.size(), 2u) << p.first_error;
  EXPECT_EQ(p.lines[0].in_flight, 3u);
  EXPECT_EQ(p.lines[0].io_ms, 4500u);
  EXPECT_EQ(p.lines[0].weighted_io_ms, 9000u);
  EXPECT_FALSE(p.lines[1].in_flight);
  EXPECT_FALSE(p.lines[1].io_ms);
}

TEST(Diskstats, BadLinesAreCountedAndTheRestKept) {
  const DiskStatsParse p = parse_diskstats(slurp("procfs-block/diskstats-bad"));
  // sda1 has 13 fields, sda2 a negative counter.
  EXPECT_EQ(p.bad_lines, 2);
  EXPECT_NE(p.first_error.find("13 fields"), std::string::npos) << p.first_error;
  ASSERT_EQ(p.lines.size(), 2u);
  EXPECT_NE(line_of(p, "sda"), nullptr);
  EXPECT_NE(line_of(p, "sdb"), nullptr);
  EXPECT_EQ(line_of(p, "sda2"), nullptr);
}

// --- block devices through sysfs ---------------------------------------------

TEST(BlockMembers, FollowsDeviceMapperAndMdDownToTheirMembers) {
  const std::string sys = kFixtures + "/sysfs-block";
  std::string err;
  using V = std::vector<std::string>;
  EXPECT_EQ(block_members(sys, 253, 0, "/dev/mapper/vg0-ckpt", err), V{"sda2"}) << err;
  EXPECT_EQ(block_members(sys, 9, 0, "/dev/md0", err), (V{"sdb", "sdc"})) << err;
  // LVM on md: two levels down.
  EXPECT_EQ(block_members(sys, 253, 1, "/dev/mapper/vgmd-milestone", err), (V{"sdb", "sdc"}))
      << err;
  // A partition is its own member, not its disk.
  EXPECT_EQ(block_members(sys, 259, 1, "/dev/nvme0n1p1", err), V{"nvme0n1p1"}) << err;
  // btrfs shows an anonymous 0:N: the source names the device.
  EXPECT_EQ(block_members(sys, 0, 45, "/dev/sdd", err), V{"sdd"}) << err;
  EXPECT_EQ(block_members(sys, 0, 46, "/dev/mapper/vg0-ckpt", err), V{"sda2"}) << err;
  // Nothing to find.
  err.clear();
  EXPECT_TRUE(block_members(sys, 0, 47, "tmpfs", err).empty());
  EXPECT_NE(err.find("0:47"), std::string::npos) << err;
}

TEST(BlockSource, SumsTheMembersDiskstatsInBytes) {
  const std::string proc = kFixtures + "/procfs-block";
  const std::string sys = kFixtures + "/sysfs-block";
  {
    const SourceRead r = read_block_source(proc, sys, mount_at("procfs-block", "/ckpt/rapid"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.devices, std::vector<std::string>{"sda2"});
    EXPECT_EQ(r.raw.read_bytes, 9670000.0 * 512);      // 4 951 040 000
    EXPECT_EQ(r.raw.written_bytes, 45678800.0 * 512);  // 23 387 545 600
    EXPECT_FALSE(r.has_metadata_ops);
    EXPECT_EQ(r.raw.metadata_total(), 0);
  }
  {
    const SourceRead r = read_block_source(proc, sys, mount_at("procfs-block", "/ckpt/md"));
    ASSERT_TRUE(r.ok) << r.error;
    // sdb + sdc, not md0's own line (1500000 / 1999000 sectors).
    EXPECT_EQ(r.raw.read_bytes, (1000000.0 + 1000008.0) * 512);     // 1 024 004 096
    EXPECT_EQ(r.raw.written_bytes, (2000000.0 + 2000000.0) * 512);  // 2 048 000 000
    // Busy and weighted ms of sdb and sdc (fields 10, 11), in seconds.
    ASSERT_TRUE(r.has_device_times);
    EXPECT_DOUBLE_EQ(r.raw.device_busy_seconds, (120442.0 + 120118.0) / 1000);
    EXPECT_DOUBLE_EQ(r.raw.device_weighted_seconds, (391343.0 + 390113.0) / 1000);
    EXPECT_EQ(r.device_in_flight, 0);
  }
  {
    const SourceRead r = read_block_source(proc, sys, mount_at("procfs-block", "/ckpt/nvme"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.raw.read_bytes, 33550000.0 * 512);
    EXPECT_EQ(r.raw.written_bytes, 67100000.0 * 512);
  }
  {
    const SourceRead r = read_block_source(proc, sys, mount_at("procfs-block", "/ckpt/btrfs"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.raw.read_bytes, 4096.0 * 512);
    EXPECT_EQ(r.raw.written_bytes, 8192.0 * 512);
  }
}

TEST(BlockSource, MissingDiskstatsOrDeviceIsAnError) {
  const std::string sys = kFixtures + "/sysfs-block";
  const MountInfo m = mount_at("procfs-block", "/ckpt/rapid");
  SourceRead r = read_block_source(kFixtures + "/procfs-nfs", sys, m);  // no diskstats there
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("diskstats"), std::string::npos) << r.error;
  // A member the diskstats do not list (sdd is not in the 14-field capture).
  testing::TempDir dir;
  dir.write_text("diskstats", slurp("procfs-block/diskstats-14"));
  r = read_block_source(dir.str(), sys, mount_at("procfs-block", "/ckpt/btrfs"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("block device sdd is not in"), std::string::npos) << r.error;
}

TEST(IoSourceFor, PicksTheSourceFromTheMount) {
  EXPECT_EQ(io_source_for(mount_at("procfs-block", "/ckpt/rapid")), IoSource::kBlock);
  EXPECT_EQ(io_source_for(mount_at("procfs-block", "/ckpt/btrfs")), IoSource::kBlock);
  EXPECT_EQ(io_source_for(mount_at("procfs-block", "/dev/shm")), IoSource::kNone);
  EXPECT_EQ(io_source_for(mount_at("procfs-nfs", "/mnt/ckpt nfs")), IoSource::kNfs);
  EXPECT_EQ(io_source_for(mount_at("procfs-nfs", "/mnt/milestone")), IoSource::kNfs);
  EXPECT_EQ(io_source_for(mount_at("procfs-lustre", "/lustre/scratch")), IoSource::kLustre);
  MountInfo fuse;
  fuse.fstype = "fuse.sshfs";
  fuse.major = 0;
  fuse.source = "host:/x";
  EXPECT_EQ(io_source_for(fuse), IoSource::kNone);
}

// --- /proc/self/mountstats -----------------------------------------------------

TEST(Mountstats, Nfs4BlockOfARealCapture) {
  const MountstatsParse p = parse_mountstats(slurp("procfs-nfs/self/mountstats"));
  ASSERT_EQ(p.nfs.size(), 3u);  // ext4, proc, sysfs, tmpfs... are skipped
  const NfsMountStats& m = p.nfs[0];
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.device, "10.20.0.5:/export/ckpt");
  EXPECT_EQ(m.mount_point, "/mnt/ckpt nfs");  // \040 decoded
  EXPECT_EQ(m.fstype, "nfs4");
  EXPECT_EQ(m.statvers, "1.1");
  // bytes: normal read, normal write, direct read, direct write, server read, server write...
  EXPECT_EQ(m.normal_read_bytes, 1073741824u);
  EXPECT_EQ(m.raw.read_bytes, 1610612736.0);
  EXPECT_EQ(m.raw.written_bytes, 429496729600.0);
  EXPECT_EQ(op(m.raw, MetaOp::kOpen),
            1024 + 0 + 12 + 0);  // OPEN, OPEN_CONFIRM, _NOATTR, _DOWNGRADE
  EXPECT_EQ(op(m.raw, MetaOp::kClose), 1030);
  EXPECT_EQ(op(m.raw, MetaOp::kCreate), 96);     // CREATE (+ LINK 0, SYMLINK 0)
  EXPECT_EQ(op(m.raw, MetaOp::kGetattr), 5700);  // GETATTR 5000 + ACCESS 700
  EXPECT_EQ(op(m.raw, MetaOp::kSetattr), 300);
  EXPECT_EQ(op(m.raw, MetaOp::kLookup), 2048);  // LOOKUP (+ LOOKUP_ROOT 0, LOOKUPP 0)
  EXPECT_EQ(op(m.raw, MetaOp::kReaddir), 40);
  EXPECT_EQ(op(m.raw, MetaOp::kRemove), 128);
  EXPECT_EQ(op(m.raw, MetaOp::kRename), 64);
  EXPECT_EQ(op(m.raw, MetaOp::kMkdir), 0);
  EXPECT_EQ(op(m.raw, MetaOp::kCommit), 256);
  // FSINFO 2 + LOCK 4 + LOCKU 4 + PATHCONF 1 + STATFS 2880 + SERVER_CAPS 3 +
  // DELEGRETURN 900; not READ, WRITE, NULL, SEQUENCE 2870, EXCHANGE_ID 2,
  // CREATE_SESSION 1, RECLAIM_COMPLETE 1.
  EXPECT_EQ(op(m.raw, MetaOp::kOther), 3794);
}

TEST(Mountstats, Nfs3BlockWithEightNumberOpLines) {
  const MountstatsParse p = parse_mountstats(slurp("procfs-nfs/self/mountstats"));
  ASSERT_EQ(p.nfs.size(), 3u);
  const NfsMountStats& m = p.nfs[1];
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.mount_point, "/mnt/milestone");
  EXPECT_EQ(m.fstype, "nfs");
  EXPECT_EQ(m.raw.read_bytes, 52428800.0);
  EXPECT_EQ(m.raw.written_bytes, 104857600.0);
  EXPECT_EQ(op(m.raw, MetaOp::kGetattr), 410 + 90);
  EXPECT_EQ(op(m.raw, MetaOp::kSetattr), 10);
  EXPECT_EQ(op(m.raw, MetaOp::kLookup), 220);
  EXPECT_EQ(op(m.raw, MetaOp::kCreate), 20);  // CREATE (+ SYMLINK, MKNOD, LINK 0)
  EXPECT_EQ(op(m.raw, MetaOp::kMkdir), 5);
  EXPECT_EQ(op(m.raw, MetaOp::kRemove), 8 + 2);  // REMOVE + RMDIR
  EXPECT_EQ(op(m.raw, MetaOp::kRename), 4);
  EXPECT_EQ(op(m.raw, MetaOp::kReaddir), 0 + 6);  // READDIR + READDIRPLUS
  EXPECT_EQ(op(m.raw, MetaOp::kCommit), 100);
  EXPECT_EQ(op(m.raw, MetaOp::kOther), 30 + 2 + 1);  // FSSTAT, FSINFO, PATHCONF (READLINK 0)
  EXPECT_EQ(op(m.raw, MetaOp::kOpen), 0);
}

TEST(Mountstats, UnknownStatversIsRejectedAndCountedAlone) {
  const MountstatsParse p = parse_mountstats(slurp("procfs-nfs/self/mountstats"));
  EXPECT_EQ(p.errors, 1);
  ASSERT_EQ(p.nfs.size(), 3u);
  EXPECT_FALSE(p.nfs[2].ok);
  EXPECT_EQ(p.nfs[2].mount_point, "/mnt/broken");
  EXPECT_NE(p.nfs[2].error.find("unknown statvers \"2.0\""), std::string::npos) << p.nfs[2].error;
  EXPECT_TRUE(p.nfs[0].ok);
  EXPECT_TRUE(p.nfs[1].ok);
}

TEST(Mountstats, CutOffBlockIsRejectedTheOthersKept) {
  const MountstatsParse p = parse_mountstats(slurp("procfs-nfs/self/mountstats-cut"));
  ASSERT_EQ(p.nfs.size(), 2u);
  EXPECT_EQ(p.errors, 1);
  EXPECT_TRUE(p.nfs[0].ok) << p.nfs[0].error;  // the v3 block before it
  EXPECT_FALSE(p.nfs[1].ok);
  EXPECT_NE(p.nfs[1].error.find("cut off"), std::string::npos) << p.nfs[1].error;
}

TEST(Mountstats, BlockWithoutBytesLineIsCutOff) {
  const MountstatsParse p = parse_mountstats(slurp("procfs-nfs/self/mountstats-nobytes"));
  ASSERT_EQ(p.nfs.size(), 2u);
  EXPECT_EQ(p.errors, 1);
  EXPECT_FALSE(p.nfs[0].ok);
  EXPECT_NE(p.nfs[0].error.find("no bytes: line"), std::string::npos) << p.nfs[0].error;
  EXPECT_TRUE(p.nfs[1].ok) << p.nfs[1].error;
}

TEST(Mountstats, ShortOpLineAndMissingOpsAreCutOff) {
  const std::string head =
      "device s:/e mounted on /m with fstype nfs4 statvers=1.1\n"
      "\tbytes:\t1 2 3 4 5 6 7 8\n";
  auto one = [](const std::string& text) { return parse_mountstats(text).nfs.at(0); };
  EXPECT_FALSE(one(head).ok);  // no per-op section
  EXPECT_FALSE(one(head + "\tper-op statistics\n").ok);
  EXPECT_FALSE(one(head + "\tper-op statistics\n\t GETATTR: 1 1 0\n").ok);
  NfsMountStats ok = one(head + "\tper-op statistics\n\t GETATTR: 7 7 0 0 0 0 0 0\n");
  EXPECT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(op(ok.raw, MetaOp::kGetattr), 7);
  EXPECT_EQ(ok.raw.read_bytes, 5);
  EXPECT_EQ(ok.raw.written_bytes, 6);
  EXPECT_FALSE(one("device s:/e mounted on /m with fstype nfs statvers=1.1\n\tbytes:\t1 2 3\n").ok);
  EXPECT_FALSE(one("device s:/e mounted on /m with fstype nfs\n").ok);  // no statvers
}

TEST(NfsSource, MatchesTheMountAndReportsItsErrors) {
  const std::string proc = kFixtures + "/procfs-nfs";
  SourceRead r = read_nfs_source(proc, mount_at("procfs-nfs", "/mnt/ckpt nfs"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.devices, std::vector<std::string>{"10.20.0.5:/export/ckpt"});
  EXPECT_TRUE(r.has_metadata_ops);
  EXPECT_EQ(r.raw.written_bytes, 429496729600.0);
  r = read_nfs_source(proc, mount_at("procfs-nfs", "/mnt/broken"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("statvers"), std::string::npos) << r.error;
  // Missing mountstats (no NFS client loaded, a procfs without it).
  r = read_nfs_source(kFixtures + "/procfs-block", mount_at("procfs-nfs", "/mnt/milestone"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("mountstats"), std::string::npos) << r.error;
}

// --- Lustre llite ------------------------------------------------------------------

TEST(LliteStats, CurrentFormat) {
  const LliteStats s =
      parse_llite_stats(slurp("procfs-lustre/fs/lustre/llite/scratch-ffff9a1c3b2e4000/stats"));
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.raw.read_bytes, 21474836480.0);     // read_bytes' sum (20 GiB)
  EXPECT_EQ(s.raw.written_bytes, 68719476736.0);  // write_bytes' sum (64 GiB)
  EXPECT_EQ(op(s.raw, MetaOp::kOpen), 2048);
  EXPECT_EQ(op(s.raw, MetaOp::kClose), 2048);
  EXPECT_EQ(op(s.raw, MetaOp::kCommit), 64);  // fsync
  EXPECT_EQ(op(s.raw, MetaOp::kReaddir), 128);
  EXPECT_EQ(op(s.raw, MetaOp::kSetattr), 96 + 32);  // setattr + truncate
  EXPECT_EQ(op(s.raw, MetaOp::kGetattr), 4096);
  EXPECT_EQ(op(s.raw, MetaOp::kCreate), 512);
  EXPECT_EQ(op(s.raw, MetaOp::kRemove), 256 + 8);  // unlink + rmdir
  EXPECT_EQ(op(s.raw, MetaOp::kMkdir), 40);
  EXPECT_EQ(op(s.raw, MetaOp::kRename), 128);
  EXPECT_EQ(op(s.raw, MetaOp::kLookup), 0);
  // statfs 900 + getxattr 700: metadata RPCs. Not inode_permission (30000,
  // a check against cached attributes), read, write, ioctl, mmap,
  // page_fault, seek.
  EXPECT_EQ(op(s.raw, MetaOp::kOther), 1600);
  EXPECT_TRUE(s.unknown_counters.empty());
}

TEST(LliteStats, OldRegsFormat) {
  const LliteStats s = parse_llite_stats(
      slurp("sysfs-lustre/kernel/debug/lustre/llite/work-ffff8b0012345800/stats"));
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.raw.read_bytes, 104857600.0);
  EXPECT_EQ(s.raw.written_bytes, 314572800.0);
  EXPECT_EQ(op(s.raw, MetaOp::kOpen), 30);
  EXPECT_EQ(op(s.raw, MetaOp::kCommit), 3);
  EXPECT_EQ(op(s.raw, MetaOp::kSetattr), 5 + 1);
  EXPECT_EQ(op(s.raw, MetaOp::kGetattr), 70);
  EXPECT_EQ(op(s.raw, MetaOp::kOther), 12);  // statfs; not alloc_inode 9, inode_permission 150
}

// Lustre 2.15+ lines, written by hand after lustre/llite/lproc_llite.c:
// the cache and per-file statistics and the hybrid I/O counters stay out of
// the metadata operations; getxattr_hits is taken off getxattr; a counter a
// newer Lustre adds is left out and named.
TEST(LliteStats, OnlyMetadataRpcsCountAsMetadataOperations) {
  const LliteStats s = parse_llite_stats(
      "snapshot_time             1790277040.611962111 secs.nsecs\n"
      "start_time                1790008165.367572621 secs.nsecs\n"
      "elapsed_time              268875.244389490 secs.nsecs\n"
      "write_bytes               10 samples [bytes] 1 100 500 30000\n"
      "hybrid_write_bytes        2 samples [bytes] 4194304 16777216 20971520 299067162755072\n"
      "open                      40 samples [usecs] 0 36 3420 6955\n"
      "getxattr                  30 samples [usecs] 147 1085 290062 57805970\n"
      "getxattr_hits             20 samples [reqs]\n"
      "inode_permission          9000 samples [usecs] 0 7416 72809 85436\n"
      "opencount                 40 samples [reqs] 1 422 48334 276156\n"
      "openclosetime             14 samples [usecs] 766 129984077 549421294037909 1\n"
      "hybrid_noswitch           888 samples [reqs]\n"
      "quantum_flux              7 samples [reqs]\n");
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.raw.written_bytes, 500);      // not the hybrid line's bytes
  EXPECT_EQ(op(s.raw, MetaOp::kOpen), 40);  // not opencount's 40 again
  EXPECT_EQ(op(s.raw, MetaOp::kOther), 30 - 20);
  double all = 0;
  for (double v : s.raw.metadata_ops) all += v;
  EXPECT_EQ(all, 40 + 10);
  EXPECT_EQ(s.unknown_counters, (std::vector<std::string>{"quantum_flux"}));
  // More hits than calls (counters read at different moments): never negative.
  const LliteStats odd = parse_llite_stats(
      "snapshot_time 1.0 secs.nsecs\ngetxattr 3 samples [usecs] 1 1 3 3\n"
      "getxattr_hits 5 samples [reqs]\n");
  ASSERT_TRUE(odd.ok) << odd.error;
  EXPECT_EQ(op(odd.raw, MetaOp::kOther), 0);
}

TEST(LliteStats, EveryCounterOfTheLlitesOwnTableIsClassified) {
  // lproc_llite.c's llite_opcode_table (2.16) and older clients' counters:
  // none is unknown, and the metadata ones are the MDS calls.
  for (const char* n : {"read_bytes",
                        "write_bytes",
                        "read",
                        "write",
                        "ioctl",
                        "open",
                        "close",
                        "mmap",
                        "page_fault",
                        "page_mkwrite",
                        "seek",
                        "fsync",
                        "readdir",
                        "setattr",
                        "truncate",
                        "flock",
                        "getattr",
                        "fallocate",
                        "create",
                        "link",
                        "unlink",
                        "symlink",
                        "mkdir",
                        "rmdir",
                        "mknod",
                        "rename",
                        "statfs",
                        "setxattr",
                        "getxattr",
                        "getxattr_hits",
                        "listxattr",
                        "removexattr",
                        "inode_permission",
                        "opencount",
                        "openclosetime",
                        "hybrid_noswitch",
                        "hybrid_writesize_switch",
                        "hybrid_readsize_switch",
                        "hybrid_read_bytes",
                        "hybrid_write_bytes",
                        "alloc_inode",
                        "direct_read",
                        "direct_write",
                        "brw_read",
                        "brw_write",
                        "osc_read",
                        "osc_write",
                        "lockless_read_bytes",
                        "lockless_write_bytes",
                        "lockless_truncate",
                        "splice_read",
                        "dirty_pages_hits",
                        "dirty_pages_misses"}) {
    EXPECT_TRUE(classify_llite_counter(n).has_value()) << n;
  }
  EXPECT_EQ(classify_llite_counter("inode_permission")->kind, LliteKind::kLocal);
  EXPECT_EQ(classify_llite_counter("getxattr_hits")->kind, LliteKind::kLocal);
  EXPECT_EQ(classify_llite_counter("hybrid_noswitch")->kind, LliteKind::kIo);
  EXPECT_EQ(classify_llite_counter("mknod")->kind, LliteKind::kMetadataRpc);
  EXPECT_EQ(classify_llite_counter("mknod")->op, MetaOp::kCreate);
  EXPECT_FALSE(classify_llite_counter("quantum_flux"));
}

TEST(LliteStats, BadInput) {
  EXPECT_FALSE(parse_llite_stats("").ok);
  EXPECT_FALSE(parse_llite_stats("read_bytes 1 samples [bytes] 1 1 1\n").ok);  // no snapshot
  EXPECT_FALSE(
      parse_llite_stats("snapshot_time 1.0 secs.nsecs\nread_bytes 1 samples [bytes]\n").ok);
  EXPECT_FALSE(parse_llite_stats("snapshot_time 1.0 secs.nsecs\nopen x samples [usecs]\n").ok);
  // Cut off inside the last line.
  EXPECT_FALSE(parse_llite_stats("snapshot_time 1.0 secs.nsecs\nopen 3 samples [us").ok);
}

TEST(LustreSource, MatchesTheInstanceByFsname) {
  const std::string proc = kFixtures + "/procfs-lustre";
  const std::string sys = kFixtures + "/sysfs-lustre";
  SourceRead r = read_lustre_source(proc, sys, mount_at("procfs-lustre", "/lustre/scratch"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.devices, std::vector<std::string>{"scratch-ffff9a1c3b2e4000"});
  EXPECT_EQ(r.raw.written_bytes, 68719476736.0);
  // A subdirectory mount of fs "work", its instance under debugfs.
  r = read_lustre_source(proc, sys, mount_at("procfs-lustre", "/lustre/work"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.devices, std::vector<std::string>{"work-ffff8b0012345800"});
  EXPECT_EQ(r.raw.read_bytes, 104857600.0);
  r = read_lustre_source(proc, sys, mount_at("procfs-lustre", "/lustre/home"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no llite instance of file system \"home\""), std::string::npos)
      << r.error;
}

TEST(LustreSource, SeveralInstancesOfOneFsNeedAnOptionNamingOne) {
  testing::TempDir dir;
  const std::string stats = slurp("procfs-lustre/fs/lustre/llite/scratch-ffff9a1c3b2e4000/stats");
  dir.write_text("fs/lustre/llite/scratch-ffff9a1c3b2e4000/stats", stats);
  dir.write_text("fs/lustre/llite/scratch-ffff9a1c3b2e8000/stats",
                 "snapshot_time 1.0 secs.nsecs\nwrite_bytes 1 samples [bytes] 7 7 7\n");
  dir.write_text("fs/lustre/llite/scratchy-ffff000000000001/stats", stats);  // another fs
  MountInfo m = mount_at("procfs-lustre", "/lustre/scratch");
  SourceRead r = read_lustre_source(dir.str(), dir.file("nosys"), m);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("2 llite instances of file system \"scratch\""), std::string::npos)
      << r.error;
  m.super_options += ",instance=scratch-ffff9a1c3b2e8000";
  r = read_lustre_source(dir.str(), dir.file("nosys"), m);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.devices, std::vector<std::string>{"scratch-ffff9a1c3b2e8000"});
  EXPECT_EQ(r.raw.written_bytes, 7);
}

TEST(LustreFsname, FromMountSources) {
  EXPECT_EQ(lustre_fsname("10.10.0.1@o2ib:/scratch"), "scratch");
  EXPECT_EQ(lustre_fsname("10.10.0.1@o2ib:10.10.0.2@o2ib:/scratch"), "scratch");
  EXPECT_EQ(lustre_fsname("mgs@tcp:/work/projects/a"), "work");
  EXPECT_EQ(lustre_fsname("/dev/sda1"), "");
}

// --- network interfaces --------------------------------------------------------------

TEST(NetInterface, EthernetCountersAndSpeed) {
  const NetRead r = read_net_interface(kFixtures + "/sysfs-net", "eth0");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.infiniband);
  EXPECT_EQ(r.receive_bytes, 918273645512u);
  EXPECT_EQ(r.transmit_bytes, 123456789012u);
  ASSERT_TRUE(r.link_speed_bytes_per_second);
  EXPECT_EQ(*r.link_speed_bytes_per_second, 25000.0 * 1e6 / 8);  // 25 Gb/s = 3.125 GB/s
}

// A port whose device has no performance management agent: the ib core
// answers "N/A (no PMA)" for its data counters (drivers/infiniband/core/
// sysfs.c); iWARP ports such as Intel i40iw. The link speed is still known.
TEST(NetInterface, AnInfinibandPortWithoutDataCountersKeepsItsLinkSpeed) {
  testing::TempDir sys;
  const std::string port = "class/infiniband/iw0/ports/1/";
  sys.write_text(port + "rate", "10 Gb/sec (4X)\n");
  sys.write_text(port + "state", "4: ACTIVE\n");
  sys.write_text(port + "counters/port_rcv_data", "N/A (no PMA)\n");
  sys.write_text(port + "counters/port_xmit_data", "N/A (no PMA)\n");
  const NetRead r = read_net_interface(sys.str(), "iw0:1");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.error.empty());
  EXPECT_TRUE(r.infiniband);
  EXPECT_TRUE(r.counters_unsupported);
  ASSERT_TRUE(r.link_speed_bytes_per_second);
  EXPECT_EQ(*r.link_speed_bytes_per_second, 10e9 / 8);  // 1.25e9, as node_exporter says
  ASSERT_EQ(r.unknown.size(), 1u);
  EXPECT_NE(r.unknown[0].find("port_rcv_data reads \"N/A (no PMA)\""), std::string::npos)
      << r.unknown[0];
  // A rate text not understood: the speed unknown, said, the counters read.
  sys.write_text(port + "rate", "fast\n");
  sys.write_text(port + "counters/port_rcv_data", "10\n");
  sys.write_text(port + "counters/port_xmit_data", "20\n");
  const NetRead q = read_net_interface(sys.str(), "iw0:1");
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_FALSE(q.counters_unsupported);
  EXPECT_EQ(q.receive_bytes, 40u);
  EXPECT_FALSE(q.link_speed_bytes_per_second);
  ASSERT_EQ(q.unknown.size(), 1u);
  EXPECT_NE(q.unknown[0].find("rate reads \"fast\""), std::string::npos) << q.unknown[0];
}

TEST(NetInterface, SpeedMinusOneIsUnknownNotZero) {
  const NetRead r = read_net_interface(kFixtures + "/sysfs-net", "eth1");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.link_speed_bytes_per_second.has_value());
  EXPECT_FALSE(parse_net_speed_bytes_per_second("-1\n"));
  EXPECT_FALSE(parse_net_speed_bytes_per_second("0\n"));
  EXPECT_FALSE(parse_net_speed_bytes_per_second("fast\n"));
  EXPECT_EQ(*parse_net_speed_bytes_per_second("100000\n"), 100000.0 * 1e6 / 8);
}

TEST(NetInterface, IpoibReadsItsInfinibandPort) {
  const NetRead r = read_net_interface(kFixtures + "/sysfs-net", "ib0");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.infiniband);
  // port_rcv_data / port_xmit_data count 4-byte words; not the IPoIB netdev's 5120000.
  EXPECT_EQ(r.receive_bytes, 2684354560000ull * 4);
  EXPECT_EQ(r.transmit_bytes, 1342177280000ull * 4);
  ASSERT_TRUE(r.link_speed_bytes_per_second);
  EXPECT_EQ(*r.link_speed_bytes_per_second, 200e9 / 8);  // "200 Gb/sec (4X HDR)"
}

TEST(NetInterface, InfinibandPortByName) {
  const NetRead r = read_net_interface(kFixtures + "/sysfs-net", "mlx5_1:1");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.receive_bytes, 250000000ull * 4);
  EXPECT_EQ(r.transmit_bytes, 125000000ull * 4);
  EXPECT_EQ(*r.link_speed_bytes_per_second, 2.5e9 / 8);  // "2.5 Gb/sec (1X SDR)"
  EXPECT_FALSE(read_net_interface(kFixtures + "/sysfs-net", "mlx5_1:2").ok);
  EXPECT_FALSE(parse_ib_rate_bytes_per_second("fast\n"));
}

TEST(NetInterface, MissingInterfaceIsAnError) {
  const NetRead r = read_net_interface(kFixtures + "/sysfs-net", "eth9");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("interface eth9 not found"), std::string::npos) << r.error;
  EXPECT_FALSE(read_net_interface(kFixtures + "/sysfs-net", "..").ok);
}

}  // namespace
}  // namespace ckptmon

namespace ckptmon {
namespace {

// The real kernel files of the machine the tests run on: whatever they hold
// parses without a rejected line (kernel formats the fixtures may miss).
std::string read_real(const std::string& path) {
  std::string text, err;
  EXPECT_TRUE(read_kernel_file(path, text, err)) << err;
  return text;
}

TEST(ThisMachine, DiskstatsAndMountstatsParseCleanly) {
  const DiskStatsParse d = parse_diskstats(read_real("/proc/diskstats"));
  EXPECT_EQ(d.bad_lines, 0) << d.first_error;
  const MountstatsParse m = parse_mountstats(read_real("/proc/self/mountstats"));
  EXPECT_EQ(m.errors, 0);
  for (const auto& b : m.nfs) EXPECT_TRUE(b.ok) << b.error;
}

TEST(ThisMachine, LoopbackInterfaceHasCountersAndNoSpeed) {
  const NetRead r = read_net_interface("/sys", "lo");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.link_speed_bytes_per_second.has_value());  // lo's speed answers EINVAL
}

// --- the node: PSI and meminfo ---------------------------------------------------------
// Written by hand after Documentation/accounting/psi.rst and proc(5).

TEST(NodePressure, PsiLinesAndTheirTotals) {
  const PsiParse io = parse_psi(
      "some avg10=0.00 avg60=0.01 avg300=0.15 total=191216774\n"
      "full avg10=0.00 avg60=0.00 avg300=0.06 total=121399543\n");
  ASSERT_TRUE(io.ok) << io.error;
  EXPECT_EQ(io.some_total_us, 191216774u);
  EXPECT_EQ(io.full_total_us, 121399543u);
  // cpu before 5.13 has no full line: unknown, not 0.
  const PsiParse cpu = parse_psi("some avg10=3.59 avg60=5.18 avg300=12.47 total=6884095804\n");
  ASSERT_TRUE(cpu.ok) << cpu.error;
  EXPECT_FALSE(cpu.full_total_us);
  EXPECT_FALSE(parse_psi("").ok);
  EXPECT_FALSE(parse_psi("some avg10=1\n").ok);  // no total
  const PsiParse bad = parse_psi("some avg10=0.00 total=5\nhalf total=3\n");
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.error, "not a pressure line: \"half total=3\"");
  EXPECT_FALSE(bad.some_total_us);  // nothing half-read is kept
}

TEST(NodePressure, MeminfoLinesInBytes) {
  const MeminfoParse m = parse_meminfo(
      "MemTotal:       24609008 kB\nMemFree:         1000000 kB\n"
      "MemAvailable:   23751732 kB\nDirty:               148 kB\nWriteback:             0 kB\n");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.available_bytes, 23751732.0 * 1024);
  EXPECT_EQ(m.dirty_bytes, 148.0 * 1024);
  EXPECT_EQ(m.writeback_bytes, 0.0);  // a real 0: the line says so
  const MeminfoParse old = parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n");
  ASSERT_TRUE(old.ok);
  EXPECT_FALSE(old.dirty_bytes);  // no line: unknown
  EXPECT_FALSE(old.available_bytes);
  EXPECT_FALSE(parse_meminfo("garbage\n").ok);
}

TEST(NodePressure, AbsentPsiIsUnknownAndSaidNotAnError) {
  testing::TempDir proc;
  proc.write_text("meminfo", "MemAvailable: 10 kB\nWriteback: 0 kB\n");
  NodeRead r = read_node_pressure(proc.str());
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& res : r.node.pressure_seconds) {
    EXPECT_FALSE(res[0]);
    EXPECT_FALSE(res[1]);
  }
  EXPECT_EQ(r.node.memory_available_bytes, 10240.0);
  EXPECT_FALSE(r.node.memory_dirty_bytes);
  ASSERT_EQ(r.unknown.size(), 2u);
  EXPECT_NE(r.unknown[0].find("no pressure stall information"), std::string::npos);
  EXPECT_NE(r.unknown[1].find("has no Dirty line"), std::string::npos);
  // With PSI: totals in seconds; a file that does not parse is an error,
  // and the rest is still read.
  proc.write_text("pressure/memory", "some avg10=0.00 total=2500000\nfull avg10=0.00 total=0\n");
  proc.write_text("pressure/io", "some avg10=0.00 total=1000000\nfull avg10=0.00 total=500000\n");
  proc.write_text("pressure/cpu", "what\n");
  r = read_node_pressure(proc.str());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("/pressure/cpu: not a pressure line"), std::string::npos) << r.error;
  EXPECT_EQ(r.node.pressure_seconds[0][0], 2.5);
  EXPECT_EQ(r.node.pressure_seconds[0][1], 0.0);
  EXPECT_EQ(r.node.pressure_seconds[1][1], 0.5);
  EXPECT_FALSE(r.node.pressure_seconds[2][0]);
  EXPECT_EQ(r.node.memory_available_bytes, 10240.0);
}

TEST(NodePressure, ThisMachinesKernel) {
  if (!std::filesystem::exists("/proc/pressure/io")) {
    GTEST_SKIP() << "this kernel has no /proc/pressure (psi=0 or before 4.20)";
  }
  const NodeRead r = read_node_pressure("/proc");
  ASSERT_TRUE(r.ok) << r.error;
  // Every resource has a some line; the totals only grow.
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(r.node.pressure_seconds[i][0]) << i;
  const NodeRead later = read_node_pressure("/proc");
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GE(*later.node.pressure_seconds[i][0], *r.node.pressure_seconds[i][0]);
  }
  ASSERT_TRUE(r.node.memory_available_bytes);
  EXPECT_GT(*r.node.memory_available_bytes, 0);
  ASSERT_TRUE(r.node.memory_dirty_bytes);
}

}  // namespace
}  // namespace ckptmon
