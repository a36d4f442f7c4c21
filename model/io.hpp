#pragma once
// What the storage path carried: per tier the I/O counters of the source that
// fits its file system (block device, NFS mount, Lustre llite instance), and
// per configured network interface its byte counters and link speed.
// Filled by collectors/tier_io.cpp, read by the rules (slow-checkpoint cause,
// restore estimate) and the exporter. Published to State as an immutable
// snapshot; plain data, not thread-safe by itself.
//
// Counters here are ckptmon's own running totals: the collector adds each
// non-negative delta of the raw kernel counter, and a raw counter that goes
// backwards (device replaced, module reloaded, 32-bit wrap) counts as a reset,
// never as a negative rate. So every series in `history` is monotone.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckptmon {

enum class IoSource : std::uint8_t { kNone, kBlock, kNfs, kLustre };
inline std::string_view to_string(IoSource s) {
  switch (s) {
    case IoSource::kBlock:
      return "block";
    case IoSource::kNfs:
      return "nfs";
    case IoSource::kLustre:
      return "lustre";
    case IoSource::kNone:
      break;
  }
  return "none";
}

// The fixed set of metadata operation names exported as the `op` label; any
// other operation a source reports is summed into "other".
enum class MetaOp : std::uint8_t {
  kOpen,
  kClose,
  kCreate,
  kGetattr,
  kSetattr,
  kLookup,
  kReaddir,
  kRemove,
  kRename,
  kMkdir,
  kCommit,  // NFS COMMIT, fsync on Lustre
  kOther,
};
inline constexpr std::size_t kMetaOpCount = 12;
inline constexpr std::array<std::string_view, kMetaOpCount> kMetaOpNames = {
    "open",    "close",  "create", "getattr", "setattr", "lookup",
    "readdir", "remove", "rename", "mkdir",   "commit",  "other"};
inline std::string_view to_string(MetaOp op) { return kMetaOpNames[static_cast<std::size_t>(op)]; }

// Cumulative counters (running totals, see above).
struct IoCounters {
  double read_bytes = 0;
  double written_bytes = 0;
  // Block devices: diskstats fields 10 and 11 (Documentation/admin-guide/
  // iostats.rst), seconds the devices were busy and the request time
  // weighted by the requests in flight, summed over the member devices.
  double device_busy_seconds = 0;
  double device_weighted_seconds = 0;
  std::array<double, kMetaOpCount> metadata_ops{};  // indexed by MetaOp
  // NFS: the per-op statistics' cumulative execute time (queue + RTT, from
  // the RPC's start to its reply) of each MetaOp, in seconds; 0 elsewhere
  // (TierIo::has_metadata_seconds says whether they are figures).
  std::array<double, kMetaOpCount> metadata_seconds{};
  double metadata_total() const {
    double s = 0;
    for (double v : metadata_ops) s += v;
    return s;
  }
};

struct IoSample {
  double time = 0;  // unix seconds the counters were read
  IoCounters counters;
};

// Rates over a time window, from the samples that bracket it.
struct IoRates {
  double start = 0, end = 0;  // the span actually covered by samples
  double read_bytes_per_second = 0;
  double written_bytes_per_second = 0;
  double metadata_ops_per_second = 0;
  std::size_t intervals = 0;  // sampling intervals the span covers
  double written_bytes = 0;   // over the span
  // Per MetaOp over the span: operations, and their execute seconds (NFS).
  std::array<double, kMetaOpCount> op_count{}, op_seconds{};
};

// The samples that bracket [start, end] in a time-ordered ring: the last at
// or before `start` and the first at or after `end` (binary searches: the
// rules ask this for every checkpoint). Both end() when the ring does not
// reach both ends or they are the same sample.
template <typename Ring>
std::pair<typename Ring::const_iterator, typename Ring::const_iterator> bracket_at(const Ring& ring,
                                                                                   double start,
                                                                                   double end) {
  using Sample = typename Ring::value_type;
  auto after_start = std::upper_bound(ring.begin(), ring.end(), start,
                                      [](double t, const Sample& s) { return t < s.time; });
  auto at_end = std::lower_bound(ring.begin(), ring.end(), end,
                                 [](const Sample& s, double t) { return s.time < t; });
  if (after_start == ring.begin() || at_end == ring.end()) return {ring.end(), ring.end()};
  auto a = std::prev(after_start);
  if (at_end->time <= a->time) return {ring.end(), ring.end()};
  return {a, at_end};
}

