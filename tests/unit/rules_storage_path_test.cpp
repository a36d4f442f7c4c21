// The storage path: window I/O, the slow-cause rule, the restore estimate and
// the tracker that keeps them per checkpoint. Expected values by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "model/events.hpp"
#include "model/io.hpp"
#include "rules/restore_estimate.hpp"
#include "rules/slow_cause.hpp"
#include "rules/storage_path.hpp"
#include "rules/window_io.hpp"
#include "rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;

constexpr double kMiB = 1024.0 * 1024;
constexpr double kGiB = 1024.0 * kMiB;

// Samples every `interval` s from t=1000 to 1500: written grows by
// `write_rate` per second, read by `read_rate`, metadata (getattr) by
// `meta_rate`.
TierIo block_tier(double write_rate, double read_rate, double meta_rate, double interval = 100) {
  TierIo t;
  t.source = IoSource::kBlock;
  t.ok = true;
  t.has_totals = true;
  for (double time = 1000; time <= 1500; time += interval) {
    IoSample s;
    s.time = time;
    s.counters.written_bytes = write_rate * (time - 1000);
    s.counters.read_bytes = read_rate * (time - 1000);
    s.counters.metadata_ops[static_cast<std::size_t>(MetaOp::kGetattr)] = meta_rate * (time - 1000);
    t.history.add(s);
  }
  t.totals = t.history.samples.back().counters;
  return t;
}

// The node every 100 s from t=1000 to 1500: Dirty + Writeback grows by
// `dirty_rate` bytes/s, full memory pressure by `memory_full` s/s.
NodeIo node_io(double dirty_rate, double memory_full) {
  NodeIo n;
  n.psi_available = true;
  for (double time = 1000; time <= 1500; time += 100) {
    NodeSample s;
    s.time = time;
    s.dirty_bytes = 1e6 + dirty_rate * (time - 1000);
    s.memory_full_seconds = memory_full * (time - 1000);
    s.io_full_seconds = 0;
    n.add(s);
  }
  return n;
}

// Link of `speed` bytes/s; transmit grows by `tx_rate` per second.
NetInterfaceIo nic(const std::string& name, double speed, double tx_rate) {
  NetInterfaceIo n;
  n.name = name;
  n.ok = true;
  n.link_speed_bytes_per_second = speed;
  for (int i = 0; i < 6; ++i) {
    NetSample s;
    s.time = 1000 + 100.0 * i;
    s.transmit_bytes = tx_rate * 100 * i;
    s.receive_bytes = tx_rate * 10 * i;  // rx a tenth of tx: max() takes tx
    n.history.push_back(s);
  }
  return n;
}

TEST(SaveWindow, EventsThenManifestThenMtimes) {
  Checkpoint c = Ck("rapid", "llama", 100).committed(10, 1150, 1190).save(1120, 1200);
  EventStep ev;
  ev.start_ts = 1100;
  ev.commit_ts = 1300;
  auto w = save_window(c, &ev);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->source, WindowSource::kEvents);
  EXPECT_DOUBLE_EQ(w->start, 1100);
  EXPECT_DOUBLE_EQ(w->end, 1300);

  w = save_window(c, nullptr);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->source, WindowSource::kManifest);
  EXPECT_DOUBLE_EQ(w->duration(), 80);

  c.save_start = c.save_end = 0;
  EventStep half;  // a start without its commit does not date the save
  half.start_ts = 1100;
  w = save_window(c, &half);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->source, WindowSource::kMtimes);
  EXPECT_DOUBLE_EQ(w->start, 1150);
  EXPECT_DOUBLE_EQ(w->end, 1190);

  c.first_write = c.last_write = 0;
  EXPECT_FALSE(save_window(c, nullptr));
}

