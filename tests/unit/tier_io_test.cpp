// tier_io: running totals from raw counters (resets, interfaces that come
// and go), and the collector end to end on a procfs/sysfs tree built from the
// fixtures, with an injected clock. Expected figures are worked out by hand.

#include "collectors/tier_io.hpp"
#include "config/config.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exporter/metrics.hpp"
#include "log_capture.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"
#include "util/log.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixtures = std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures";

SourceRead block_read(double read, double written) {
  SourceRead r;
  r.ok = true;
  r.devices = {"sda2"};
  r.raw.read_bytes = read;
  r.raw.written_bytes = written;
  return r;
}

TEST(FoldTierRead, RunningTotalsStartAtTheRawCountersAndAddDeltas) {
  TierIo t;
  IoFold f = fold_tier_read(t, IoSource::kBlock, block_read(1000, 5000), 100);
  EXPECT_FALSE(f.error || f.reset);
  EXPECT_TRUE(t.ok);
  EXPECT_TRUE(t.has_totals);
  EXPECT_EQ(t.totals.read_bytes, 1000);
  EXPECT_EQ(t.totals.written_bytes, 5000);
  f = fold_tier_read(t, IoSource::kBlock, block_read(1500, 9000), 110);
  EXPECT_EQ(t.totals.read_bytes, 1500);
  EXPECT_EQ(t.totals.written_bytes, 9000);
  // 4000 bytes written in 10 s; 500 read.
  EXPECT_EQ(t.best_written_bytes_per_second, 400);
  EXPECT_EQ(t.best_read_bytes_per_second, 50);
  fold_tier_read(t, IoSource::kBlock, block_read(1500, 10000), 120);
  EXPECT_EQ(t.best_written_bytes_per_second, 400);  // 100/s is not better
  ASSERT_EQ(t.history.samples.size(), 3u);
  auto r = t.history.rates(100, 120);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->written_bytes_per_second, (10000.0 - 5000.0) / 20);
}

TEST(FoldTierRead, ACounterGoingBackwardsIsAResetNeverANegativeRate) {
  TierIo t;
  fold_tier_read(t, IoSource::kBlock, block_read(1000, 5000), 100);
  fold_tier_read(t, IoSource::kBlock, block_read(2000, 6000), 110);
  // Device replaced: the kernel counters start over.
  IoFold f = fold_tier_read(t, IoSource::kBlock, block_read(10, 20), 120);
  EXPECT_TRUE(f.reset);
  EXPECT_EQ(t.resets, 1u);
  EXPECT_EQ(t.totals.read_bytes, 2000);  // no increase over the reset interval
  EXPECT_EQ(t.totals.written_bytes, 6000);
  // From the new baseline on, deltas add again.
  f = fold_tier_read(t, IoSource::kBlock, block_read(110, 520), 130);
  EXPECT_FALSE(f.reset);
  EXPECT_EQ(t.resets, 1u);
  EXPECT_EQ(t.totals.read_bytes, 2100);
  EXPECT_EQ(t.totals.written_bytes, 6500);
  // Every series in the history is monotone.
  for (std::size_t i = 1; i < t.history.samples.size(); ++i) {
    EXPECT_GE(t.history.samples[i].counters.written_bytes,
              t.history.samples[i - 1].counters.written_bytes);
  }
  // One metadata counter going back is a reset too.
  TierIo n;
  SourceRead a;
  a.ok = true;
  a.devices = {"srv:/e"};
  a.has_metadata_ops = true;
  a.raw.metadata_ops[static_cast<std::size_t>(MetaOp::kGetattr)] = 50;
  fold_tier_read(n, IoSource::kNfs, a, 1);
  a.raw.metadata_ops[static_cast<std::size_t>(MetaOp::kGetattr)] = 49;
  EXPECT_TRUE(fold_tier_read(n, IoSource::kNfs, a, 2).reset);
}

