#pragma once
// `ckptmon scan PATH...`: one walk of each path, no daemon, no state.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "model/tier.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace ckptmon {

struct ScanCommandOptions {
  // Each is a directory (a tier named after it, jobs at job_depth) or, with
  // config_file, the name of a configured tier (its own settings).
  std::vector<std::string> paths;
  std::string config_file;
  std::string format = "table";  // table | json
  Duration partial_after = std::chrono::minutes(30);
  int job_depth = 1;
  int walk_concurrency = 0;  // for paths (not configured tiers); 0: from the file-system type
  // Evaluate time-dependent states (in_progress versus partial) as of this
  // unix time instead of now: reproducible reports and golden tests.
  std::optional<double> now;
};

// A tier for a directory given on the command line: named after its last
// component, its path absolute and normal, jobs at `job_depth`.
TierConfig tier_for_path(const std::string& path, Duration partial_after, int job_depth,
                         int walk_concurrency);

// Writes the result to `out`, problems to `err`; returns the exit code (1 when
// a path could not be walked).
int run_scan_command(const ScanCommandOptions& opts, const Clock& clock, std::ostream& out,
                     std::ostream& err);

}  // namespace ckptmon