TEST(WindowIo, RatesFromTheBracketingSamples) {
  const TierIo t = block_tier(500 * kMiB, 0, 40);
  std::map<std::string, NetInterfaceIo> ifs;
  ifs["eth0"] = nic("eth0", 1000 * kMiB, 300 * kMiB);  // 30 %
  ifs["ib0"] = nic("ib0", 1000 * kMiB, 700 * kMiB);    // 70 %
  // [1000, 1500]: five sampling intervals of 100 s, and the device saw all
  // of the checkpoint's 200 GiB: the device measure.
  const NodeIo node = node_io(0, 0.25);
  WindowIo w = window_io({1000, 1500, WindowSource::kEvents}, 200 * kGiB, &t, ifs, &node);
  EXPECT_EQ(w.source, IoSource::kBlock);
  ASSERT_TRUE(w.write_bytes_per_second);
  EXPECT_DOUBLE_EQ(*w.write_bytes_per_second, 500 * kMiB);
  EXPECT_EQ(w.write_measure, WriteMeasure::kDevice);
  EXPECT_DOUBLE_EQ(w.sampling_interval_seconds, 100);
  EXPECT_FALSE(w.absorbed);
  ASSERT_TRUE(w.metadata_ops_per_second);
  EXPECT_DOUBLE_EQ(*w.metadata_ops_per_second, 40);
  ASSERT_TRUE(w.network_utilisation);
  EXPECT_DOUBLE_EQ(*w.network_utilisation, 0.7);
  EXPECT_EQ(w.network_interface, "ib0");
  EXPECT_TRUE(w.interfaces_configured);
  // 125 s of full memory pressure over 500 s; none on I/O; Dirty flat.
  ASSERT_TRUE(w.node.memory_full_share);
  EXPECT_DOUBLE_EQ(*w.node.memory_full_share, 0.25);
  EXPECT_DOUBLE_EQ(*w.node.io_full_share, 0);
  EXPECT_DOUBLE_EQ(*w.node.dirty_rise_bytes, 0);
  EXPECT_TRUE(w.psi_available);

  // [1100, 1300]: two intervals, fewer than five: the checkpoint's 40 GiB
  // over its 200 s event window; the device's figure is still shown.
  w = window_io({1100, 1300, WindowSource::kEvents}, 40 * kGiB, &t, ifs, &node);
  EXPECT_EQ(w.write_measure, WriteMeasure::kEvents);
  EXPECT_DOUBLE_EQ(*w.write_bytes_per_second, 40 * kGiB / 200);
  EXPECT_DOUBLE_EQ(*w.device_write_bytes_per_second, 500 * kMiB);
  // The same from a manifest's window, or from shard mtimes.
  w = window_io({1100, 1300, WindowSource::kMtimes}, 40 * kGiB, &t, ifs, &node);
  EXPECT_EQ(w.write_measure, WriteMeasure::kMtimes);
  // Bytes unknown: no figure but the device's, which is too short to use.
  w = window_io({1100, 1300, WindowSource::kEvents}, 0, &t, ifs, &node);
  EXPECT_FALSE(w.write_bytes_per_second);
}

TEST(WindowIo, DirtyMemoryThatAbsorbedTheWriteRulesOutTheDevice) {
  // The device wrote 1 MiB/s over [1000, 1500] (500 MiB) while the
  // checkpoint wrote 800 MiB: it saw less than half of it.
  const TierIo slow_device = block_tier(1 * kMiB, 0, 0);
  WindowIo w =
      window_io({1000, 1500, WindowSource::kEvents}, 1200 * kMiB, &slow_device, {}, nullptr);
  EXPECT_TRUE(w.absorbed);
  EXPECT_EQ(w.write_measure, WriteMeasure::kEvents);
  EXPECT_DOUBLE_EQ(*w.write_bytes_per_second, 1200 * kMiB / 500);
  // The device saw it all, but Dirty + Writeback rose by 1 MiB/s x 500 s =
  // 500 MiB, over half of an 800 MiB checkpoint: absorbed.
  const TierIo busy = block_tier(100 * kMiB, 0, 0);
  const NodeIo dirty = node_io(1 * kMiB, 0);
  w = window_io({1000, 1500, WindowSource::kEvents}, 800 * kMiB, &busy, {}, &dirty);
  EXPECT_TRUE(w.absorbed);
  EXPECT_DOUBLE_EQ(*w.node.dirty_rise_bytes, 500 * kMiB);
  EXPECT_EQ(w.write_measure, WriteMeasure::kEvents);
  // Under half (a 1100 MiB checkpoint): the device measure.
  w = window_io({1000, 1500, WindowSource::kEvents}, 1100 * kMiB, &busy, {}, &dirty);
  EXPECT_FALSE(w.absorbed);
  EXPECT_EQ(w.write_measure, WriteMeasure::kDevice);
}

TEST(WindowIo, TheSlowestNfsMetadataOperation) {
  TierIo t = block_tier(0, 0, 0);
  t.source = IoSource::kNfs;
  t.has_metadata_ops = true;
  t.has_metadata_seconds = true;
  // Over [1100, 1300]: 200 getattr taking 8 s (40 ms each) and 400 opens
  // taking 2 s (5 ms each).
  for (IoSample& s : t.history.samples) {
    const double k = (s.time - 1000) / 100;
    s.counters.metadata_ops[static_cast<std::size_t>(MetaOp::kGetattr)] = 100 * k;
    s.counters.metadata_seconds[static_cast<std::size_t>(MetaOp::kGetattr)] = 4 * k;
    s.counters.metadata_ops[static_cast<std::size_t>(MetaOp::kOpen)] = 200 * k;
    s.counters.metadata_seconds[static_cast<std::size_t>(MetaOp::kOpen)] = 1 * k;
  }
  WindowIo w = window_io({1100, 1300, WindowSource::kEvents}, 0, &t, {}, nullptr);
  ASSERT_TRUE(w.slowest_op_latency_seconds);
  EXPECT_EQ(w.slowest_op, MetaOp::kGetattr);
  EXPECT_DOUBLE_EQ(*w.slowest_op_latency_seconds, 0.04);
  EXPECT_DOUBLE_EQ(*w.metadata_ops_per_second, 3);
  // A block device measures no latency: unknown.
  t.has_metadata_seconds = false;
  w = window_io({1100, 1300, WindowSource::kEvents}, 0, &t, {}, nullptr);
  EXPECT_FALSE(w.slowest_op_latency_seconds);
}

