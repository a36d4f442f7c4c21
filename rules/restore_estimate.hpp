#pragma once
// How long restoring a job's newest restorable checkpoint from a tier would
// take (docs/rules.md, "Restore estimate"):
//   transfer  = bytes / read throughput, where the read throughput is the
//               best measured restore from the tier (restore_start ..
//               restore_done events), else the best read rate the tier's
//               counters showed over one sampling interval, else the
//               configured read_bandwidth;
//   metadata  = files x kRestoreOpsPerFile x the mean latency of a metadata
//               operation where the tier's counters measure it (NFS per-op
//               execute time: one client issuing them in turn, as a reader
//               opening its files one after another does), else
//               files x kRestoreOpsPerFile / metadata rate, where the rate
//               is the best the tier's counters showed over one sampling
//               interval or the configured restore_metadata_ops_per_second,
//               whichever is higher;
//   estimate  = transfer + metadata.
// A fresh scheduled restore drill of the job on the tier replaces both
// terms' sources: transfer = bytes / the drill's read rate, metadata = files
// x the drill's locate and metadata seconds per file it opened; for the
// checkpoint the drill read, that is the drill's own time.
// No read throughput known: no estimate (never 0). Pure; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ckptmon {

// open, stat and close of every file a restore reads.
inline constexpr double kRestoreOpsPerFile = 3;

enum class ReadSource : std::uint8_t { kRestores, kCounters, kConfigured, kDrill };
std::string_view to_string(ReadSource s);

struct RestoreInputs {
  double bytes = 0;
  double files = 0;
  std::optional<double> measured_read_bytes_per_second;  // best measured restore
  std::optional<double> counter_read_bytes_per_second;   // best over one interval
  double configured_read_bytes_per_second = 0;           // 0 = none
  std::optional<double> counter_metadata_ops_per_second;
  double configured_metadata_ops_per_second = 1000;
  // Mean seconds per metadata operation the tier's counters measured.
  std::optional<double> metadata_latency_seconds;
  // A fresh restore drill's read rate and (locate + metadata) seconds per
  // file opened; both set or neither.
  std::optional<double> drill_read_bytes_per_second;
  std::optional<double> drill_metadata_seconds_per_file;
};

enum class MetadataSource : std::uint8_t { kLatency, kRate, kDrill };
std::string_view to_string(MetadataSource s);

struct RestoreEstimate {
  double read_bytes_per_second = 0;
  ReadSource read_source = ReadSource::kConfigured;
  double metadata_ops_per_second = 0;  // kRate: the rate used
  double transfer_seconds = 0;
  double metadata_seconds = 0;
  double seconds = 0;  // transfer + metadata
  MetadataSource metadata_source = MetadataSource::kRate;
  double metadata_latency_seconds = 0;  // kLatency: the mean latency used; kDrill: per file
};

std::optional<RestoreEstimate> estimate_restore(const RestoreInputs& in);

}  // namespace ckptmon