TEST(FoldTierRead, FailedReadKeepsTotalsAndDeviceChangeIsANewBaseline) {
  TierIo t;
  fold_tier_read(t, IoSource::kBlock, block_read(1000, 5000), 100);
  SourceRead bad;
  bad.error = "cannot read /proc/diskstats: No such file or directory";
  IoFold f = fold_tier_read(t, IoSource::kBlock, bad, 110);
  EXPECT_TRUE(f.error);
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.errors, 1u);
  EXPECT_EQ(t.totals.written_bytes, 5000);
  f = fold_tier_read(t, IoSource::kBlock, block_read(1100, 5100), 120);
  EXPECT_TRUE(f.recovered);
  EXPECT_EQ(t.totals.written_bytes, 5100);
  // Remounted on another device with bigger counters: no jump.
  SourceRead other = block_read(90000, 90000);
  other.devices = {"sdb"};
  f = fold_tier_read(t, IoSource::kBlock, other, 130);
  EXPECT_TRUE(f.rebaselined);
  EXPECT_FALSE(f.reset);
  EXPECT_EQ(t.totals.written_bytes, 5100);
  EXPECT_EQ(t.devices, std::vector<std::string>{"sdb"});
  // Source none: nothing to export, not an error.
  SourceRead none;
  none.ok = true;
  f = fold_tier_read(t, IoSource::kNone, none, 140);
  EXPECT_FALSE(f.error);
  EXPECT_TRUE(t.ok);
  EXPECT_FALSE(t.has_totals);
  EXPECT_EQ(t.source, IoSource::kNone);
}

TEST(FoldNetRead, AnInterfaceThatDisappearsIsReportedAndComesBack) {
  NetInterfaceIo n;
  NetRead r;
  r.ok = true;
  r.receive_bytes = 1000;
  r.transmit_bytes = 2000;
  r.link_speed_bytes_per_second = 1.25e9;
  fold_net_read(n, r, 10);
  r.receive_bytes = 1600;
  r.transmit_bytes = 2100;
  fold_net_read(n, r, 20);
  EXPECT_EQ(n.receive_bytes, 1600);
  ASSERT_TRUE(n.utilisation(10, 20));
  EXPECT_DOUBLE_EQ(*n.utilisation(10, 20), 60 / 1.25e9);  // max(600, 100) B / 10 s
  NetRead gone;
  gone.error = "interface eth0 not found in /sys/class/net";
  IoFold f = fold_net_read(n, gone, 30);
  EXPECT_TRUE(f.error);
  EXPECT_FALSE(n.ok);
  EXPECT_EQ(n.errors, 1u);
  EXPECT_EQ(n.receive_bytes, 1600);  // kept
  // Back, with counters started over (driver reloaded): a new baseline.
  r.receive_bytes = 5;
  r.transmit_bytes = 7;
  r.link_speed_bytes_per_second.reset();  // speed -1
  f = fold_net_read(n, r, 40);
  EXPECT_TRUE(f.recovered);
  EXPECT_TRUE(f.rebaselined);
  EXPECT_FALSE(f.reset);
  EXPECT_EQ(n.resets, 0u);
  EXPECT_EQ(n.receive_bytes, 1600);
  r.receive_bytes = 105;
  fold_net_read(n, r, 50);
  EXPECT_EQ(n.receive_bytes, 1700);
  EXPECT_FALSE(n.utilisation(40, 50));  // speed unknown: utilisation unknown
  // Backwards without disappearing: a reset.
  r.receive_bytes = 1;
  EXPECT_TRUE(fold_net_read(n, r, 60).reset);
  EXPECT_EQ(n.resets, 1u);
  EXPECT_EQ(n.receive_bytes, 1700);
}