TEST(WindowIo, NodeSamplesCoverAWindowOrCannot) {
  const NodeIo n = node_io(0, 0);
  EXPECT_TRUE(node_window_covered({1100, 1300, WindowSource::kEvents}, n));
  EXPECT_FALSE(node_window_covered({1400, 1600, WindowSource::kEvents}, n));
  EXPECT_TRUE(node_window_coverable({1400, 1600, WindowSource::kEvents}, n));
  EXPECT_FALSE(node_window_coverable({900, 1100, WindowSource::kEvents}, n));
  EXPECT_FALSE(node_window_coverable({1100, 1300, WindowSource::kEvents}, NodeIo{}));
  // A sample without PSI: the share is unknown, not 0.
  NodeIo no_psi;
  no_psi.add({1000, std::nullopt, std::nullopt, 5.0});
  no_psi.add({1100, std::nullopt, std::nullopt, 9.0});
  const NodeWindow w = no_psi.over(1000, 1100);
  EXPECT_FALSE(w.memory_full_share);
  EXPECT_FALSE(w.io_full_share);
  EXPECT_DOUBLE_EQ(*w.dirty_rise_bytes, 4);
}

TEST(WindowIo, UnknownIsNotZero) {
  const TierIo t = block_tier(500 * kMiB, 0, 40);
  std::map<std::string, NetInterfaceIo> ifs;
  NetInterfaceIo no_speed = nic("ib0", 1000 * kMiB, 700 * kMiB);
  no_speed.link_speed_bytes_per_second.reset();  // speed said -1
  ifs["ib0"] = no_speed;
  // Ends after the newest sample (1500): not covered yet.
  WindowIo w = window_io({1400, 1600, WindowSource::kEvents}, 0, &t, ifs, nullptr);
  EXPECT_FALSE(w.write_bytes_per_second);
  EXPECT_FALSE(w.metadata_ops_per_second);
  EXPECT_FALSE(w.network_utilisation);
  EXPECT_TRUE(window_io_coverable({1400, 1600, WindowSource::kEvents}, &t));
  // Starts before the oldest sample: never coverable.
  EXPECT_FALSE(window_io_coverable({900, 1100, WindowSource::kEvents}, &t));
  // No source at all.
  w = window_io({1100, 1300, WindowSource::kEvents}, 0, nullptr, {}, nullptr);
  EXPECT_EQ(w.source, IoSource::kNone);
  EXPECT_FALSE(w.write_bytes_per_second);
  EXPECT_FALSE(w.interfaces_configured);
  EXPECT_FALSE(window_io_coverable({1100, 1300, WindowSource::kEvents}, nullptr));
  // A block source never read (its device does not resolve): nothing to
  // wait for. Read once and empty only because it just started: wait.
  TierIo unread;
  unread.source = IoSource::kBlock;
  unread.ok = false;
  unread.error = "no block device 8:1";
  EXPECT_FALSE(window_io_coverable({1100, 1300, WindowSource::kEvents}, &unread));
  unread.ok = true;
  EXPECT_TRUE(window_io_coverable({1100, 1300, WindowSource::kEvents}, &unread));
}

TEST(WindowIo, BestMetadataRate) {
  IoHistory h;
  EXPECT_FALSE(best_metadata_rate(h));
  double total = 0;
  const double per_interval[] = {100, 900, 300};  // over 10 s each
  IoSample s;
  s.time = 0;
  h.add(s);
  for (int i = 0; i < 3; ++i) {
    total += per_interval[i];
    s.time = 10.0 * (i + 1);
    s.counters.metadata_ops[static_cast<std::size_t>(MetaOp::kOpen)] = total;
    h.add(s);
  }
  ASSERT_TRUE(best_metadata_rate(h));
  EXPECT_DOUBLE_EQ(*best_metadata_rate(h), 90);
}

// The slow-cause rule, one case per cause. The base case is a save of 300 s
// against a 120 s window with every figure known and the storage path idle.
struct SlowCase {
  const char* name;
  std::function<void(SlowInputs&, StoragePathPolicy&)> change;
  bool slow;
  SlowCause cause;
  const char* evidence;  // a piece of the evidence sentence
};

