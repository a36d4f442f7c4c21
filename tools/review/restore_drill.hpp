#pragma once
// `ckptmon restore-drill TIER --job J`: reads the job's newest committed
// checkpoint on a tier back as its ranks would, and says how long a restore
// takes there, phase by phase, against the recovery time objective.
//
// The drill itself is collectors/restore_drill.hpp's (phases, what it
// reads and how); this is the command: the tier from --config.file or a
// path, the objective from the tier's policy, and the output.

#include <cstdint>
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
  int job_depth = 1;
};

// Exit codes: 0 read within the objective (or none set), 1 over it or failed
// (a file gone or unreadable mid-drill), 2 bad input (no such tier, job or
// checkpoint; a rate that cannot finish within the objective, refused up front).
int run_restore_drill(const RestoreDrillOptions& opts, const Clock& clock, std::ostream& out,
                      std::ostream& err);

}  // namespace ckptmon
