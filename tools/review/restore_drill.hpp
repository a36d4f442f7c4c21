#pragma once
// `ckptmon restore-drill TIER --job J`: reads the job's newest committed
// checkpoint on a tier back as its ranks would, and says how long a restore
// takes there, phase by phase, against the recovery time objective.
//
// The drill itself is collectors/restore_drill.hpp's (phases, what it
// reads and how); this is the command: the tier from --config.file or a
// path, the objective from the tier's policy, and the output.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collectors/restore_drill.hpp"
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
  // Event logs (glob(7) patterns) whose shard_written checksums the verify
  // phase compares; empty: no verify phase.
  std::vector<std::string> events;
  int job_depth = 1;
};

// The checksums the event logs matching `globs` give for `job` ("": any),
// by path relative to the root of the tier the event names (`tiers`; an
// event without a tier, or naming none of them: `fallback`'s root), so a
// drained copy with the same layout finds its shard's digest. Only regular
// files are read; `err` says what was skipped (not a regular file, lines
// the parser rejected, paths outside their tier).
std::map<std::string, Checksum> checksums_from_events(const std::vector<std::string>& globs,
                                                      const std::string& job,
                                                      const std::vector<TierConfig>& tiers,
                                                      const TierConfig& fallback,
                                                      std::ostream& err);

// Exit codes: 0 read within the objective (or none set), 1 over it or failed
// (a file gone, unreadable mid-drill or a checksum mismatch), 2 bad input (no such tier, job or
// checkpoint; a rate that cannot finish within the objective, refused up front).
int run_restore_drill(const RestoreDrillOptions& opts, const Clock& clock, std::ostream& out,
                      std::ostream& err);

}  // namespace ckptmon