TEST(SharedWith, TiersOnTheSameDevicesShareTheirCounters) {
  IoState io;
  io.tiers["a"].source = IoSource::kBlock;
  io.tiers["a"].devices = {"sdb", "sdc"};
  io.tiers["b"].source = IoSource::kBlock;
  io.tiers["b"].devices = {"sdb", "sdc"};
  io.tiers["c"].source = IoSource::kBlock;
  io.tiers["c"].devices = {"sdb"};
  io.tiers["d"].source = IoSource::kNone;
  io.tiers["e"].source = IoSource::kNone;
  update_shared_with(io);
  EXPECT_EQ(io.tiers["a"].shared_with, std::vector<std::string>{"b"});
  EXPECT_EQ(io.tiers["b"].shared_with, std::vector<std::string>{"a"});
  EXPECT_TRUE(io.tiers["c"].shared_with.empty());
  EXPECT_TRUE(io.tiers["d"].shared_with.empty());
}

// --- the collector on a fixture tree ---------------------------------------------

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == ' ' ? std::string("\\040") : std::string(1, c);
  return out;
}

struct Rig {
  testing::TempDir dir;
  fs::path proc = dir.path() / "proc";
  fs::path sys = dir.path() / "sys";
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>(1'700'000'000.0);
  State state;
  TierIoCollector collector{clock};

  Rig() {
    fs::copy(kFixtures + "/sysfs-block", sys, fs::copy_options::recursive);
    fs::copy(kFixtures + "/sysfs-net", sys,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    for (const char* t : {"rapid", "rapid2", "shm", "nfs", "broken"}) {
      fs::create_directories(dir.path() / "tiers" / t);
    }
    const std::string root = (dir.path() / "tiers").string();
    write(proc / "self/mountinfo",
          "22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
          "26 22 253:0 / " +
              escape(root) +
              "/rapid rw - xfs /dev/mapper/vg0-ckpt rw\n"
              "27 22 253:0 /sub " +
              escape(root) +
              "/rapid2 rw - xfs /dev/mapper/vg0-ckpt rw\n"
              "28 22 0:27 / " +
              escape(root) +
              "/shm rw - tmpfs tmpfs rw\n"
              "29 22 0:53 / " +
              escape(root) +
              "/nfs rw - nfs4 10.20.0.5:/export/ckpt rw,vers=4.2\n"
              "30 22 0:55 / " +
              escape(root) + "/broken rw - nfs4 10.20.0.7:/export/broken rw\n");
    write(proc / "diskstats", slurp(kFixtures + "/procfs-block/diskstats"));
    std::string ms = slurp(kFixtures + "/procfs-nfs/self/mountstats");
    auto replace = [&](const std::string& from, const std::string& to) {
      ms.replace(ms.find(from), from.size(), to);
    };
    replace("on /mnt/ckpt\\040nfs ", "on " + escape(root) + "/nfs ");
    replace("on /mnt/broken ", "on " + escape(root) + "/broken ");
    write(proc / "self/mountstats", ms);
    LoadResult cfg =
        parse_config("global: {procfs: " + proc.string() + ", sysfs: " + sys.string() + "}\n" +
                         "network: {interfaces: [eth0, eth1, ib0]}\n" + "tiers:\n" +
                         "  - {name: rapid, path: " + root + "/rapid, role: rapid}\n" +
                         "  - {name: rapid2, path: " + root + "/rapid2, role: rapid}\n" +
                         "  - {name: shm, path: " + root + "/shm, role: staging}\n" +
                         "  - {name: nfs, path: " + root + "/nfs, role: capacity}\n" +
                         "  - {name: broken, path: " + root + "/broken, role: capacity}\n",
                     "io.yml");
    if (!cfg.config) throw std::runtime_error(cfg.errors.at(0).to_string());
    auto c = std::make_shared<const Config>(*cfg.config);
    state.apply_config(c);
    state.config = c;
    collector.configure(*c);
  }

  void run_all() {
    for (const std::string& t : collector.targets()) collector.prepare(t, state)()(state);
  }
  const TierIo& tier(const std::string& name) const { return state.io->tiers.at(name); }
};

TEST(TierIoCollector, ReadsEverySourceAndCountsErrorsWithoutStoppingTheOthers) {
  Rig rig;
  EXPECT_EQ(rig.collector.targets(), (std::vector<std::string>{"rapid", "rapid2", "shm", "nfs",
                                                               "broken", ":network", ":node"}));
  rig.run_all();
  ASSERT_TRUE(rig.state.io);
  const TierIo& rapid = rig.tier("rapid");
  ASSERT_TRUE(rapid.ok) << rapid.error;
  EXPECT_EQ(rapid.source, IoSource::kBlock);
  EXPECT_EQ(rapid.devices, std::vector<std::string>{"sda2"});
  EXPECT_EQ(rapid.totals.written_bytes, 45678800.0 * 512);
  EXPECT_EQ(rapid.shared_with, std::vector<std::string>{"rapid2"});
  EXPECT_EQ(rig.tier("rapid2").shared_with, std::vector<std::string>{"rapid"});
  EXPECT_EQ(rig.tier("shm").source, IoSource::kNone);
  EXPECT_TRUE(rig.tier("shm").ok);
  const TierIo& nfs = rig.tier("nfs");
  ASSERT_TRUE(nfs.ok) << nfs.error;
  EXPECT_EQ(nfs.source, IoSource::kNfs);
  EXPECT_EQ(nfs.totals.written_bytes, 429496729600.0);
  EXPECT_EQ(nfs.totals.metadata_ops[static_cast<std::size_t>(MetaOp::kGetattr)], 5700);
  // Per-op times, by hand from the fixture: GETATTR + ACCESS execute 3180 +
  // 615 ms, RTT 3100 + 600 ms; no transmission beyond one per operation.
  constexpr auto kGetattr = static_cast<std::size_t>(MetaOp::kGetattr);
  EXPECT_TRUE(nfs.has_metadata_seconds);
  EXPECT_DOUBLE_EQ(nfs.totals.metadata_seconds[kGetattr], 3.795);
  EXPECT_DOUBLE_EQ(nfs.metadata_rtt_seconds[kGetattr], 3.7);
  EXPECT_EQ(nfs.metadata_retransmissions[kGetattr], 0);
  EXPECT_FALSE(rig.tier("rapid").has_metadata_seconds);
  // The node: one sample at the clock's time (this fixture procfs has no
  // pressure or meminfo: its figures unknown, not 0).
  ASSERT_EQ(rig.state.io->node.history.size(), 1u);
  EXPECT_EQ(rig.state.io->node.history.back().time, rig.clock->now());
  EXPECT_FALSE(rig.state.io->node.history.back().dirty_bytes);
  EXPECT_FALSE(rig.state.io->node.psi_available);
  const TierIo& broken = rig.tier("broken");
  EXPECT_FALSE(broken.ok);
  EXPECT_THAT(broken.error, HasSubstr("unknown statvers \"2.0\""));
  EXPECT_EQ(rig.state.io->read_errors, 1u);  // the broken tier only
  const NetInterfaceIo& eth0 = rig.state.io->interfaces.at("eth0");
  EXPECT_TRUE(eth0.ok);
  EXPECT_EQ(eth0.receive_bytes, 918273645512.0);
  EXPECT_EQ(*eth0.link_speed_bytes_per_second, 3.125e9);
  EXPECT_FALSE(rig.state.io->interfaces.at("eth1").link_speed_bytes_per_second);
  EXPECT_TRUE(rig.state.io->interfaces.at("ib0").infiniband);

  // An interval later: 2048 more sectors written on sda2, 10 GiB more over NFS.
  rig.clock->advance(15);
  std::string ds = slurp((rig.proc / "diskstats").string());
  const std::string from = "3051129 2100450 45678800";
  ds.replace(ds.find(from), from.size(), "3051200 2100450 45680848");
  write(rig.proc / "diskstats", ds);
  std::string ms = slurp((rig.proc / "self/mountstats").string());
  const std::string bytes = "1610612736 429496729600";
  ms.replace(ms.find(bytes), bytes.size(), "1610612736 440234147840");
  // 100 more GETATTRs, sent 103 times, executing 200 ms more.
  const std::string getattr = "GETATTR: 5000 5000 0 900000 1210000 3 3100 3180 0";
  ms.replace(ms.find(getattr), getattr.size(), "GETATTR: 5100 5103 0 918000 1234200 3 3250 3380 0");
  write(rig.proc / "self/mountstats", ms);
  rig.run_all();
  EXPECT_DOUBLE_EQ(rig.tier("nfs").totals.metadata_seconds[kGetattr], 3.995);
  EXPECT_DOUBLE_EQ(rig.tier("nfs").metadata_rtt_seconds[kGetattr], 3.85);
  EXPECT_EQ(rig.tier("nfs").metadata_retransmissions[kGetattr], 3);
  EXPECT_EQ(rig.state.io->node.history.size(), 2u);
  EXPECT_EQ(rig.tier("rapid").totals.written_bytes, 45680848.0 * 512);
  EXPECT_EQ(rig.tier("rapid").best_written_bytes_per_second, 2048.0 * 512 / 15);
  EXPECT_EQ(rig.tier("nfs").totals.written_bytes, 440234147840.0);
  EXPECT_EQ(rig.tier("nfs").best_written_bytes_per_second, 10737418240.0 / 15);
  EXPECT_EQ(rig.state.io->read_errors, 2u);  // broken again

  // mountstats vanishes (NFS module unloaded), eth0 disappears, sda2's
  // counters go backwards: each counted, block and the rest keep going.
  rig.clock->advance(15);
  fs::remove(rig.proc / "self/mountstats");
  fs::remove_all(rig.sys / "class/net/eth0");
  ds.replace(ds.find("3051200 2100450 45680848"), 24, "3 0 8");
  write(rig.proc / "diskstats", ds);
  rig.run_all();
  EXPECT_FALSE(rig.tier("nfs").ok);
  EXPECT_THAT(rig.tier("nfs").error, HasSubstr("mountstats"));
  EXPECT_EQ(rig.tier("nfs").totals.written_bytes, 440234147840.0);  // kept, not zeroed
  EXPECT_TRUE(rig.tier("rapid").ok);
  EXPECT_EQ(rig.tier("rapid").resets, 1u);
  EXPECT_EQ(rig.tier("rapid").totals.written_bytes, 45680848.0 * 512);
  EXPECT_EQ(rig.state.io->counter_resets, 2u);  // rapid and rapid2 share sda2
  EXPECT_FALSE(rig.state.io->interfaces.at("eth0").ok);
  EXPECT_THAT(rig.state.io->interfaces.at("eth0").error, HasSubstr("interface eth0 not found"));
  EXPECT_TRUE(rig.state.io->interfaces.at("ib0").ok);
  EXPECT_EQ(rig.state.io->read_errors, 2u + 2 + 1);  // nfs, broken; eth0

  const std::string text = serialize(state_families(rig.state));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_written_bytes_total{tier=\"rapid\"} 23388594176\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_written_bytes_total{tier=\"nfs\"} 440234147840\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_metadata_operations_total{tier=\"nfs\",op=\"getattr\"} "
                              "5800\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_metadata_operation_seconds_total{tier=\"nfs\","
                              "op=\"getattr\"} 3.995\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_metadata_operation_rtt_seconds_total{tier=\"nfs\","
                              "op=\"getattr\"} 3.85\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_metadata_operation_retransmissions_total{tier=\"nfs\","
                              "op=\"getattr\"} 3\n"));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_tier_metadata_operation_seconds_total{tier=\"rapid\"")));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_tier_metadata_operations_total{tier=\"rapid\"")));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_io_source_info{tier=\"rapid\",source=\"block\","
                              "devices=\"sda2\",shared_with=\"rapid2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_io_source_info{tier=\"shm\",source=\"none\","
                              "devices=\"\",shared_with=\"\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_tier_written_bytes_total{tier=\"shm\"")));
  EXPECT_THAT(text, HasSubstr("ckpt_network_receive_bytes_total{interface=\"ib0\"} "
                              "10737418240000\n"));  // 2684354560000 words x 4
  EXPECT_THAT(text, HasSubstr("ckpt_network_link_speed_bytes_per_second{interface=\"ib0\"} "
                              "25000000000\n"));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_network_link_speed_bytes_per_second{interface=\"eth1\"")));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_network_link_speed_bytes_per_second{interface=\"eth0\"")));
  EXPECT_THAT(text, HasSubstr("ckpt_network_receive_bytes_total{interface=\"eth0\"} "
                              "918273645512\n"));  // gone: the total is kept
  EXPECT_THAT(text, HasSubstr("ckptmon_io_read_errors_total 5\n"));
  EXPECT_THAT(text, HasSubstr("ckptmon_io_resets_total 2\n"));

  // eth0 comes back with counters started over; mountstats too.
  rig.clock->advance(15);
  fs::copy(kFixtures + "/sysfs-net/class/net/eth0", rig.sys / "class/net/eth0",
           fs::copy_options::recursive);
  write(rig.sys / "class/net/eth0/statistics/rx_bytes", "100\n");
  rig.run_all();
  EXPECT_TRUE(rig.state.io->interfaces.at("eth0").ok);
  EXPECT_EQ(rig.state.io->interfaces.at("eth0").receive_bytes, 918273645512.0);
  write(rig.sys / "class/net/eth0/statistics/rx_bytes", "600\n");
  rig.clock->advance(15);
  rig.run_all();
  EXPECT_EQ(rig.state.io->interfaces.at("eth0").receive_bytes, 918273645512.0 + 500);
}

