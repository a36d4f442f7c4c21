#pragma once
// What the rules remember across restarts, in the state database (schema 3 and later):
// tier samples (size, avail, stored bytes per job) downsampled as they age,
// drain observations of the last rate window, the alert history (every state
// change) and the alerts pending or firing at the last cycle. The functions taking sql::Db& run on
// the store thread (Store::post / Store::call); none is thread-safe on its own.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/policy.hpp"
#include "rules/alerts.hpp"
#include "rules/gpu_cost.hpp"
#include "rules/inputs.hpp"
#include "store/sqlite.hpp"

namespace ckptmon {

class Store;

// Creates the tables of schema 3; safe to run on a database that has them.
void create_history_schema(sql::Db& db);

// Creates the tables of schema 5 (drain backlog peaks, checkpoint GPU
// costs); safe to run again.
void create_schema5_tables(sql::Db& db);

// Schema 6: the rules' per-tier figures kept with each tier sample (nullable
// REAL columns of tier_samples; TierSample's optionals). Also the names of
// their /api/v1/history series.
inline constexpr const char* kTierFigureColumns[] = {"cleanup_pending_bytes",
                                                     "cleanup_oldest_age_seconds", "partial_bytes",
                                                     "required_capacity_bytes"};
// Adds the columns a database lacks; safe to run again.
void add_schema6_columns(sql::Db& db);
bool has_column(sql::Db& db, const char* table, const char* column);

// One evaluation cycle's writes, committed as one transaction.
struct HistoryWrite {
  std::vector<std::pair<std::string, TierSample>> samples;  // (tier, sample)
  std::vector<std::pair<DrainKey, DrainSample>> drain;
  std::vector<AlertTransition> transitions;
  // Checkpoints whose GPU cost was joined this cycle (GpuCostTracker::take_joined).
  std::vector<CheckpointGpuCost> gpu_costs;
  // Alerts pending or firing after the cycle; replaces the stored set.
  // nullopt: unchanged since the last write (nothing is written).
  std::optional<std::vector<AlertInstance>> active;

  bool empty() const {
    return samples.empty() && drain.empty() && transitions.empty() && gpu_costs.empty() && !active;
  }
};
void write_history(sql::Db& db, const HistoryWrite& w);

// Tier samples with t >= since, by tier, oldest first. Per-job bytes only
// when `with_jobs` (the rules do not need them; reports do).
std::map<std::string, std::vector<TierSample>> load_tier_samples(sql::Db& db, double since,
                                                                 bool with_jobs);

// Drain observations with t >= since, each series oldest first.
DrainHistory load_drain_samples(sql::Db& db, double since);

// Deletes the drain observations older than `before`; returns how many.
std::size_t delete_drain_samples_before(sql::Db& db, double before);

// The highest backlog of one drain within one UTC hour, and when it was
// seen. write_history() keeps it from the drain observations it writes (the
// observations themselves are kept for the last rate window only), so the
// peaks survive for as long as the alert history does, at one row per drain
// per hour.
struct DrainPeak {
  DrainKey key;
  double hour = 0;  // start of the hour, unix seconds
  double peak_bytes = 0;
  double peak_at = 0;
};

// Peaks with since <= peak_at <= until, by key then hour; nullopt when the
// database has no such table (written by a ckptmon before schema 5, read
// read-only: not known, not none).
std::optional<std::vector<DrainPeak>> load_drain_peaks(sql::Db& db, double since, double until);

// Deletes peaks of hours that began before `before`; returns how many.
std::size_t delete_drain_peaks_before(sql::Db& db, double before);

// What one checkpoint cost its job's GPUs (rules/gpu_cost.hpp), as stored:
// one row per (tier, job, step), kept as long as the alert history.
struct StoredGpuCost {
  std::string tier, job;
  std::int64_t step = 0;
  double window_start = 0, window_end = 0;
  std::optional<double> lost_gpu_seconds;  // nullopt: not known
};

// Costs of checkpoints whose blocking window ended in [since, until], by
// tier, job, then window end; nullopt when the database has no such table.
std::optional<std::vector<StoredGpuCost>> load_gpu_costs(sql::Db& db, double since, double until);

// The alerts that were pending or firing when the last cycle was saved.
std::vector<AlertInstance> load_active_alerts(sql::Db& db);

// Alert state changes with at >= since, oldest first.
std::vector<AlertTransition> load_alert_transitions(sql::Db& db, double since);

// Sample times of `tier` the history policy says should go now
// (samples_to_delete over the stored samples older than raw_retention).
std::vector<double> samples_due_for_deletion(sql::Db& db, const std::string& tier, double now,
                                             const HistoryPolicy& policy);

// Deletes the samples of `tier` at `times`, per-job rows included, in one
// transaction. Returns the number of samples deleted.
std::size_t delete_samples(sql::Db& db, const std::string& tier, std::span<const double> times);

// Deletes at most `limit` alert transitions older than `before`, oldest
// first. Returns how many.
std::size_t delete_transitions_before(sql::Db& db, double before, std::size_t limit);

// How long alert transitions are kept: as long as the coarsest sample level.
double transition_retention_seconds(const HistoryPolicy& policy);

// Queues a pruning pass on the store thread: plans the deletions of every
// tier in the table, then deletes them `batch` samples per transaction, each
// batch queued behind whatever else waits, so catalog and sample writes are
// never held up for long. Returns at once.
void prune_history(Store& store, double now, const HistoryPolicy& policy, std::size_t batch = 500);

}  // namespace ckptmon

