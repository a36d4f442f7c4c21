#pragma once
// What the storage path carried while one checkpoint was saved: its save
// window (from the event log, else the save interval a manifest states, else
// first to last shard mtime) and, over that window, the tier's write
// throughput and metadata operations per second and the utilisation of the
// busiest configured network interface, from the counters of State::io.
// Unknown figures stay nullopt, never 0. Pure functions; thread-safe.

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

struct WindowIo {
  SaveWindow window;
  IoSource source = IoSource::kNone;  // of the tier's counters
  std::optional<double> write_bytes_per_second;
  std::optional<double> metadata_ops_per_second;
  // max over the interfaces with a known figure of max(rx, tx) / link speed.
  std::optional<double> network_utilisation;
  std::string network_interface;  // the interface of network_utilisation
  // Whether any interface is configured (State::io lists it): without one,
  // the network cannot be judged, and is not needed to be.
  bool interfaces_configured = false;
};

// The figures over `w`. `tier` may be null (no I/O source, or not collected yet).
WindowIo window_io(const SaveWindow& w, const TierIo* tier,
                   const std::map<std::string, NetInterfaceIo>& interfaces);

// Whether the counters can still come to cover `w`: false once the oldest
// sample kept is after its start (the ring moved on) or there is no source.
bool window_io_coverable(const SaveWindow& w, const TierIo* tier);

// The highest metadata rate between two consecutive samples of `h`
// (operations per second); nullopt with fewer than two samples.
std::optional<double> best_metadata_rate(const IoHistory& h);

}  // namespace ckptmon