SlowInputs idle_slow_save() {
  SlowInputs in;
  in.io.window = {1000, 1300, WindowSource::kEvents};
  in.io.source = IoSource::kNfs;
  in.io.write_bytes_per_second = 100 * kMiB;
  in.io.metadata_ops_per_second = 50;
  in.io.network_utilisation = 0.1;
  in.io.network_interface = "ib0";
  in.io.interfaces_configured = true;
  in.reference_write_bytes_per_second = 1000 * kMiB;
  in.job_usual_metadata_ops_per_second = 40;
  in.completion_skew_seconds = 10;
  in.slowest_ranks = {7, 3};
  return in;
}

TEST(SlowCauseRule, OneCasePerCause) {
  const std::vector<SlowCase> cases = {
      {"application", [](SlowInputs&, StoragePathPolicy&) {}, true, SlowCause::kApplication,
       "the storage path was idle"},
      {"storage_bandwidth",
       [](SlowInputs& in, StoragePathPolicy&) { in.io.write_bytes_per_second = 850 * kMiB; }, true,
       SlowCause::kStorageBandwidth, "85% of its best observed 1000.0 MiB/s"},
      {"storage_bandwidth at exactly 80 % of a configured bandwidth",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.write_bytes_per_second = 800 * kMiB;
         in.reference_configured = true;
       },
       true, SlowCause::kStorageBandwidth, "80% of its configured write_bandwidth"},
      {"network", [](SlowInputs& in, StoragePathPolicy&) { in.io.network_utilisation = 0.9; }, true,
       SlowCause::kNetwork, "interface ib0 ran at 90% of its link speed"},
      {"metadata over the threshold",
       [](SlowInputs& in, StoragePathPolicy& p) {
         p.metadata_ops_per_second = 100;
         in.io.metadata_ops_per_second = 150;
         in.job_usual_metadata_ops_per_second = 100;  // only 1.5x the usual
       },
       true, SlowCause::kMetadata, "150 metadata operations/s during the window (threshold 100)"},
      {"metadata at 3x the job's usual",
       [](SlowInputs& in, StoragePathPolicy&) { in.io.metadata_ops_per_second = 120; }, true,
       SlowCause::kMetadata, "the job's usual 40"},
      {"straggler", [](SlowInputs& in, StoragePathPolicy&) { in.completion_skew_seconds = 150; },
       true, SlowCause::kStraggler, "150s after the first (50% of the save); slowest ranks: 7, 3"},
      {"skew from shard mtimes is the window itself: unknown",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.window.source = WindowSource::kMtimes;
         in.completion_skew_seconds = 300;
       },
       true, SlowCause::kUnknown, "a save start (only shard mtimes)"},
      {"unknown without tier counters",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.write_bytes_per_second.reset();
         in.io.metadata_ops_per_second.reset();
       },
       true, SlowCause::kUnknown,
       "missing tier write counters or the checkpoint's bytes, metadata counters"},
      {"storage_bandwidth from the checkpoint's own bytes",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.write_bytes_per_second = 900 * kMiB;
         in.io.write_measure = WriteMeasure::kEvents;
         in.io.device_write_bytes_per_second = 2 * kMiB;
         in.io.sampling_interval_seconds = 100;
       },
       true, SlowCause::kStorageBandwidth,
       "900.0 MiB/s during the window (the checkpoint's bytes over its event-log window (the "
       "window is shorter than 5 of the counters' sampling intervals of 100s)), 90%"},
      {"storage_bandwidth with the device's writeback absorbed",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.write_bytes_per_second = 900 * kMiB;
         in.io.write_measure = WriteMeasure::kEvents;
         in.io.device_write_bytes_per_second = 2 * kMiB;
         in.io.absorbed = true;
         in.io.node.dirty_rise_bytes = 3 * kGiB;
       },
       true, SlowCause::kStorageBandwidth,
       "(dirty memory rose by 3.0 GiB: the device counters show writeback, not the save)"},
      {"metadata names the slowest operation",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.metadata_ops_per_second = 120;
         in.io.slowest_op = MetaOp::kGetattr;
         in.io.slowest_op_latency_seconds = 0.04;
       },
       true, SlowCause::kMetadata, "; GETATTR latency 40 ms"},
      {"node_pressure",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.psi_available = true;
         in.io.node.memory_full_share = 0.3;
         in.io.node.io_full_share = 0.05;
         in.io.node.dirty_rise_bytes = 2 * kGiB;
       },
       true, SlowCause::kNodePressure,
       "memory pressure was full for 30% of the window (threshold 10%): every runnable task "
       "stalled on memory reclaim; dirty memory rose by 2.0 GiB"},
      {"node_pressure on I/O at a configured threshold",
       [](SlowInputs& in, StoragePathPolicy& p) {
         in.io.psi_available = true;
         in.io.node.io_full_share = 0.05;
         p.node_pressure_ratio = 0.05;
       },
       true, SlowCause::kNodePressure, "io pressure was full for 5% of the window"},
      {"application with the pressure under its threshold",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.psi_available = true;
         in.io.node.memory_full_share = 0.02;
         in.io.node.io_full_share = 0.01;
       },
       true, SlowCause::kApplication, "node pressure 2%"},
      {"unknown on a kernel with PSI but no samples over the window",
       [](SlowInputs& in, StoragePathPolicy&) { in.io.psi_available = true; }, true,
       SlowCause::kUnknown, "missing node pressure samples"},
      {"application on a kernel without PSI says so", [](SlowInputs&, StoragePathPolicy&) {}, true,
       SlowCause::kApplication, "no pressure stall information on this kernel"},
      {"unknown with an interface configured but not measured",
       [](SlowInputs& in, StoragePathPolicy&) { in.io.network_utilisation.reset(); }, true,
       SlowCause::kUnknown, "missing network counters"},
      {"application without any interface configured",
       [](SlowInputs& in, StoragePathPolicy&) {
         in.io.network_utilisation.reset();
         in.io.interfaces_configured = false;
       },
       true, SlowCause::kApplication, "no interface configured"},
      {"unknown without a reference bandwidth",
       [](SlowInputs& in, StoragePathPolicy&) { in.reference_write_bytes_per_second = 0; }, true,
       SlowCause::kUnknown, "a reference write bandwidth"},
      {"on time", [](SlowInputs& in, StoragePathPolicy&) { in.io.window.end = 1120; }, false,
       SlowCause::kUnknown, ""},
  };
  for (const SlowCase& k : cases) {
    SlowInputs in = idle_slow_save();
    StoragePathPolicy p;
    p.checkpoint_window_seconds = 120;
    k.change(in, p);
    const SlowVerdict v = classify_slow(in, p);
    EXPECT_TRUE(v.judged) << k.name;
    EXPECT_EQ(v.slow, k.slow) << k.name;
    if (!k.slow) continue;
    EXPECT_EQ(v.missed, "checkpoint_window") << k.name;
    EXPECT_EQ(to_string(v.cause), to_string(k.cause)) << k.name;
    EXPECT_NE(v.evidence.find(k.evidence), std::string::npos) << k.name << ": " << v.evidence;
    EXPECT_NE(v.evidence.find("took 300s (limit 120s)"), std::string::npos) << v.evidence;
  }
}

