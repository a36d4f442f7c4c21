#pragma once
// The event-log subcommands behind the CLI: `ckptmon events check FILE...`
// and `ckptmon emit`. Kept out of cli/cli.cpp so they are testable with
// streams and a fake clock.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "events/parser.hpp"
#include "util/clock.hpp"

namespace ckptmon {

// Validates event logs line by line. Prints each rejected line to `err` as
// FILE:LINE: reason: detail, and one summary line per file to `out`. A last
// line without a newline gets a warning, not an error (a writer may still be
// appending it). Returns 0 when every line is acceptable, 1 otherwise
// (including files that cannot be read).
int check_event_logs(const std::vector<std::string>& files, std::ostream& out, std::ostream& err,
                     const EventParserOptions& options = {});

// `ckptmon emit` arguments exactly as given; unset options are nullopt.
struct EmitArgs {
  std::string log;
  std::string event;
  std::string job;
  std::optional<std::string> ts;  // default: the clock's now
  std::optional<std::string> step, tier, rank, path, bytes, start_ts, checksum, files, reason,
      from_tier, to_tier, ok;
};

// Builds the event, checks it with the parser (so required fields and types
// follow the same rules as the reader), and appends it with one write(2).
// Returns 0 on success, 2 for an invalid event, 1 when the write fails.
int emit_event(const EmitArgs& args, const Clock& clock, std::ostream& err);

}  // namespace ckptmon
