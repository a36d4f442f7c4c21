#pragma once
// `ckptmon scan PATH...`: one walk of each path, no daemon, no state.

#include <ostream>
#include <string>
#include <vector>

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
};

// Writes the result to `out`, problems to `err`; returns the exit code (1 when
// a path could not be walked).
int run_scan_command(const ScanCommandOptions& opts, const Clock& clock, std::ostream& out,
                     std::ostream& err);

}  // namespace ckptmon