TEST(SlowCauseRule, MedianMultiple) {
  SlowInputs in = idle_slow_save();  // 300 s
  StoragePathPolicy p;
  EXPECT_FALSE(classify_slow(in, p).judged);  // no limit configured
  p.median_multiple = 2;
  EXPECT_FALSE(classify_slow(in, p).judged);  // no median yet
  in.job_median_seconds = 160;                // limit 320 s
  SlowVerdict v = classify_slow(in, p);
  EXPECT_TRUE(v.judged);
  EXPECT_FALSE(v.slow);
  EXPECT_DOUBLE_EQ(v.median_limit_seconds, 320);
  in.job_median_seconds = 100;  // limit 200 s
  v = classify_slow(in, p);
  EXPECT_TRUE(v.slow);
  EXPECT_EQ(v.missed, "median_multiple");
  EXPECT_EQ(v.cause, SlowCause::kApplication);
}

TEST(RestoreEstimate, HundredGibAtTwoGibPerSecond) {
  RestoreInputs in;
  in.bytes = 100 * kGiB;
  in.files = 100;
  in.counter_read_bytes_per_second = 2 * kGiB;
  in.configured_metadata_ops_per_second = 1000;
  auto e = estimate_restore(in);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->read_source, ReadSource::kCounters);
  EXPECT_DOUBLE_EQ(e->transfer_seconds, 50);
  // Metadata term: 100 files x 3 operations / 1000 ops/s = 0.3 s.
  EXPECT_DOUBLE_EQ(e->metadata_seconds, 0.3);
  EXPECT_DOUBLE_EQ(e->seconds, 50.3);
}

// A fresh drill is the restore figure: for the checkpoint it read, the
// drill's own time (2 GiB read in 4 s, 8 files located and opened in 0.4 s).
TEST(RestoreEstimate, AFreshDrillReplacesEverySource) {
  RestoreInputs in;
  in.bytes = 2 * kGiB;
  in.files = 8;
  in.measured_read_bytes_per_second = 4 * kGiB;
  in.counter_read_bytes_per_second = 8 * kGiB;
  in.metadata_latency_seconds = 0.01;
  in.drill_read_bytes_per_second = 2 * kGiB / 4.0;
  in.drill_metadata_seconds_per_file = 0.4 / 8;
  auto e = estimate_restore(in);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->read_source, ReadSource::kDrill);
  EXPECT_EQ(e->metadata_source, MetadataSource::kDrill);
  EXPECT_DOUBLE_EQ(e->transfer_seconds, 4);
  EXPECT_DOUBLE_EQ(e->metadata_seconds, 0.4);
  EXPECT_DOUBLE_EQ(e->seconds, 4.4);
  in.bytes = 4 * kGiB;  // a newer checkpoint twice the size, twice the files
  in.files = 16;
  EXPECT_DOUBLE_EQ(estimate_restore(in)->seconds, 8.8);
  EXPECT_EQ(to_string(ReadSource::kDrill), "drill");
  in.drill_metadata_seconds_per_file.reset();  // half a drill is none
  EXPECT_EQ(estimate_restore(in)->read_source, ReadSource::kRestores);
}

