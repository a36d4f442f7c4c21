#pragma once
// What the daemon's scheduled restore drills found (collectors/
// drill_collector.hpp runs them; docs/rules.md "Restore drills"): the last
// drill of each (tier, job), kept in the state database, and what the
// scheduler did per tier. Plain data; published as an immutable snapshot.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ckptmon {

// One drill that read (or tried to read) a checkpoint back.
struct DrillRecord {
  std::string tier;
  std::string job;
  std::string path;       // tier-relative checkpoint directory
  std::string framework;  // the layout's name
  std::int64_t step = -1;
  double finished_at = 0;  // unix seconds
  // Empty: every byte was read. Else the file and why (an unreadable or
  // vanished shard, a short read, the deadline).
  std::string failure;
  std::optional<double> objective_seconds;  // the job's recovery_time_objective
  double locate_seconds = 0;
  double metadata_seconds = 0;
  double read_seconds = 0;
  std::uint64_t bytes = 0;  // read
  std::uint64_t files = 0;  // opened
  std::uint64_t reader_ranks = 0;
  std::uint64_t writer_ranks = 0;  // 0: the names do not tell
  bool cold = false;               // pages dropped first
  bool planned = false;            // the reads were DCP's reshard plan

  double total_seconds() const { return locate_seconds + metadata_seconds + read_seconds; }
  bool read_ok() const { return failure.empty(); }
  bool over_objective() const {
    return objective_seconds && *objective_seconds > 0 && total_seconds() > *objective_seconds;
  }
  // Read it all, within the objective where one is set.
  bool ok() const { return read_ok() && !over_objective(); }
  // Bytes over the read phase; nullopt when nothing was read.
  std::optional<double> read_bytes_per_second() const {
    if (read_seconds <= 0 || bytes == 0) return std::nullopt;
    return static_cast<double>(bytes) / read_seconds;
  }
};

// What the scheduler did on one tier since the daemon started.
struct TierDrillCounts {
  std::uint64_t ok = 0;       // drills that read it all within the objective
  std::uint64_t failed = 0;   // drills that could not read it all, or were over the objective
  std::uint64_t refused = 0;  // refused up front (nothing read): the rate cap cannot finish in
                              // time, or nothing to read
  std::uint64_t deferred_saving = 0;  // due, but the job was saving
  std::string last_refusal;           // why the newest refusal
};

struct DrillState {
  bool loaded = false;  // the stored drills have been read back
  std::map<std::pair<std::string, std::string>, DrillRecord> last;  // by (tier, job)
  // When a drill of (tier, job) was last refused up front: it is due again
  // `every` later, like a drill that ran.
  std::map<std::pair<std::string, std::string>, double> refused_at;
  std::map<std::string, TierDrillCounts> tiers;
};

}  // namespace ckptmon