// bracket_at() as pointers; both null when it finds none.
template <typename Ring>
std::pair<const typename Ring::value_type*, const typename Ring::value_type*> bracket(
    const Ring& ring, double start, double end) {
  auto [a, b] = bracket_at(ring, start, end);
  if (a == ring.end()) return {nullptr, nullptr};
  return {&*a, &*b};
}

// Bounded ring of samples in time order (oldest first).
struct IoHistory {
  std::deque<IoSample> samples;
  std::size_t capacity = 4096;

  void add(const IoSample& s) {
    if (!samples.empty() && s.time <= samples.back().time) return;  // clock stepped back
    samples.push_back(s);
    while (samples.size() > capacity) samples.pop_front();
  }

  // Rates over [start, end]: from the last sample at or before `start` to the
  // first at or after `end`. Unknown (nullopt) when the samples do not reach
  // both ends of the window, or the span is empty.
  std::optional<IoRates> rates(double start, double end) const {
    if (end < start) return std::nullopt;
    auto [a, b] = bracket_at(samples, start, end);
    if (a == samples.end()) return std::nullopt;
    const double dt = b->time - a->time;
    IoRates r;
    r.start = a->time;
    r.end = b->time;
    r.read_bytes_per_second = (b->counters.read_bytes - a->counters.read_bytes) / dt;
    r.written_bytes_per_second = (b->counters.written_bytes - a->counters.written_bytes) / dt;
    r.metadata_ops_per_second = (b->counters.metadata_total() - a->counters.metadata_total()) / dt;
    r.intervals = static_cast<std::size_t>(b - a);
    r.written_bytes = b->counters.written_bytes - a->counters.written_bytes;
    for (std::size_t i = 0; i < kMetaOpCount; ++i) {
      r.op_count[i] = b->counters.metadata_ops[i] - a->counters.metadata_ops[i];
      r.op_seconds[i] = b->counters.metadata_seconds[i] - a->counters.metadata_seconds[i];
    }
    return r;
  }
};

struct TierIo {
  IoSource source = IoSource::kNone;
  // What was read: block device names after following dm/md holders down to
  // their members ("sda", "nvme0n1"), the NFS mount's export, or the llite
  // instance name.
  std::vector<std::string> devices;
  // Other tiers whose counters come from the same device or mount: they share
  // these numbers (exported in ckpt_tier_io_source_info).
  std::vector<std::string> shared_with;
  bool ok = false;    // the last read succeeded
  std::string error;  // why not, when !ok (source none is not an error)
  bool has_totals = false;
  IoCounters totals;  // running totals, exported as counters
  IoHistory history;
  // Best observed rates over one sampling interval since start (bytes/s);
  // 0 = none seen yet.
  double best_read_bytes_per_second = 0;
  double best_written_bytes_per_second = 0;
  // False for block devices: the block layer counts no metadata operations
  // (unknown, not zero), so `totals.metadata_ops` stay 0 and are not exported.
  bool has_metadata_ops = false;
  // NFS: totals.metadata_seconds are figures, and so are the per-op RTT and
  // retransmissions below (running totals like `totals`, not in `history`:
  // the rules need only the execute time over a window).
  bool has_metadata_seconds = false;
  std::array<double, kMetaOpCount> metadata_rtt_seconds{}, metadata_retransmissions{};
  // Block devices whose diskstats lines have the time fields: the device
  // times in `totals` are figures, and the requests in flight (diskstats
  // field 9, summed over the members) at the last read.
  bool has_device_times = false;
  std::optional<double> device_in_flight;
  // The collector's bookkeeping: the last raw kernel counters, and how many
  // resets (a raw counter went backwards) and failed reads it met.
  bool has_raw = false;
  IoCounters last_raw;
  std::array<double, kMetaOpCount> last_raw_rtt{}, last_raw_retransmissions{};
  std::uint64_t resets = 0;
  std::uint64_t errors = 0;
};

struct NetSample {
  double time = 0;
  double receive_bytes = 0;  // running totals
  double transmit_bytes = 0;
};

