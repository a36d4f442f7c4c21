#pragma once
// `ckptmon report`: the capacity trend review of one daemon's history, from
// its state directory (read-only, beside the running daemon) or from the
// daemon itself (GET /api/v1/report, the same code over its own database;
// a daemon without it: /api/v1/history and /api/v1/plan) or from the fleet's
// Prometheus (range queries, daemon/report_prometheus.hpp): per tier used and
// available bytes, growth by least squares with its spread, time to full,
// required capacity against size; per job stored bytes and growth; the
// alerts that fired, with durations; findings in words; per job, from the
// checkpoint history (--state-dir, --from), size, save duration and completion skew
// p50/p90/max and the optimizer's share of the bytes over time. Formats
// json, markdown and csv carry the same numbers; html is one self-contained
// page with SVG charts (daemon/report_render.hpp; docs/operations.md#report).

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/tier.hpp"
#include "rules/plan.hpp"
#include "util/clock.hpp"

namespace ckptmon::sql {
class Db;
}

namespace ckptmon {

struct ReportCommandOptions {
  std::string from;         // http://host:port of a running daemon
  std::string state_dir;    // the daemon's state directory, read-only
  std::string prometheus;   // http://host:9090 of a Prometheus that scraped ckptmon
  std::string config_file;  // policy for the required capacity (with state_dir)
  std::string since = "30d";
  std::vector<std::string> tiers;   // only these; empty = all
  std::vector<std::string> jobs;    // only these; empty = all
  std::string format = "markdown";  // markdown | csv | json | html
  std::string output;               // file; empty = `out`
  std::optional<double> now;
  // The least span of samples a growth rate is fitted over (--min-history).
  double min_history_seconds = 3600;
  double timeout_seconds = 30;
  bool progress = false;  // a progress line on `err` (set when it is a terminal)
};

// GET /api/v1/report: the report of the daemon's own state database, built by
// the code `--state-dir` runs, so `report --from` and `report --state-dir`
// give the same figures; the required capacity from the daemon's last rules
// cycle (its /api/v1/plan inputs).
//   since, until  unix seconds or a duration before now (default 30d, now)
//   tier, job     comma-separated lists of url-encoded names (default all)
//   min_history   seconds (default 3600); series=1: the points behind the
//                 figures too (what the HTML page charts)
struct ReportApiRequest {
  double since = 0, until = 0;
  std::vector<std::string> tiers, jobs;
  double min_history_seconds = 3600;
  bool with_series = false;
};
bool parse_report_query(const std::map<std::string, std::string>& query, double now,
                        ReportApiRequest* out, std::string* error);
struct ReportApiAnswer {
  unsigned status = 200;  // 400: an unknown --tier, too little history; 500: the database
  std::string body;       // the report's JSON, or {"error": ...}
};
// The sizing rule's inputs per tier of a GET /api/v1/plan body (tiers whose
// inputs do not parse are left out).
std::vector<PlanInputs> plan_inputs_of_plan(const nlohmann::json& plan);
// On the caller's thread (a worker: it reads the database). The report is
// judged as of q.until (fits, alerts still firing), as `--now` does.
// `tiers`: the daemon's configured tiers, for the compliance section (where
// each tier lives, what its namespaces allow); null: that section unknown.
ReportApiAnswer report_api_answer(sql::Db& db, const ReportApiRequest& q,
                                  const std::vector<PlanInputs>& plan, const std::string& source,
                                  const std::vector<TierConfig>* tiers);

// Exit code 0, or 2 for a bad flag, an unusable source or too little history.
int run_report_command(const ReportCommandOptions& opts, const Clock& clock, std::ostream& out,
                       std::ostream& err);

}  // namespace ckptmon
