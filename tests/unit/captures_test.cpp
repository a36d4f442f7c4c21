// The storage-path parsers against real captures other projects test
// against (../shared/captures, or $CKPTMON_CAPTURES; see its README.md for
// provenance). They are read from there, never copied into this repository;
// where they are absent each test says so and skips. The expected values
// are the upstream projects' (node_exporter's e2e output, lustre_exporter's
// test) or worked out by hand from the capture's text, in the comment beside.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "collectors/io_parsers.hpp"
#include "collectors/io_sources.hpp"
#include "tests/test_paths.hpp"

namespace ckptmon {
namespace {

std::string captures() {
  if (const char* env = std::getenv("CKPTMON_CAPTURES"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(CKPTMON_SOURCE_DIR) + "/../shared/captures";
}

#define REQUIRE_CAPTURE(rel)                                                         \
  if (!std::filesystem::exists(captures() + "/" + (rel))) {                          \
    GTEST_SKIP() << "no capture " << captures() << "/" << (rel)                      \
                 << " (set CKPTMON_CAPTURES to the captures directory to run this)"; \
  }

std::string slurp(const std::string& rel) {
  std::ifstream in(captures() + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double op(const IoCounters& c, MetaOp m) { return c.metadata_ops[static_cast<std::size_t>(m)]; }

double all_ops(const IoCounters& c) {
  double n = 0;
  for (double v : c.metadata_ops) n += v;
  return n;
}

TEST(Captures, NodeExporterInfinibandPortsIncludingOneWithoutPma) {
  REQUIRE_CAPTURE("node_exporter/sys/class/infiniband");
  const std::string sys = captures() + "/node_exporter/sys";
  // node_exporter's e2e output: i40iw0 port 1 has a rate (1.25e+09) and no
  // data counters; mlx4_0 port 1 received 1.8527668e+07 and sent 1.493376e+07
  // bytes at 5e+09.
  const NetRead iw = read_net_interface(sys, "i40iw0:1");
  ASSERT_TRUE(iw.ok) << iw.error;
  EXPECT_TRUE(iw.counters_unsupported);
  ASSERT_TRUE(iw.link_speed_bytes_per_second);
  EXPECT_EQ(*iw.link_speed_bytes_per_second, 1.25e9);
  const NetRead mlx = read_net_interface(sys, "mlx4_0:1");
  ASSERT_TRUE(mlx.ok) << mlx.error;
  EXPECT_FALSE(mlx.counters_unsupported);
  EXPECT_EQ(mlx.receive_bytes, 18527668u);
  EXPECT_EQ(mlx.transmit_bytes, 14933760u);
  EXPECT_EQ(*mlx.link_speed_bytes_per_second, 5e9);
}

TEST(Captures, HpeLustreExporterLliteStats) {
  const std::string rel =
      "lustre/hpe-lustre_exporter/proc/fs/lustre/llite/lustrefs-ffff88105db50000/stats";
  REQUIRE_CAPTURE(rel);
  const LliteStats s = parse_llite_stats(slurp(rel));
  ASSERT_TRUE(s.ok) << s.error;
  // lustre_exporter_test.go: lustre_read_bytes_total 4194304,
  // lustre_write_bytes_total 9.381379729408e+13.
  EXPECT_EQ(s.raw.read_bytes, 4194304);
  EXPECT_EQ(s.raw.written_bytes, 9.381379729408e13);
  // By hand: open 136, close 96, readdir 12, truncate 134 (setattr),
  // getattr 41, getxattr 85 less 20 hits + removexattr 134 (other); not
  // alloc_inode 2 or inode_permission 398.
  EXPECT_EQ(op(s.raw, MetaOp::kOpen), 136);
  EXPECT_EQ(op(s.raw, MetaOp::kClose), 96);
  EXPECT_EQ(op(s.raw, MetaOp::kSetattr), 134);
  EXPECT_EQ(op(s.raw, MetaOp::kOther), 85 - 20 + 134);
  EXPECT_EQ(all_ops(s.raw), 136 + 96 + 12 + 134 + 41 + 65 + 134);
  EXPECT_TRUE(s.unknown_counters.empty());
}

TEST(Captures, Lustre216ClientMetadataIsTheMdsCallsOnly) {
  const std::string rel = "lustre/whamcloud-lustrefs-exporter/client.txt.head";
  REQUIRE_CAPTURE(rel);
  // `lctl get_param` output: the llite stats block follows its "...stats=" line.
  const std::string text = slurp(rel);
  const auto at = text.find("stats=\n");
  ASSERT_NE(at, std::string::npos);
  const LliteStats s = parse_llite_stats(text.substr(at + 7));
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.raw.read_bytes, 1496254921055.0);
  EXPECT_EQ(s.raw.written_bytes, 1184274862535.0);  // not hybrid_write_bytes' 20971520 again
  // By hand from the capture: the MDS calls.
  EXPECT_EQ(op(s.raw, MetaOp::kOpen), 33538615);
  EXPECT_EQ(op(s.raw, MetaOp::kClose), 33538615);
  EXPECT_EQ(op(s.raw, MetaOp::kCommit), 6);  // fsync
  EXPECT_EQ(op(s.raw, MetaOp::kReaddir), 10856756);
  EXPECT_EQ(op(s.raw, MetaOp::kSetattr), 45511804);
  EXPECT_EQ(op(s.raw, MetaOp::kGetattr), 59347920);
  EXPECT_EQ(op(s.raw, MetaOp::kRemove), 18379792 + 2795170);  // unlink + rmdir
  EXPECT_EQ(op(s.raw, MetaOp::kCreate), 536558 + 12835380);   // symlink + mknod
  EXPECT_EQ(op(s.raw, MetaOp::kMkdir), 2166667);
  EXPECT_EQ(op(s.raw, MetaOp::kRename), 12835381);
  // statfs 1526 + getxattr 1516 less getxattr_hits 201 + listxattr 471; not
  // inode_permission 922787668, opencount, openclosetime or hybrid_*.
  EXPECT_EQ(op(s.raw, MetaOp::kOther), 1526 + 1516 - 201 + 471);
  EXPECT_TRUE(s.unknown_counters.empty());
  // Counting every line that is not data, as ckptmon did before, added
  // inode_permission, getxattr_hits, opencount, openclosetime and the three
  // hybrid_* counts (and did not take the hits off getxattr): 1,292,398,860,
  // 5.56 times these 232,345,976 MDS calls, and that was the rate the
  // `metadata` slow cause and the restore estimate used.
  EXPECT_EQ(all_ops(s.raw), 232345976);
}

}  // namespace
}  // namespace ckptmon
