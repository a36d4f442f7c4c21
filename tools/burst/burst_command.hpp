#pragma once
// `ckptmon burst`: the command line of the burst engine (tools/burst/burst.hpp):
// flags as text, checked before anything is created, the run, its report
// (table with a progress bar on a terminal, plain lines otherwise, JSON) and
// --expect-detection. Exit codes: 0 done, 1 a detection check failed,
// 2 bad input or an I/O error (docs/validating-a-tier.md).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "util/clock.hpp"

namespace CLI {
class App;
}

namespace ckptmon {

struct BurstArgs {
  std::string target;
  std::string layout = "dcp";
  int jobs = 1;
  int ranks = 4;
  std::string shard_size = "64MiB";
  int checkpoints = 3;
  std::string interval = "10s";
  int writers = 0;
  bool no_fsync = false;
  std::vector<std::string> fail_writer;  // "" (the default point) or "R@C"
  bool fail_writer_given = false;
  std::string fill_to;
  std::string drain_to;
  std::string drain_rate;
  bool restore = false;
  int restore_ranks = 0;  // 0: --ranks
  std::string events;
  bool sparse = false;
  std::string window;
  std::string format;  // "" = table on a terminal, plain otherwise; table | plain | json
  bool force = false;
  bool cleanup = false;
  std::string expect_detection;
  std::string detect_timeout = "2m";
  std::string tier;
  std::string drain_tier;
  std::string key_file;  // "" = burst::default_key_file()
};

// Adds the `burst` subcommand to `app`, filling `args`.
CLI::App* add_burst_command(CLI::App& app, BurstArgs& args);

// `tty`: draw the table and the progress bar (stdout is a terminal).
int run_burst_command(const BurstArgs& args, const Clock& clock, bool tty, std::ostream& out,
                      std::ostream& err);

}  // namespace ckptmon
