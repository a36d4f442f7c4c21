#pragma once
// Parsers of the kernel's storage-path counters, pure functions on text
// (tested on fixture captures): /proc/diskstats, /proc/self/mountstats (NFS),
// Lustre llite `stats`, and the link-speed files of net and InfiniBand ports.
// Raw counters are returned as the kernel shows them; collectors/tier_io.cpp
// turns them into monotone running totals.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/io.hpp"

namespace ckptmon {

// One /proc/diskstats line. Every kernel format is accepted: 14 fields
// (2.6.25+), 18 (4.18+, discards), 20 (5.5+, flushes), and the 7-field
// partition lines of kernels before 2.6.25. Sectors are 512 bytes whatever
// the device's logical block size.
struct DiskStatsLine {
  unsigned major = 0;
  unsigned minor = 0;
  std::string name;
  std::uint64_t reads = 0;
  std::uint64_t sectors_read = 0;
  std::uint64_t writes = 0;
  std::uint64_t sectors_written = 0;
  // Fields 9 to 11 (lines of 14 fields or more): I/Os in flight, ms busy,
  // ms weighted by the I/Os in flight. Absent from 7-field partition lines.
  std::optional<std::uint64_t> in_flight, io_ms, weighted_io_ms;
  int fields = 0;  // how many the line had
};

struct DiskStatsParse {
  std::vector<DiskStatsLine> lines;
  // Lines with another field count or a non-number where a counter goes;
  // the first one's text is in `first_error`.
  int bad_lines = 0;
  std::string first_error;
};
DiskStatsParse parse_diskstats(std::string_view text);

// One NFS mount's block of /proc/self/mountstats.
struct NfsMountStats {
  std::string device;       // "server:/export"
  std::string mount_point;  // octal escapes decoded
  std::string fstype;       // nfs, nfs4
  std::string statvers;     // "1.0", "1.1"
  bool ok = false;
  std::string error;  // why the block was rejected, when !ok
  // read_bytes / written_bytes: the `bytes:` line's server read and write
  // bytes (what went over the wire, buffered and O_DIRECT alike);
  // metadata_ops: the `per-op statistics` counts mapped by nfs_meta_op(),
  // metadata_seconds their cumulative execute time (ms in the file).
  IoCounters raw;
  // Per MetaOp: the cumulative RTT (seconds) and retransmissions
  // (transmissions less operations) of the per-op statistics.
  std::array<double, kMetaOpCount> rtt_seconds{}, retransmissions{};
  // The application-side figures of the `bytes:` line, for reference.
  std::uint64_t normal_read_bytes = 0, normal_write_bytes = 0;
  std::uint64_t direct_read_bytes = 0, direct_write_bytes = 0;
};

struct MountstatsParse {
  std::vector<NfsMountStats> nfs;  // every NFS block, rejected ones with ok=false
  int errors = 0;                  // rejected NFS blocks
};
// Blocks of other file systems ("device sda1 mounted on / with fstype ext4")
// are skipped. An NFS block with a statvers other than 1.0 or 1.1, or one that
// is cut off (no `bytes:` line, no per-op section, a line short of its
// fields, the file ending inside it) is rejected and counted.
MountstatsParse parse_mountstats(std::string_view text);

// Which MetaOp an NFS (v3 or v4) operation of the per-op statistics counts
// as; nullopt for data and session operations (READ, WRITE, NULL, SEQUENCE,
// RENEW...) that are not metadata.
std::optional<MetaOp> nfs_meta_op(std::string_view op);

// A Lustre llite `stats` file (lprocfs format: a snapshot_time line, then
// `name count samples [unit] [min max sum [sumsq]]`).
struct LliteStats {
  bool ok = false;
  std::string error;
  // read_bytes / write_bytes sums; metadata operations: the counts of the
  // metadata RPC counters only (classify_llite_counter), getxattr less
  // getxattr_hits.
  IoCounters raw;
  // Counters this ckptmon does not know (a newer Lustre): kept out of every
  // figure; the collector logs them once. At most kMaxUnknown, clipped.
  std::vector<std::string> unknown_counters;
  static constexpr std::size_t kMaxUnknown = 32;
};
LliteStats parse_llite_stats(std::string_view text);

// What a Lustre llite stats counter counts, as Lustre's llite code defines
// it: calls that become metadata RPCs to the MDS (with the MetaOp they are
// exported as), calls answered on the client (permission checks, cache hits,
// per-file statistics), or the I/O path. nullopt: a counter not known here.
enum class LliteKind : std::uint8_t { kMetadataRpc, kLocal, kIo };
struct LliteCounter {
  LliteKind kind = LliteKind::kIo;
  MetaOp op = MetaOp::kOther;  // for kMetadataRpc
};
std::optional<LliteCounter> classify_llite_counter(std::string_view name);

// One /proc/pressure/<resource> file (PSI): "some avg10=0.00 avg60=0.00
// avg300=0.00 total=N" and (memory, io; cpu from 5.13) a "full" line; totals
// in microseconds. A line missing is nullopt, never 0; ok false with `error`
// when a line is neither.
struct PsiParse {
  bool ok = false;
  std::string error;
  std::optional<std::uint64_t> some_total_us, full_total_us;
};
PsiParse parse_psi(std::string_view text);

// /proc/meminfo's MemAvailable, Dirty and Writeback ("Dirty:  148 kB"), in
// bytes; a line missing (an old kernel, a container's meminfo) is nullopt.
// ok false with `error` when no line has the meminfo form.
struct MeminfoParse {
  bool ok = false;
  std::string error;
  std::optional<double> available_bytes, dirty_bytes, writeback_bytes;
};
MeminfoParse parse_meminfo(std::string_view text);

// /sys/class/net/<if>/speed: Mb/s. nullopt for -1 (no link, or a driver that
// does not know), 0, or anything that is not a number.
std::optional<double> parse_net_speed_bytes_per_second(std::string_view text);

// /sys/class/infiniband/<hca>/ports/<n>/rate: "100 Gb/sec (4X EDR)".
std::optional<double> parse_ib_rate_bytes_per_second(std::string_view text);

// A decimal counter file (rx_bytes, port_rcv_data): one unsigned number and
// an optional newline.
std::optional<std::uint64_t> parse_counter_file(std::string_view text);

// The Lustre file-system name of a mount source: "10.0.0.1@o2ib:/scratch" and
// "mgs1@tcp:mgs2@tcp:/scratch/sub" give "scratch"; empty when not Lustre-like.
std::string lustre_fsname(std::string_view mount_source);

}  // namespace ckptmon
