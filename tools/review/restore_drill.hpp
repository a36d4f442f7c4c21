#pragma once
// `ckptmon restore-drill TIER --job J`: reads the job's newest committed
// checkpoint on a tier back as its ranks would, and says how long a restore
// takes there, phase by phase, against the recovery time objective.
//
// Phases: locate (walk the tier, pick the version, read DCP's .metadata),
// metadata (open and fstat every file read), read (N reader threads, each
// its rank's files or, with --ranks M on a DCP checkpoint, the byte ranges
// the .metadata plans for M new ranks), verify (not yet: no checksum is
// compared, and the output says so). Read-only: every file is opened under
// the tier root with open_beneath (no symlink followed, nothing outside),
// O_RDONLY; --cold drops the files' pages (POSIX_FADV_DONTNEED) first and
// reports what stayed resident (mincore); --rate caps the reading.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "util/clock.hpp"

namespace ckptmon {

struct RestoreDrillOptions {
  std::string tier;  // a directory (a tier named after it) or, with config_file, a tier's name
  std::string config_file;
  std::string job;  // required when the tier has committed checkpoints of several jobs
  std::optional<std::int64_t> step;
  std::size_t ranks = 0;  // reader ranks; 0: the ranks that wrote it
  bool cold = false;
  double rate_bytes_per_second = 0;  // over all readers; 0: no cap
  // Seconds; nullopt: the tier's policy for the job (with config_file), else none.
  std::optional<double> objective_seconds;
  std::string format = "table";  // table | json
  int job_depth = 1;
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
  double locate_seconds = 0, metadata_seconds = 0, read_seconds = 0;
  std::vector<DrillRank> ranks;
  std::optional<std::uint64_t> resident_after_drop;  // --cold: bytes mincore still saw cached
  std::optional<double> objective_seconds;
  std::string failure;  // the file and why, when the drill could not read the checkpoint
  double total() const { return locate_seconds + metadata_seconds + read_seconds; }
};

// Exit codes: 0 read within the objective (or none set), 1 over it or failed
// (a file gone or unreadable mid-drill), 2 bad input (no such tier, job or
// checkpoint; a rate that cannot finish within the objective, refused up front).
int run_restore_drill(const RestoreDrillOptions& opts, const Clock& clock, std::ostream& out,
                      std::ostream& err);

}  // namespace ckptmon