TEST(RestoreEstimate, SourcesInOrderAndUnknownIsNoEstimate) {
  RestoreInputs in;
  in.bytes = 10 * kGiB;
  in.files = 0;
  EXPECT_FALSE(estimate_restore(in));  // nothing known: no estimate, not 0
  in.configured_read_bytes_per_second = 1 * kGiB;
  ASSERT_TRUE(estimate_restore(in));
  EXPECT_EQ(estimate_restore(in)->read_source, ReadSource::kConfigured);
  EXPECT_DOUBLE_EQ(estimate_restore(in)->seconds, 10);
  in.counter_read_bytes_per_second = 2 * kGiB;
  EXPECT_EQ(estimate_restore(in)->read_source, ReadSource::kCounters);
  EXPECT_DOUBLE_EQ(estimate_restore(in)->seconds, 5);
  in.measured_read_bytes_per_second = 4 * kGiB;
  EXPECT_EQ(estimate_restore(in)->read_source, ReadSource::kRestores);
  EXPECT_DOUBLE_EQ(estimate_restore(in)->seconds, 2.5);
  // The counters' metadata rate counts only when above the configured one.
  in.files = 600;
  in.counter_metadata_ops_per_second = 300;  // below 1000: 600 x 3 / 1000 = 1.8 s
  EXPECT_DOUBLE_EQ(estimate_restore(in)->metadata_seconds, 1.8);
  in.counter_metadata_ops_per_second = 3600;  // 600 x 3 / 3600 = 0.5 s
  EXPECT_DOUBLE_EQ(estimate_restore(in)->metadata_seconds, 0.5);
  EXPECT_EQ(estimate_restore(in)->metadata_source, MetadataSource::kRate);
  // A measured mean latency (NFS) wins: 600 files x 3 x 10 ms = 18 s, even
  // with no metadata rate configured.
  in.metadata_latency_seconds = 0.01;
  in.configured_metadata_ops_per_second = 0;
  ASSERT_TRUE(estimate_restore(in));
  EXPECT_EQ(estimate_restore(in)->metadata_source, MetadataSource::kLatency);
  EXPECT_DOUBLE_EQ(estimate_restore(in)->metadata_seconds, 18);
  EXPECT_DOUBLE_EQ(estimate_restore(in)->seconds, 2.5 + 18);
}

// The tracker over a hand-built catalog, events and counters.
struct TrackerFixture {
  std::vector<Checkpoint> cks;
  EventCatalog events;
  IoState io;
  RulesPolicy policy;
  std::set<std::string> tiers{"rapid"};

  void add(std::int64_t step, double start, double commit, double skew = 5) {
    Checkpoint c = Ck("rapid", "llama", step)
                       .committed(static_cast<std::uint64_t>(40 * kGiB), commit - skew, commit);
    c.files = 64;
    cks.push_back(c);
    EventStep& s = events.steps[StepKey{"rapid", "llama", step}];
    s.start_ts = start;
    s.commit_ts = commit;
    s.committed = true;
    s.shards = 64;
    s.first_shard_end = commit - skew;
    s.last_shard_end = commit;
    s.last_rank = 5;
  }
};

