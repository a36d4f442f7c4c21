#pragma once
// A restore drill: reads a tier's committed checkpoint back as its ranks
// would and times it, phase by phase. The engine behind `ckptmon
// restore-drill` (tools/review/restore_drill.hpp, its output) and the
// daemon's scheduled drills (serve/restore_drills.hpp).
//
// Phases: locate (walk the tier, pick the version, read DCP's .metadata),
// metadata (open and fstat every file read), read (N reader threads, each
// its rank's files or, with ranks M on a DCP checkpoint written by N != M,
// the byte ranges the .metadata plans for M new ranks), verify (each file
// the request has a checksum for, from the event log's shard_written, is
// read again to its end and hashed: the hashing a loader that checks pays,
// from the page cache the read phase filled; none given: no verify phase). Read-only: every file is
// opened under the tier root with open_beneath (no symlink followed,
// nothing outside), O_RDONLY; `cold` drops the files' pages
// (POSIX_FADV_DONTNEED) first and measures what stayed resident (mincore);
// `rate_bytes_per_second` caps the reading. Blocking: run it on a worker.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "events/event.hpp"
#include "model/tier.hpp"
#include "util/clock.hpp"

namespace ckptmon {

struct DrillRequest {
  TierConfig tier;
  std::string job;  // "": the tier's only job with committed checkpoints
  std::optional<std::int64_t> step;
  std::size_t ranks = 0;  // reader ranks; 0: the ranks that wrote it
  bool cold = false;
  double rate_bytes_per_second = 0;  // over all readers; 0: no cap
  // The recovery time objective, seconds; unset: objective_for(job), when given.
  std::optional<double> objective_seconds;
  std::function<std::optional<double>(const std::string& job)> objective_for;
  // Seconds the whole drill may take (0: no limit); past it the reading
  // stops and the drill fails saying so. Also refused up front when the
  // rate cap cannot read the checkpoint in time.
  double deadline_seconds = 0;
  const std::atomic<bool>* cancel = nullptr;  // set: stop reading, the drill fails
  // Digests by tier-relative path (shard_written's `checksum`): the verify
  // phase checks those of the files read.
  std::map<std::string, Checksum> checksums;
};

// One reader rank's share.
struct DrillRank {
  std::uint64_t bytes = 0;
  std::uint64_t ranges = 0;  // whole files, or planned byte ranges
  double seconds = 0;
};

struct DrillResult {
  std::string tier, job, path, framework;
  std::int64_t step = -1;
  std::size_t writer_ranks = 0;  // 0: the names do not tell
  bool planned = false;          // reads are the .metadata's plan for the reader ranks
  std::uint64_t files = 0;       // opened in the metadata phase
  std::uint64_t bytes = 0;       // read
  double locate_seconds = 0, metadata_seconds = 0, read_seconds = 0, verify_seconds = 0;
  std::uint64_t verified_files = 0;    // hashed and equal to their checksum
  std::uint64_t unverified_files = 0;  // read, with no checksum to compare (verify ran)
  bool verified = false;               // the verify phase ran (checksums were given)
  std::vector<DrillRank> ranks;
  std::optional<std::uint64_t> resident_after_drop;  // cold: bytes mincore still saw cached
  std::optional<double> objective_seconds;
  std::string failure;  // the file and why, when the drill could not read the checkpoint
  double total() const { return locate_seconds + metadata_seconds + read_seconds + verify_seconds; }
  // Read it all, and within the objective where one is set.
  bool ok() const {
    return failure.empty() && (!objective_seconds || total() <= *objective_seconds);
  }
  double read_bytes_per_second() const {
    return read_seconds > 0 ? static_cast<double>(bytes) / read_seconds : 0;
  }
};

enum class DrillOutcome : std::uint8_t {
  kDone,     // the result says how it went (ok(), failure)
  kRefused,  // bad input or refused up front: `error` says why, nothing was read
};

DrillOutcome run_drill(const DrillRequest& req, const Clock& clock, DrillResult& r,
                       std::string& error);

}  // namespace ckptmon