TEST(TierIoCollector, ATierWhoseRootIsDownHasNoKnownSource) {
  Rig rig;
  fs::remove_all(rig.dir.path() / "tiers" / "shm");
  rig.run_all();
  EXPECT_FALSE(rig.tier("shm").ok);
  EXPECT_THAT(rig.tier("shm").error, HasSubstr("tier root: open"));
  EXPECT_EQ(rig.state.io->read_errors, 1u);  // broken only: a down root is tier_stats' news
  const std::string text = serialize(state_families(rig.state));
  EXPECT_THAT(text, Not(HasSubstr("ckpt_tier_io_source_info{tier=\"shm\"")));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_io_source_info{tier=\"broken\",source=\"nfs\""));
}

TEST(TierIoCollector, DeadlineAndReloadAreHandled) {
  Rig rig;
  rig.run_all();
  rig.collector.on_deadline("nfs", rig.state);
  EXPECT_FALSE(rig.tier("nfs").ok);
  EXPECT_THAT(rig.tier("nfs").error, HasSubstr("not read within 10s"));
  EXPECT_EQ(rig.tier("nfs").totals.written_bytes, 429496729600.0);
  rig.collector.on_deadline(kNetworkTarget, rig.state);
  EXPECT_FALSE(rig.state.io->interfaces.at("ib0").ok);
  // A reload drops a tier and the interfaces: the next update prunes them.
  Config c = *rig.state.config;
  c.tiers.pop_back();  // broken
  c.network.interfaces.clear();
  auto next = std::make_shared<const Config>(c);
  rig.state.apply_config(next);
  rig.state.config = next;
  rig.collector.configure(*next);
  EXPECT_EQ(rig.collector.targets().size(), 5u);  // four tiers and the node
  rig.run_all();
  EXPECT_FALSE(rig.state.io->tiers.contains("broken"));
  EXPECT_TRUE(rig.state.io->interfaces.empty());
}