TEST(StoragePathTracker, CountsEachSlowCheckpointOnceAndKeepsItsWindow) {
  TrackerFixture f;
  f.io.tiers["rapid"] = block_tier(900 * kMiB, 2 * kGiB, 10, 50);
  f.io.tiers["rapid"].best_written_bytes_per_second = 1000 * kMiB;
  f.io.tiers["rapid"].best_read_bytes_per_second = 2 * kGiB;
  f.policy.tiers["rapid"].storage_path.checkpoint_window_seconds = 120;
  f.policy.tiers["rapid"].storage_path.recovery_time_objective_seconds = 60;
  f.add(1, 1000, 1100);  // on time (100 s)
  f.add(2, 1200, 1500);  // 300 s (6 intervals) at 900 of 1000 MiB/s: storage_bandwidth

  StoragePathTracker t;
  StoragePathFigures out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1600);
  const auto& e = t.checkpoints().at(CheckpointKey{"rapid", "llama/step-2"});
  ASSERT_TRUE(e.io);
  ASSERT_TRUE(e.io->write_bytes_per_second);
  EXPECT_DOUBLE_EQ(*e.io->write_bytes_per_second, 900 * kMiB);
  EXPECT_EQ(e.io->write_measure, WriteMeasure::kDevice);
  ASSERT_TRUE(e.verdict);
  EXPECT_TRUE(e.verdict->slow);
  EXPECT_EQ(e.verdict->cause, SlowCause::kStorageBandwidth);
  EXPECT_FALSE(t.checkpoints().at(CheckpointKey{"rapid", "llama/step-1"}).verdict->slow);
  const SlowCountKey key{"rapid", "llama", SlowCause::kStorageBandwidth};
  EXPECT_EQ(out.slow_counts[key], 1u);
  ASSERT_EQ(out.last_slow.size(), 1u);
  EXPECT_EQ(out.last_slow[0].step, 2);
  EXPECT_TRUE(out.last_slow[0].verdict.slow);

  // Later cycles: counted once; the ring moving on does not forget the window.
  f.io.tiers["rapid"].history.samples.clear();
  out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1700);
  EXPECT_EQ(out.slow_counts[key], 1u);
  EXPECT_DOUBLE_EQ(
      *t.checkpoints().at(CheckpointKey{"rapid", "llama/step-2"}).io->write_bytes_per_second,
      900 * kMiB);

  // Restore: the newest restorable checkpoint, 40 GiB at the counters' 2 GiB/s
  // = 20 s, plus 64 files x 3 / 1000 ops/s = 0.192 s.
  ASSERT_EQ(out.restore.size(), 1u);
  EXPECT_EQ(out.restore[0].step, 2);
  ASSERT_TRUE(out.restore[0].estimate);
  EXPECT_DOUBLE_EQ(out.restore[0].estimate->seconds, 20.192);
  EXPECT_DOUBLE_EQ(out.restore[0].objective_seconds, 60);

  // A measured restore of 40 GiB in 10 s (4 GiB/s) becomes the read rate.
  EventRestores& r = f.events.restores["llama"];
  r.last = RestoreRecord{2, "rapid", 1650, static_cast<std::uint64_t>(40 * kGiB), true, 10.0};
  out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1700);
  ASSERT_EQ(out.measured_restores.size(), 1u);
  EXPECT_DOUBLE_EQ(out.measured_restores[0].bytes_per_second, 4 * kGiB);
  EXPECT_EQ(out.restore[0].estimate->read_source, ReadSource::kRestores);
  EXPECT_DOUBLE_EQ(out.restore[0].estimate->transfer_seconds, 10);

  // A failed verification makes step 1 the newest restorable one.
  Verifications bad{{CheckpointKey{"rapid", "llama/step-2"}, false}};
  out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, bad, f.policy, 1700);
  EXPECT_EQ(out.restore[0].step, 1);

  // The checkpoint leaves the catalog: its entry goes.
  f.cks.pop_back();
  t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1800);
  EXPECT_FALSE(t.checkpoints().contains(CheckpointKey{"rapid", "llama/step-2"}));
}

TEST(StoragePathTracker, WaitsForTheCountersThenSettlesUnknown) {
  TrackerFixture f;
  f.io.tiers["rapid"] = block_tier(100 * kMiB, 0, 10);  // samples 1000..1500
  f.policy.tiers["rapid"].storage_path.checkpoint_window_seconds = 60;
  f.add(1, 1400, 1550);  // ends after the newest sample
  StoragePathTracker t;
  t.set_count_from(2000);  // committed before: judged, not counted
  StoragePathFigures out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1560);
  EXPECT_FALSE(t.checkpoints().at(CheckpointKey{"rapid", "llama/step-1"}).io);
  EXPECT_TRUE(out.last_slow.empty());
  // Past the grace the figures settle as unknown: the cause is unknown.
  out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy,
                 1550 + kWindowIoGraceSeconds + 1);
  const auto& e = t.checkpoints().at(CheckpointKey{"rapid", "llama/step-1"});
  ASSERT_TRUE(e.io);
  // The counters never covered it: the checkpoint's own 40 GiB over 150 s;
  // no reference bandwidth (none observed), so the cause stays unknown.
  EXPECT_FALSE(e.io->device_write_bytes_per_second);
  EXPECT_EQ(e.io->write_measure, WriteMeasure::kEvents);
  EXPECT_DOUBLE_EQ(*e.io->write_bytes_per_second, 40 * kGiB / 150);
  EXPECT_EQ(e.verdict->cause, SlowCause::kUnknown);
  EXPECT_TRUE(out.slow_counts.empty());
  // No read rate anywhere: no restore estimate.
  ASSERT_EQ(out.restore.size(), 1u);
  EXPECT_FALSE(out.restore[0].estimate);
}