namespace ckptmon {

// GET /api/v1/history and `ckptmon report --state-dir`: the stored tier
// samples of a time range as series, thinned to one point per `step`.
// Series of a tier: size_bytes, avail_bytes, used_bytes (size - avail) and,
// from samples written at schema 6 on, the rules' figures of kTierFigureColumns
// (a sample without the figure has no point in that series: not known, not 0);
// of a job on a tier: stored_bytes.
inline constexpr const char* kHistorySeriesNames[] = {"size_bytes",
                                                      "avail_bytes",
                                                      "used_bytes",
                                                      "stored_bytes",
                                                      "cleanup_pending_bytes",
                                                      "cleanup_oldest_age_seconds",
                                                      "partial_bytes",
                                                      "required_capacity_bytes"};
bool is_history_series(std::string_view name);

struct HistoryQuery {
  std::string tier;    // empty: every tier
  std::string job;     // empty: every job (stored_bytes only)
  std::string series;  // empty: every series
  double since = 0;    // t >= since
  double until = 0;    // t <= until
  // One point per bucket of this many seconds (the newest sample of each);
  // 0: every stored sample.
  double step = 0;
  // More points than this (all series together) is an error, not a truncation.
  std::size_t max_points = 11000;
};

struct HistoryPoint {
  double t = 0;
  double v = 0;
};

struct HistorySeries {
  std::string tier;
  std::string job;  // empty for tier series
  std::string series;
  std::vector<HistoryPoint> points;  // oldest first
};

struct HistoryResult {
  std::vector<HistorySeries> series;  // by tier, then job, then series name
  std::size_t points = 0;
  // Set instead of series when the answer would pass max_points.
  std::optional<std::size_t> too_many_points;
};

// Reads the samples the query asks for. Counts before it reads: an answer
// past max_points costs one COUNT per table, not the rows.
HistoryResult query_history(sql::Db& db, const HistoryQuery& q);

// The finest resolution the stored history has at `t` under `policy` as of
// `now`: 0 (raw, every sample) within raw_retention, else the resolution of
// the level that holds samples of that age; nullopt past the last level.
std::optional<double> history_resolution_at(double t, double now, const HistoryPolicy& policy);

}  // namespace ckptmon
