#pragma once
// What the storage path carried while one checkpoint was saved: its save
// window (from the event log, else the save interval a manifest states, else
// first to last shard mtime) and, over that window, the tier's write
// throughput and metadata operations per second, the utilisation of the
// busiest configured network interface, and the node's memory and I/O
// pressure and dirty memory, from the counters of State::io.
// Unknown figures stay nullopt, never 0. Pure functions; thread-safe.
//
// The write throughput is one of two measures (WindowIo::write_measure):
//   device   the tier's counters over the samples that bracket the window,
//            used only when the window spans at least kDeviceWindowIntervals
//            sampling intervals (shorter, the counters' rate is mostly other
//            time) and the write was not absorbed by dirty memory (the
//            node's Dirty + Writeback rose by at least kAbsorbedShare of the
//            checkpoint's bytes, or the counters saw less than that share of
//            them): block counters show the kernel's writeback, not the
//            checkpoint's writes;
//   events, manifest, mtimes
//            otherwise, the checkpoint's bytes over its save window, named by
//            the window's source.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "model/checkpoint.hpp"
#include "model/events.hpp"
#include "model/io.hpp"

namespace ckptmon {

enum class WindowSource : std::uint8_t {
  kEvents,    // checkpoint_start .. checkpoint_commit of the event log
  kManifest,  // save_start .. save_end a framework manifest states
  kMtimes,    // first .. last shard mtime: the real start is unknown
};
std::string_view to_string(WindowSource s);

struct SaveWindow {
  double start = 0;
  double end = 0;
  WindowSource source = WindowSource::kMtimes;
  double duration() const { return end - start; }
};

// The save window of `c`; `ev` is its event-log step, may be null. nullopt
// when nothing dates the save.
std::optional<SaveWindow> save_window(const Checkpoint& c, const EventStep* ev);

// The device measure needs a window of at least this many sampling intervals.
inline constexpr double kDeviceWindowIntervals = 5;
// Dirty memory absorbed the write when it rose by this share of the
// checkpoint's bytes, or the counters saw less than this share of them.
inline constexpr double kAbsorbedShare = 0.5;

enum class WriteMeasure : std::uint8_t { kDevice, kEvents, kManifest, kMtimes };
std::string_view to_string(WriteMeasure m);

struct WindowIo {
  SaveWindow window;
  IoSource source = IoSource::kNone;  // of the tier's counters
  // The write throughput the rules judge, and which measure it is.
  std::optional<double> write_bytes_per_second;
  WriteMeasure write_measure = WriteMeasure::kMtimes;
  // The tier's counters over the bracketing samples (nullopt when they do
  // not cover the window), the span's mean sampling interval, and whether
  // dirty memory absorbed the write (see above).
  std::optional<double> device_write_bytes_per_second;
  double sampling_interval_seconds = 0;  // 0 = unknown
  bool absorbed = false;
  std::optional<double> metadata_ops_per_second;
  // max over the interfaces with a known figure of max(rx, tx) / link speed.
  std::optional<double> network_utilisation;
  std::string network_interface;  // the interface of network_utilisation
  // Whether any interface is configured (State::io lists it): without one,
  // the network cannot be judged, and is not needed to be.
  bool interfaces_configured = false;
  // The metadata operation with the highest mean latency over the window
  // (NFS execute time / operations).
  std::optional<double> slowest_op_latency_seconds;
  MetaOp slowest_op = MetaOp::kOther;
  // The node over the window: full memory and I/O pressure, dirty memory's rise.
  NodeWindow node;
  // Whether the kernel keeps pressure stall information: without it the
  // pressure cannot be judged (said in the verdict), and is not waited for.
  bool psi_available = false;
};

// The figures over `w` of a checkpoint of `bytes` (0 = unknown). `tier` and
// `node` may be null (no I/O source, or not collected yet).
WindowIo window_io(const SaveWindow& w, double bytes, const TierIo* tier,
                   const std::map<std::string, NetInterfaceIo>& interfaces, const NodeIo* node);

// Whether the counters can still come to cover `w`: false once the oldest
// sample kept is after its start (the ring moved on) or there is no source.
bool window_io_coverable(const SaveWindow& w, const TierIo* tier);

// Whether the node's samples bracket `w`, and whether they still can: false
// once the oldest sample kept is after its start, or there is none.
bool node_window_covered(const SaveWindow& w, const NodeIo& node);
bool node_window_coverable(const SaveWindow& w, const NodeIo& node);

// The highest metadata rate between two consecutive samples of `h`
// (operations per second); nullopt with fewer than two samples.
std::optional<double> best_metadata_rate(const IoHistory& h);

}  // namespace ckptmon