TEST(StoragePathTracker, AnEventLogThatArrivesLaterRedatesTheWindowAndCountsOnce) {
  TrackerFixture f;
  f.policy.tiers["rapid"].storage_path.checkpoint_window_seconds = 60;
  f.add(1, 1000, 1300);  // events: a 300 s save; shards 5 s apart
  EventCatalog none;     // the tailer has not read the log yet
  StoragePathTracker t;
  // No I/O source: settled at once, from shard mtimes: 5 s, on time.
  StoragePathFigures out = t.update(f.cks, f.tiers, {}, &none, nullptr, {}, f.policy, 1310);
  const CheckpointKey key{"rapid", "llama/step-1"};
  ASSERT_TRUE(t.checkpoints().at(key).verdict);
  EXPECT_EQ(t.checkpoints().at(key).io->window.source, WindowSource::kMtimes);
  EXPECT_FALSE(t.checkpoints().at(key).verdict->slow);
  // The events arrive: re-judged from their 300 s window, slow, counted once.
  out = t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1320);
  EXPECT_EQ(t.checkpoints().at(key).io->window.source, WindowSource::kEvents);
  EXPECT_TRUE(t.checkpoints().at(key).verdict->slow);
  const SlowCountKey unknown{"rapid", "llama", SlowCause::kUnknown};
  EXPECT_EQ(out.slow_counts[unknown], 1u);
  out = t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1330);
  EXPECT_EQ(out.slow_counts[unknown], 1u);
}

TEST(StoragePathTracker, MeasuredWriteBandwidthOverTheSaveWindows) {
  TrackerFixture f;
  f.io.tiers["rapid"] = block_tier(400 * kMiB, 0, 0, 20);
  f.add(1, 1100, 1200);  // 100 s (5 intervals) at 400 MiB/s
  f.add(2, 1300, 1500);  // 200 s at 400 MiB/s
  f.add(3, 1480, 1500);  // 20 s: one interval, not a device measure, not counted
  StoragePathTracker t;
  StoragePathFigures out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1550);
  ASSERT_TRUE(out.measured_write_bytes_per_second.contains("rapid"));
  // (400 x 100 + 400 x 200) MiB / 300 s.
  EXPECT_DOUBLE_EQ(out.measured_write_bytes_per_second["rapid"], 400 * kMiB);
  EXPECT_EQ(t.checkpoints().at(CheckpointKey{"rapid", "llama/step-1"}).io->write_measure,
            WriteMeasure::kDevice);
  EXPECT_EQ(t.checkpoints().at(CheckpointKey{"rapid", "llama/step-3"}).io->write_measure,
            WriteMeasure::kEvents);
  // Outside the observe window: no measured figure.
  f.policy.tiers["rapid"].bandwidth.observe_window_seconds = 60;
  out = t.update(f.cks, f.tiers, {}, &f.events, &f.io, {}, f.policy, 1600);
  EXPECT_FALSE(out.measured_write_bytes_per_second.contains("rapid"));
}

TEST(StoragePathTracker, ASnapshotIsSharedUntilAnUpdateChangesItAndThenStaysAsItWas) {
  TrackerFixture f;
  f.policy.tiers["rapid"].storage_path.checkpoint_window_seconds = 60;
  f.add(1, 1000, 1030);  // events: a 30 s save, on time
  f.add(2, 1100, 1130);
  StoragePathTracker t;
  t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1200);
  const auto first = t.snapshot();
  ASSERT_EQ(first->size(), 2u);
  // The snapshot is the tracker's map itself, not a copy of it.
  EXPECT_EQ(first.get(), &t.checkpoints());

  // Nothing new: the same map, shared again.
  t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1210);
  EXPECT_EQ(t.snapshot().get(), first.get());

  // A new checkpoint and one gone: the tracker changes a copy; the published
  // snapshot keeps what it held.
  f.add(3, 1200, 1290);  // 90 s: slow
  f.cks.erase(f.cks.begin());
  t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1300);
  EXPECT_NE(&t.checkpoints(), first.get());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_TRUE(first->contains(CheckpointKey{"rapid", "llama/step-1"}));
  EXPECT_FALSE(first->contains(CheckpointKey{"rapid", "llama/step-3"}));
  const auto second = t.snapshot();
  ASSERT_EQ(second->size(), 2u);
  EXPECT_FALSE(second->contains(CheckpointKey{"rapid", "llama/step-1"}));
  ASSERT_TRUE(second->at(CheckpointKey{"rapid", "llama/step-3"}).verdict);
  EXPECT_TRUE(second->at(CheckpointKey{"rapid", "llama/step-3"}).verdict->slow);
  EXPECT_EQ(second->at(CheckpointKey{"rapid", "llama/step-3"}).job, "llama");

  // A checkpoint no longer committed leaves too, without a new one coming.
  f.cks.back().state = CkptState::kPartial;
  t.update(f.cks, f.tiers, {}, &f.events, nullptr, {}, f.policy, 1310);
  EXPECT_EQ(second->size(), 2u);
  EXPECT_EQ(t.checkpoints().size(), 1u);
  EXPECT_TRUE(t.checkpoints().contains(CheckpointKey{"rapid", "llama/step-2"}));
}

}  // namespace
}  // namespace ckptmon
