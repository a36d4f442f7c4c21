#pragma once
// `ckptmon report`: the capacity trend review of one daemon's history, from
// its state directory (read-only, beside the running daemon) or from the
// daemon itself (GET /api/v1/report, the same code over its own database;
// a daemon without it: /api/v1/history and /api/v1/plan) or from the fleet's
// Prometheus (range queries, tools/review/report_prometheus.hpp): per tier used and
// available bytes, growth by least squares with its spread, time to full,
// required capacity against size; per job stored bytes and growth; the
// alerts that fired, with durations; findings in words; per job, from the
// checkpoint history (--state-dir, --from), size, save duration and completion skew
// p50/p90/max and the optimizer's share of the bytes over time. Formats
// json, markdown and csv carry the same numbers; html is one self-contained
// page with SVG charts (api/report_render.hpp; docs/operations.md#report).

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/report.hpp"
#include "model/http_client_config.hpp"
#include "model/tier.hpp"
#include "rules/plan.hpp"
#include "util/clock.hpp"

namespace ckptmon {

// --tier, --job and --min-history are the ReportScope's.
struct ReportCommandOptions : ReportScope {
  std::string from;                    // http://host:port of a running daemon
  std::string state_dir;               // the daemon's state directory, read-only
  std::string prometheus;              // http://host:9090 of a Prometheus that scraped ckptmon
  HttpClientConfig prometheus_client;  // --prometheus.* (TLS, credentials, headers)
  std::string config_file;             // policy for the required capacity (with state_dir)
  std::string since = "30d";
  std::string format = "markdown";  // markdown | csv | json | html
  std::string output;               // file; empty = `out`
  std::optional<double> now;
  double timeout_seconds = 30;
  bool progress = false;  // a progress line on `err` (set when it is a terminal)
};

// Exit code 0, or 2 for a bad flag, an unusable source or too little history.
int run_report_command(const ReportCommandOptions& opts, const Clock& clock, std::ostream& out,
                       std::ostream& err);

}  // namespace ckptmon
