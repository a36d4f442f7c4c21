#pragma once
// Why a checkpoint was slow (docs/rules.md, "The storage path"): a checkpoint
// whose save took longer than its checkpoint_window, or than a multiple of
// its job's median save duration, gets one cause from a fixed set, tried in
// this order:
//   storage_bandwidth  write throughput during the window (the tier's
//                      counters, or the checkpoint's bytes over its window:
//                      WindowIo::write_measure) >= saturation ratio x the
//                      tier's write_bandwidth (configured) or best observed
//                      rate;
//   network            a configured interface >= saturation ratio x its link speed;
//   metadata           metadata ops/s >= the configured threshold, or >=
//                      metadata_multiple x the job's usual;
//   straggler          completion skew >= straggler_skew_ratio x the duration
//                      (needs a save window that does not come from shard
//                      mtimes: there the skew is the window);
//   node_pressure      the node's full memory or I/O pressure (PSI) over the
//                      window >= node_pressure_ratio of it: every runnable
//                      task of the node stalled that share of the time;
//   application        none of these, with every one of them known: the
//                      storage path was idle while the save was slow;
//   unknown            not enough data to say.
// Pure; thread-safe.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/policy.hpp"
#include "rules/window_io.hpp"

namespace ckptmon {

enum class SlowCause : std::uint8_t {
  kStorageBandwidth,
  kNetwork,
  kMetadata,
  kStraggler,
  kNodePressure,
  kApplication,
  kUnknown,
};
inline constexpr std::size_t kSlowCauseCount = 7;
inline constexpr std::array<std::string_view, kSlowCauseCount> kSlowCauseNames = {
    "storage_bandwidth", "network",     "metadata", "straggler",
    "node_pressure",     "application", "unknown"};
inline std::string_view to_string(SlowCause c) {
  return kSlowCauseNames[static_cast<std::size_t>(c)];
}

// The median needs this many other checkpoints of the job on the tier.
inline constexpr std::size_t kSlowMedianMinCheckpoints = 3;

struct SlowInputs {
  WindowIo io;  // window, throughput, metadata, network
  // The job's median save duration on the tier over its other checkpoints;
  // nullopt with fewer than kSlowMedianMinCheckpoints.
  std::optional<double> job_median_seconds;
  // Reference write rate of the tier (bytes/s): the configured write_bandwidth,
  // else the best observed; 0 = unknown.
  double reference_write_bytes_per_second = 0;
  bool reference_configured = false;
  // The job's usual metadata ops/s (median over its other checkpoints).
  std::optional<double> job_usual_metadata_ops_per_second;
  // Last shard end minus first shard end, from events (or mtimes).
  std::optional<double> completion_skew_seconds;
  // Ranks whose shard ended last: this checkpoint's, then the job's most frequent.
  std::vector<std::int64_t> slowest_ranks;
};

struct SlowVerdict {
  double duration_seconds = 0;
  // The limits the duration was compared with (0 = none).
  double window_seconds = 0;
  double median_limit_seconds = 0;
  bool judged = false;  // some limit applies
  bool slow = false;
  std::string missed;  // "checkpoint_window" or "median_multiple" (the first exceeded)
  SlowCause cause = SlowCause::kUnknown;  // meaningful when slow
  // The figures behind the cause, as compared.
  std::optional<double> write_ratio;  // write throughput / reference
  std::optional<double> skew_ratio;   // skew / duration
  // The higher of the full memory and I/O pressure shares, and which.
  std::optional<double> pressure_share;
  std::string pressure_resource;
  std::string evidence;  // one sentence for humans
};

SlowVerdict classify_slow(const SlowInputs& in, const StoragePathPolicy& policy);

}  // namespace ckptmon