struct NetInterfaceIo {
  std::string name;
  bool ok = false;
  std::string error;
  bool has_totals = false;
  double receive_bytes = 0;  // running totals, exported as counters
  double transmit_bytes = 0;
  // Link speed in bytes per second; unknown when the driver says -1 or the
  // file is missing.
  std::optional<double> link_speed_bytes_per_second;
  std::deque<NetSample> history;  // bounded like IoHistory
  std::size_t capacity = 4096;
  bool infiniband = false;  // counters from an InfiniBand port
  // The collector's bookkeeping, as in TierIo.
  bool has_raw = false;
  double last_raw_receive = 0, last_raw_transmit = 0;
  std::uint64_t resets = 0;
  std::uint64_t errors = 0;

  // max(rx, tx) bytes/s over [start, end] divided by the link speed; unknown
  // when the samples do not cover the window or the speed is unknown.
  std::optional<double> utilisation(double start, double end) const {
    if (!link_speed_bytes_per_second || *link_speed_bytes_per_second <= 0) return std::nullopt;
    if (end < start) return std::nullopt;
    auto [a, b] = bracket(history, start, end);
    if (a == nullptr) return std::nullopt;
    const double dt = b->time - a->time;
    const double rx = (b->receive_bytes - a->receive_bytes) / dt;
    const double tx = (b->transmit_bytes - a->transmit_bytes) / dt;
    return (rx > tx ? rx : tx) / *link_speed_bytes_per_second;
  }
};

// The node's memory and pressure stall information (collectors/
// node_pressure.hpp), each unknown (nullopt) until read, and while the
// kernel does not provide it.
enum class PressureResource : std::uint8_t { kMemory, kIo, kCpu };
inline constexpr std::array<std::string_view, 3> kPressureResourceNames = {"memory", "io", "cpu"};
struct NodeSample {
  double time = 0;  // unix seconds
  // PSI `full` totals (seconds) of memory and io; Dirty + Writeback (bytes).
  std::optional<double> memory_full_seconds, io_full_seconds, dirty_bytes;
};

// What the node's samples say over a window (NodeIo::over), each unknown
// when the samples do not bracket it or the kernel does not provide it.
struct NodeWindow {
  // Share of the span that all non-idle tasks stalled on memory or on I/O.
  std::optional<double> memory_full_share, io_full_share;
  // Dirty + Writeback at the end of the span less at its start (may be < 0).
  std::optional<double> dirty_rise_bytes;
};

struct NodeIo {
  // Cumulative stall seconds (PSI totals): [resource][0 some, 1 full].
  std::array<std::array<std::optional<double>, 2>, 3> pressure_seconds{};
  std::optional<double> memory_available_bytes, memory_dirty_bytes, memory_writeback_bytes;
  // Whether the kernel keeps pressure stall information (false: psi=0 or a
  // kernel before 4.20; the pressure is not known and cannot be).
  bool psi_available = false;
  std::deque<NodeSample> history;  // bounded like IoHistory
  std::size_t capacity = 4096;

  void add(const NodeSample& s) {
    if (!history.empty() && s.time <= history.back().time) return;
    history.push_back(s);
    while (history.size() > capacity) history.pop_front();
  }

  NodeWindow over(double start, double end) const {
    NodeWindow w;
    if (end < start) return w;
    auto [a, b] = bracket(history, start, end);
    if (a == nullptr) return w;
    const double dt = b->time - a->time;
    auto share = [dt](const std::optional<double>& x, const std::optional<double>& y) {
      return x && y && *y >= *x ? std::optional<double>((*y - *x) / dt) : std::nullopt;
    };
    w.memory_full_share = share(a->memory_full_seconds, b->memory_full_seconds);
    w.io_full_share = share(a->io_full_seconds, b->io_full_seconds);
    if (a->dirty_bytes && b->dirty_bytes) w.dirty_rise_bytes = *b->dirty_bytes - *a->dirty_bytes;
    return w;
  }
};

struct IoState {
  std::map<std::string, TierIo> tiers;               // by tier name
  std::map<std::string, NetInterfaceIo> interfaces;  // by interface name
  NodeIo node;
  // Failed reads or parses of any source (tier or interface), and counter
  // resets, since start: ckptmon_io_read_errors_total, ckptmon_io_resets_total.
  std::uint64_t read_errors = 0;
  std::uint64_t counter_resets = 0;
};

}  // namespace ckptmon
