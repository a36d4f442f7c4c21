#pragma once
// The capacity trend review (`ckptmon report`, GET /api/v1/report): the
// report's model, filled from a state database (fill_from_db) or by a
// command's source (tools: a daemon's history API, Prometheus), finished into
// the JSON every format renders (markdown, csv here; html in
// api/report_render.hpp). docs/operations.md#report.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/restore_drill.hpp"
#include "model/tier.hpp"
#include "rules/alerts.hpp"
#include "rules/plan.hpp"
#include "store/history.hpp"

namespace ckptmon::sql {
class Db;
}

namespace ckptmon {

// What a report covers: only these tiers and jobs (empty: all), and the least
// span of samples a growth rate is fitted over (--min-history).
struct ReportScope {
  std::vector<std::string> tiers;
  std::vector<std::string> jobs;
  double min_history_seconds = 3600;
};

// Least squares over a series with its spread: the residuals' standard
// deviation and the slope's standard error.
struct Trend {
  std::size_t samples = 0;
  double span_seconds = 0;
  std::optional<double> slope_per_day;
  std::optional<double> slope_stderr_per_day;
  std::optional<double> residual_stddev;
  std::optional<double> fitted_now;
};

// p50 / p90 / max of a job's checkpoints over the period (nearest rank).
struct Quantiles {
  std::size_t samples = 0;
  std::optional<double> p50, p90, max;
};

struct TierReport {
  std::string tier;
  std::optional<double> size_bytes, avail_bytes, used_bytes;
  Trend used;                                  // growth of use
  Trend avail;                                 // for time to full
  std::optional<double> time_to_full_seconds;  // +Inf: not filling
  // The sizing rule at the end of the period where the history keeps it
  // (schema 6 samples, --prometheus), else the sizing rule now.
  std::optional<double> required_bytes;
  bool required_from_history = false;
  std::vector<HistoryPoint> required_points, size_points;
  std::optional<double> headroom_bytes;  // size - required
  bool partial = false;                  // a shard's jobs only
  // Where the source has their history (--prometheus; the state database's
  // samples from schema 6 on); unknown otherwise.
  std::optional<double> cleanup_pending_bytes, cleanup_pending_peak_bytes;
  std::optional<double> cleanup_oldest_age_peak_seconds;
  std::optional<double> partial_bytes, partial_peak_bytes;
  struct Job {
    std::string job;
    std::optional<double> first_bytes, last_bytes, peak_bytes;
    Trend stored;
    // From the checkpoint history (--state-dir); unknown from --from.
    bool have_checkpoints = false;
    std::size_t committed = 0;  // committed in the period
    Quantiles size, duration, skew;
    Trend size_trend;                         // checkpoint bytes over commit time
    std::vector<HistoryPoint> stored_points;  // stored_bytes samples
    // The highest drain backlog of the period (store/history.hpp DrainPeak);
    // unset: no drain observed, or not known.
    std::optional<DrainPeak> drain_peak;
    std::size_t drain_hours = 0;  // hours with a drain observation
    // GPU-seconds lost to the period's checkpoints (rules/gpu_cost.hpp);
    // gpu_known + gpu_unknown == 0: no GPU history for the job.
    double gpu_lost = 0;
    std::size_t gpu_known = 0, gpu_unknown = 0;
    // Scheduled restore drills that finished in the period (store/drill_ledger.hpp),
    // oldest first; empty: none, or not known (`--from`).
    std::vector<DrillRecord> drills;
    std::vector<HistoryPoint> sizes;            // (commit time, bytes)
    std::vector<HistoryPoint> optimizer_share;  // (commit time, optimizer / bytes)
    std::optional<double> checkpoint_first_bytes, checkpoint_last_bytes;  // --prometheus
  };
  std::vector<Job> jobs;
  std::vector<HistoryPoint> used_points, avail_points;  // for the charts
};

struct AlertFired {
  AlertLabels labels;
  double fired_at = 0;
  std::optional<double> resolved_at;  // nullopt: still firing
  std::string summary;
};

// Copies that lay outside their job's allowed residency in the period: the
// committed checkpoints of the period (deleted ones included) on tiers whose
// `residency` the job's namespaces do not allow (model/namespace_rule.hpp),
// one row per (tier, job). Known only with the checkpoint history and the
// configuration that says where tiers live and what namespaces allow.
struct ComplianceReport {
  bool known = false;
  std::string unknown_reason;
  struct Row {
    std::string tier, job, residency;
    std::vector<std::string> allowed;
    std::size_t copies = 0;
    double bytes = 0;
    std::int64_t first_step = -1, last_step = -1;
    double first_at = 0, last_at = 0;  // commit times
  };
  std::vector<Row> rows;
};

struct Report {
  double since = 0, until = 0;
  std::string source;
  std::vector<TierReport> tiers;
  std::vector<AlertFired> alerts;
  std::vector<std::string> findings;
  ComplianceReport compliance;
};

// Per tier and job from tier samples (query_history()'s names).
void fill_tiers(Report& r, const std::vector<HistorySeries>& series, double now,
                const ReportScope& o);
// The alerts that fired in the period, from firing/resolved transitions.
void fill_alerts(Report& r, const std::vector<AlertTransition>& transitions, const ReportScope& o);
// The sizing rule now per tier, where the history has no figure of its own.
void fill_required(Report& r, const std::vector<PlanInputs>& inputs);
// Everything the state database keeps of the period. Throws sql::Error.
void fill_from_db(sql::Db& db, const ReportScope& o, Report& r, double now,
                  const std::vector<TierConfig>* tiers);
// Every --tier asked for is known, there is history enough to fit, the
// findings; then the JSON every format renders. nullopt with `error`.
std::optional<nlohmann::json> finish_report(Report& r, const std::vector<std::string>& tiers,
                                            double min_history_seconds, bool with_series,
                                            std::string* error);
std::string to_csv(const nlohmann::json& j);
std::string to_markdown(const nlohmann::json& j);
// "a,b" of url-encoded names (a name may hold a comma): the list a
// GET /api/v1/report parameter carries.
std::string encode_list(const std::vector<std::string>& names);

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

}  // namespace ckptmon