TEST(TierIoCollector, ErrorsAreCountedEveryTimeAndLoggedOnce) {
  testing::LogCapture out;
  Rig rig;
  // mountstats unreadable: a directory where the file should be (root reads
  // any file, so a mode would not stop this test running as root).
  fs::remove(rig.proc / "self/mountstats");
  fs::create_directories(rig.proc / "self/mountstats");
  for (int i = 0; i < 3; ++i) {
    rig.run_all();
    rig.clock->advance(15);
  }
  EXPECT_FALSE(rig.tier("nfs").ok);
  EXPECT_THAT(rig.tier("nfs").error, HasSubstr("cannot read"));
  EXPECT_EQ(rig.tier("nfs").errors, 3u);
  EXPECT_EQ(rig.state.io->read_errors, 6u);  // nfs and broken, three times each
  EXPECT_EQ(out.count("target=\"tier nfs\""), 1u) << out.str();
  EXPECT_EQ(out.count("target=\"tier broken\""), 1u) << out.str();
  // The block tiers went on meanwhile.
  EXPECT_TRUE(rig.tier("rapid").ok);
  EXPECT_EQ(rig.tier("rapid").history.samples.size(), 3u);
  // Back, then failing again: news again, logged once more.
  fs::remove(rig.proc / "self/mountstats");
  fs::copy(kFixtures + "/procfs-nfs/self/mountstats", rig.proc / "self/mountstats");
  std::string ms = slurp((rig.proc / "self/mountstats").string());
  const std::string root = (rig.dir.path() / "tiers").string();
  const std::string from = "on /mnt/ckpt\\040nfs ";
  ms.replace(ms.find(from), from.size(), "on " + escape(root) + "/nfs ");
  write(rig.proc / "self/mountstats", ms);
  rig.run_all();
  EXPECT_TRUE(rig.tier("nfs").ok) << rig.tier("nfs").error;
  EXPECT_EQ(out.count("I/O counters readable again"), 1u) << out.str();
  fs::remove(rig.proc / "self/mountstats");
  rig.clock->advance(15);
  rig.run_all();
  EXPECT_EQ(out.count("target=\"tier nfs\""), 3u) << out.str();  // + "readable again"
}

TEST(FoldTierRead, DeviceTimesAddDeltasAndTheRequestsInFlightAreTheLastRead) {
  auto read = [](double busy, double weighted, double in_flight) {
    SourceRead r = block_read(0, 0);
    r.has_device_times = true;
    r.raw.device_busy_seconds = busy;
    r.raw.device_weighted_seconds = weighted;
    r.device_in_flight = in_flight;
    return r;
  };
  TierIo t;
  fold_tier_read(t, IoSource::kBlock, read(10, 40, 2), 100);
  EXPECT_TRUE(t.has_device_times);
  EXPECT_EQ(t.device_in_flight, 2.0);
  fold_tier_read(t, IoSource::kBlock, read(12.5, 50, 0), 110);
  EXPECT_EQ(t.totals.device_busy_seconds, 12.5);
  EXPECT_EQ(t.totals.device_weighted_seconds, 50);
  EXPECT_EQ(t.device_in_flight, 0.0);  // a real 0: nothing queued now
  // A busy time going backwards (a device replaced) is a reset: no increase.
  IoFold f = fold_tier_read(t, IoSource::kBlock, read(1, 60, 0), 120);
  EXPECT_TRUE(f.reset);
  EXPECT_EQ(t.totals.device_busy_seconds, 12.5);
  fold_tier_read(t, IoSource::kBlock, read(2, 61, 0), 130);
  EXPECT_EQ(t.totals.device_busy_seconds, 13.5);
  // A member without the time fields: unknown from then, a new baseline.
  SourceRead old = block_read(0, 0);
  f = fold_tier_read(t, IoSource::kBlock, old, 140);
  EXPECT_TRUE(f.rebaselined);
  EXPECT_FALSE(t.has_device_times);
  EXPECT_FALSE(t.device_in_flight);
}

}  // namespace
}  // namespace ckptmon
