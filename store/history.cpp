#include "store/history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "rules/downsample.hpp"
#include "store/store.hpp"
#include "util/log.hpp"

namespace ckptmon {
namespace {

AlertState state_from(const std::string& s) {
  if (s == "pending") return AlertState::kPending;
  if (s == "firing") return AlertState::kFiring;
  return AlertState::kInactive;
}

// SQLite stores NaN as NULL; it comes back as NaN.
double real_or_nan(const sql::Stmt& st, int col) {
  return st.is_null(col) ? std::numeric_limits<double>::quiet_NaN() : st.real(col);
}

}  // namespace

void create_history_schema(sql::Db& db) {
  // Sample times are REAL unix seconds; (tier, t) is unique, a second sample
  // at the same instant (a clock that did not move) replaces the first.
  db.exec(R"(CREATE TABLE IF NOT EXISTS tier_samples(
  tier TEXT NOT NULL, t REAL NOT NULL, size_bytes REAL NOT NULL, avail_bytes REAL NOT NULL,
  PRIMARY KEY(tier, t)) WITHOUT ROWID)");
  db.exec(R"(CREATE TABLE IF NOT EXISTS tier_job_samples(
  tier TEXT NOT NULL, t REAL NOT NULL, job TEXT NOT NULL, stored_bytes REAL NOT NULL,
  PRIMARY KEY(tier, t, job)) WITHOUT ROWID)");
  // Only the last drain rate window is kept: enough for the rate to survive
  // a restart. drained_total is NULL when the job has no drain events.
  db.exec(R"(CREATE TABLE IF NOT EXISTS drain_samples(
  tier TEXT NOT NULL, to_tier TEXT NOT NULL, job TEXT NOT NULL, t REAL NOT NULL,
  backlog_bytes REAL NOT NULL, copied_bytes REAL NOT NULL, drained_total REAL,
  PRIMARY KEY(tier, to_tier, job, t)) WITHOUT ROWID)");
  db.exec(R"(CREATE TABLE IF NOT EXISTS alert_transitions(
  id INTEGER PRIMARY KEY, at REAL NOT NULL,
  alertname TEXT NOT NULL, severity TEXT NOT NULL, tier TEXT NOT NULL, job TEXT NOT NULL,
  from_state TEXT NOT NULL, to_state TEXT NOT NULL, value REAL,
  summary TEXT NOT NULL, description TEXT NOT NULL))");
  db.exec("CREATE INDEX IF NOT EXISTS alert_transitions_at ON alert_transitions(at)");
  db.exec(R"(CREATE TABLE IF NOT EXISTS alert_active(
  alertname TEXT NOT NULL, severity TEXT NOT NULL, tier TEXT NOT NULL, job TEXT NOT NULL,
  state TEXT NOT NULL, active_at REAL NOT NULL, fired_at REAL NOT NULL,
  active_for REAL NOT NULL, for_seconds REAL NOT NULL, value REAL,
  summary TEXT NOT NULL, description TEXT NOT NULL, runbook_url TEXT NOT NULL,
  PRIMARY KEY(alertname, severity, tier, job)) WITHOUT ROWID)");
}

void create_schema5_tables(sql::Db& db) {
  db.exec(R"(CREATE TABLE IF NOT EXISTS drain_peaks(
  tier TEXT NOT NULL, to_tier TEXT NOT NULL, job TEXT NOT NULL, hour REAL NOT NULL,
  peak_bytes REAL NOT NULL, peak_at REAL NOT NULL,
  PRIMARY KEY(tier, to_tier, job, hour)) WITHOUT ROWID)");
  // lost_gpu_seconds NULL: the cost stayed unknown (reason says why).
  db.exec(R"(CREATE TABLE IF NOT EXISTS checkpoint_gpu_costs(
  tier TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT NULL,
  window_start REAL NOT NULL, window_end REAL NOT NULL, gpus INTEGER NOT NULL,
  lost_gpu_seconds REAL, unknown_reason TEXT NOT NULL,
  PRIMARY KEY(tier, job, step)) WITHOUT ROWID)");
}

void add_schema6_columns(sql::Db& db) {
  for (const char* col : kTierFigureColumns) {
    if (!has_column(db, "tier_samples", col)) {
      db.exec(std::string("ALTER TABLE tier_samples ADD COLUMN ") + col + " REAL");
    }
  }
}

bool has_column(sql::Db& db, const char* table, const char* column) {
  auto st =
      db.prepare(std::string("SELECT 1 FROM pragma_table_info('") + table + "') WHERE name=?1");
  st.bind(1, std::string_view(column));
  return st.step();
}

void write_history(sql::Db& db, const HistoryWrite& w) {
  if (w.empty()) return;
  sql::Transaction tx(db);
  if (!w.samples.empty()) {
    auto ins = db.prepare(
        "INSERT OR REPLACE INTO tier_samples(tier, t, size_bytes, avail_bytes, "
        "cleanup_pending_bytes, cleanup_oldest_age_seconds, partial_bytes, "
        "required_capacity_bytes) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    constexpr double kNull = std::numeric_limits<double>::quiet_NaN();  // bound as NULL
    auto clear_jobs = db.prepare("DELETE FROM tier_job_samples WHERE tier=?1 AND t=?2");
    auto ins_job = db.prepare(
        "INSERT OR REPLACE INTO tier_job_samples(tier, t, job, stored_bytes) VALUES(?1,?2,?3,?4)");
    for (const auto& [tier, s] : w.samples) {
      ins.bind(1, std::string_view(tier)).bind(2, s.t).bind(3, s.size_bytes).bind(4, s.avail_bytes);
      ins.bind(5, s.cleanup_pending_bytes.value_or(kNull))
          .bind(6, s.cleanup_oldest_age_seconds.value_or(kNull))
          .bind(7, s.partial_bytes.value_or(kNull))
          .bind(8, s.required_capacity_bytes.value_or(kNull));
      ins.run();
      clear_jobs.bind(1, std::string_view(tier)).bind(2, s.t);
      clear_jobs.run();
      for (const auto& [job, bytes] : s.job_stored_bytes) {
        ins_job.bind(1, std::string_view(tier))
            .bind(2, s.t)
            .bind(3, std::string_view(job))
            .bind(4, bytes);
        ins_job.run();
      }
    }
  }
  if (!w.drain.empty()) {
    auto ins = db.prepare(
        "INSERT OR REPLACE INTO drain_samples(tier, to_tier, job, t, backlog_bytes, copied_bytes, "
        "drained_total) VALUES(?1,?2,?3,?4,?5,?6,?7)");
    for (const auto& [key, s] : w.drain) {
      ins.bind(1, std::string_view(key.tier))
          .bind(2, std::string_view(key.to_tier))
          .bind(3, std::string_view(key.job))
          .bind(4, s.t)
          .bind(5, s.backlog_bytes)
          .bind(6, s.copied_bytes)
          .bind(7, s.drained_total);
      ins.run();
    }
    // The hour's peak: replaced only by a higher backlog (the first time
    // the peak was reached is kept).
    auto peak = db.prepare(
        "INSERT INTO drain_peaks(tier, to_tier, job, hour, peak_bytes, peak_at) "
        "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(tier, to_tier, job, hour) DO UPDATE SET "
        "peak_bytes=excluded.peak_bytes, peak_at=excluded.peak_at "
        "WHERE excluded.peak_bytes > drain_peaks.peak_bytes");
    for (const auto& [key, s] : w.drain) {
      if (!std::isfinite(s.backlog_bytes) || !std::isfinite(s.t)) continue;
      peak.bind(1, std::string_view(key.tier))
          .bind(2, std::string_view(key.to_tier))
          .bind(3, std::string_view(key.job))
          .bind(4, std::floor(s.t / 3600) * 3600)
          .bind(5, s.backlog_bytes)
          .bind(6, s.t);
      peak.run();
    }
  }
  if (!w.gpu_costs.empty()) {
    // A restarted daemon joins the event catalog's checkpoints again: the
    // same (tier, job, step) replaces its row.
    auto ins = db.prepare(
        "INSERT OR REPLACE INTO checkpoint_gpu_costs(tier, job, step, window_start, window_end, "
        "gpus, lost_gpu_seconds, unknown_reason) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    for (const CheckpointGpuCost& c : w.gpu_costs) {
      ins.bind(1, std::string_view(c.tier))
          .bind(2, std::string_view(c.job))
          .bind(3, c.step)
          .bind(4, c.window.span.start)
          .bind(5, c.window.span.end)
          .bind(6, static_cast<std::int64_t>(c.gpus.size()))
          .bind(7, c.lost_gpu_seconds.value_or(std::numeric_limits<double>::quiet_NaN()))
          .bind(8, std::string_view(c.unknown_reason));
      ins.run();
    }
  }
  if (!w.transitions.empty()) {
    auto ins = db.prepare(
        "INSERT INTO alert_transitions(at, alertname, severity, tier, job, from_state, to_state, "
        "value, summary, description) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
    for (const AlertTransition& t : w.transitions) {
      ins.bind(1, t.at)
          .bind(2, std::string_view(t.labels.alertname))
          .bind(3, std::string_view(t.labels.severity))
          .bind(4, std::string_view(t.labels.tier))
          .bind(5, std::string_view(t.labels.job))
          .bind(6, to_string(t.from))
          .bind(7, to_string(t.to))
          .bind(8, t.value)
          .bind(9, std::string_view(t.summary))
          .bind(10, std::string_view(t.description));
      ins.run();
    }
  }
  if (w.active) {
    db.exec("DELETE FROM alert_active");
    auto ins = db.prepare(
        "INSERT OR REPLACE INTO alert_active(alertname, severity, tier, job, state, active_at, "
        "fired_at, active_for, for_seconds, value, summary, description, runbook_url) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
    for (const AlertInstance& a : *w.active) {
      if (a.state == AlertState::kInactive) continue;
      ins.bind(1, std::string_view(a.labels.alertname))
          .bind(2, std::string_view(a.labels.severity))
          .bind(3, std::string_view(a.labels.tier))
          .bind(4, std::string_view(a.labels.job))
          .bind(5, to_string(a.state))
          .bind(6, a.active_at)
          .bind(7, a.fired_at)
          .bind(8, a.active_for)
          .bind(9, a.for_seconds)
          .bind(10, a.value)
          .bind(11, std::string_view(a.summary))
          .bind(12, std::string_view(a.description))
          .bind(13, std::string_view(a.runbook_url));
      ins.run();
    }
  }
  tx.commit();
}

std::map<std::string, std::vector<TierSample>> load_tier_samples(sql::Db& db, double since,
                                                                 bool with_jobs) {
  std::map<std::string, std::vector<TierSample>> out;
  auto st = db.prepare(
      "SELECT tier, t, size_bytes, avail_bytes FROM tier_samples WHERE t >= ?1 ORDER BY tier, t");
  st.bind(1, since);
  while (st.step()) {
    TierSample s;
    s.t = st.real(1);
    s.size_bytes = st.real(2);
    s.avail_bytes = st.real(3);
    out[st.text(0)].push_back(std::move(s));
  }
  if (with_jobs) {
    auto jobs = db.prepare(
        "SELECT tier, t, job, stored_bytes FROM tier_job_samples WHERE t >= ?1 ORDER BY tier, t");
    jobs.bind(1, since);
    while (jobs.step()) {
      auto it = out.find(jobs.text(0));
      if (it == out.end()) continue;
      const double t = jobs.real(1);
      auto s = std::lower_bound(it->second.begin(), it->second.end(), t,
                                [](const TierSample& a, double v) { return a.t < v; });
      if (s != it->second.end() && s->t == t) s->job_stored_bytes[jobs.text(2)] = jobs.real(3);
    }
  }
  return out;
}

DrainHistory load_drain_samples(sql::Db& db, double since) {
  DrainHistory out;
  auto st = db.prepare(
      "SELECT tier, to_tier, job, t, backlog_bytes, copied_bytes, drained_total FROM "
      "drain_samples WHERE t >= ?1 ORDER BY tier, to_tier, job, t");
  st.bind(1, since);
  while (st.step()) {
    DrainKey key{st.text(0), st.text(1), st.text(2)};
    out[key].push_back(DrainSample{st.real(3), st.real(4), st.real(5), real_or_nan(st, 6)});
  }
  return out;
}

std::size_t delete_drain_samples_before(sql::Db& db, double before) {
  auto st = db.prepare("DELETE FROM drain_samples WHERE t < ?1");
  st.bind(1, before);
  st.run();
  return static_cast<std::size_t>(db.changes());
}

std::optional<std::vector<DrainPeak>> load_drain_peaks(sql::Db& db, double since, double until) {
  if (!db.has_table("drain_peaks")) return std::nullopt;
  std::vector<DrainPeak> out;
  auto st = db.prepare(
      "SELECT tier, to_tier, job, hour, peak_bytes, peak_at FROM drain_peaks "
      "WHERE peak_at >= ?1 AND peak_at <= ?2 ORDER BY tier, to_tier, job, hour");
  st.bind(1, since).bind(2, until);
  while (st.step()) {
    out.push_back(DrainPeak{DrainKey{st.text(0), st.text(1), st.text(2)}, st.real(3), st.real(4),
                            st.real(5)});
  }
  return out;
}

std::optional<std::vector<StoredGpuCost>> load_gpu_costs(sql::Db& db, double since, double until) {
  if (!db.has_table("checkpoint_gpu_costs")) return std::nullopt;
  std::vector<StoredGpuCost> out;
  auto st = db.prepare(
      "SELECT tier, job, step, window_start, window_end, lost_gpu_seconds FROM "
      "checkpoint_gpu_costs WHERE window_end >= ?1 AND window_end <= ?2 "
      "ORDER BY tier, job, window_end");
  st.bind(1, since).bind(2, until);
  while (st.step()) {
    StoredGpuCost c;
    c.tier = st.text(0);
    c.job = st.text(1);
    c.step = st.int64(2);
    c.window_start = st.real(3);
    c.window_end = st.real(4);
    const double lost = real_or_nan(st, 5);
    if (!std::isnan(lost)) c.lost_gpu_seconds = lost;
    out.push_back(std::move(c));
  }
  return out;
}

static std::size_t delete_gpu_costs_before(sql::Db& db, double before) {
  auto st = db.prepare("DELETE FROM checkpoint_gpu_costs WHERE window_end < ?1");
  st.bind(1, before);
  st.run();
  return static_cast<std::size_t>(db.changes());
}

std::size_t delete_drain_peaks_before(sql::Db& db, double before) {
  auto st = db.prepare("DELETE FROM drain_peaks WHERE hour < ?1");
  st.bind(1, before);
  st.run();
  return static_cast<std::size_t>(db.changes());
}

std::vector<AlertInstance> load_active_alerts(sql::Db& db) {
  std::vector<AlertInstance> out;
  auto st = db.prepare(
      "SELECT alertname, severity, tier, job, state, active_at, fired_at, active_for, "
      "for_seconds, value, summary, description, runbook_url FROM alert_active "
      "ORDER BY alertname, severity, tier, job");
  while (st.step()) {
    AlertInstance a;
    a.labels = {st.text(0), st.text(1), st.text(2), st.text(3)};
    a.state = state_from(st.text(4));
    if (a.state == AlertState::kInactive) continue;
    a.active_at = st.real(5);
    a.fired_at = st.real(6);
    a.active_for = st.real(7);
    a.for_seconds = st.real(8);
    a.value = real_or_nan(st, 9);
    a.summary = st.text(10);
    a.description = st.text(11);
    a.runbook_url = st.text(12);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<AlertTransition> load_alert_transitions(sql::Db& db, double since) {
  std::vector<AlertTransition> out;
  auto st = db.prepare(
      "SELECT at, alertname, severity, tier, job, from_state, to_state, value, summary, "
      "description FROM alert_transitions WHERE at >= ?1 ORDER BY at, id");
  st.bind(1, since);
  while (st.step()) {
    AlertTransition t;
    t.at = st.real(0);
    t.labels = {st.text(1), st.text(2), st.text(3), st.text(4)};
    t.from = state_from(st.text(5));
    t.to = state_from(st.text(6));
    t.value = real_or_nan(st, 7);
    t.summary = st.text(8);
    t.description = st.text(9);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<double> samples_due_for_deletion(sql::Db& db, const std::string& tier, double now,
                                             const HistoryPolicy& policy) {
  // A sample's fate depends only on its age and on the other samples of its
  // level and bucket, so the young ones (all kept) need not be read.
  std::vector<double> times;
  auto st = db.prepare("SELECT t FROM tier_samples WHERE tier=?1 AND t < ?2 ORDER BY t");
  st.bind(1, std::string_view(tier)).bind(2, now - policy.raw_retention_seconds);
  while (st.step()) times.push_back(st.real(0));
  std::vector<double> out;
  for (std::size_t i : samples_to_delete(times, now, policy)) out.push_back(times[i]);
  return out;
}

std::size_t delete_samples(sql::Db& db, const std::string& tier, std::span<const double> times) {
  if (times.empty()) return 0;
  sql::Transaction tx(db);
  auto del = db.prepare("DELETE FROM tier_samples WHERE tier=?1 AND t=?2");
  auto del_jobs = db.prepare("DELETE FROM tier_job_samples WHERE tier=?1 AND t=?2");
  std::size_t n = 0;
  for (double t : times) {
    del.bind(1, std::string_view(tier)).bind(2, t);
    del.run();
    n += static_cast<std::size_t>(db.changes());
    del_jobs.bind(1, std::string_view(tier)).bind(2, t);
    del_jobs.run();
  }
  tx.commit();
  return n;
}

std::size_t delete_transitions_before(sql::Db& db, double before, std::size_t limit) {
  auto st = db.prepare(
      "DELETE FROM alert_transitions WHERE id IN (SELECT id FROM alert_transitions WHERE at < ?1 "
      "ORDER BY at LIMIT ?2)");
  st.bind(1, before).bind(2, static_cast<std::int64_t>(limit));
  st.run();
  return static_cast<std::size_t>(db.changes());
}

double transition_retention_seconds(const HistoryPolicy& policy) {
  return policy.levels.empty() ? policy.raw_retention_seconds
                               : policy.levels.back().retention_seconds;
}

void prune_history(Store& store, double now, const HistoryPolicy& policy, std::size_t batch) {
  batch = std::max<std::size_t>(batch, 1);
  // A read that queues the deletes as writes of their own.
  store.post(
      [&store, now, policy, batch](sql::Db& db) {
        std::vector<std::string> tiers;
        auto st = db.prepare("SELECT DISTINCT tier FROM tier_samples");
        while (st.step()) tiers.push_back(st.text(0));
        for (const std::string& tier : tiers) {
          auto due = std::make_shared<const std::vector<double>>(
              samples_due_for_deletion(db, tier, now, policy));
          for (std::size_t from = 0; from < due->size(); from += batch) {
            const std::size_t n = std::min(batch, due->size() - from);
            // Queued behind what is already waiting: a big first prune (after a
            // long downtime) never holds the catalog writes back for long.
            store.post([tier, due, from, n](sql::Db& d) {
              delete_samples(d, tier, std::span<const double>(due->data() + from, n));
            });
          }
          if (!due->empty()) {
            log::debug("pruning tier samples",
                       {{"tier", tier}, {"samples", static_cast<int>(due->size())}});
          }
        }
        const double before = now - transition_retention_seconds(policy);
        store.post([before, batch](sql::Db& d) { delete_transitions_before(d, before, batch); });
        store.post([before](sql::Db& d) {
          delete_drain_peaks_before(d, before);
          delete_gpu_costs_before(d, before);
        });
      },
      Store::Access::kRead);
}

}  // namespace ckptmon

namespace ckptmon {

bool is_history_series(std::string_view name) {
  for (const char* s : kHistorySeriesNames) {
    if (name == s) return true;
  }
  return false;
}

std::optional<double> history_resolution_at(double t, double now, const HistoryPolicy& policy) {
  const double age = now - t;
  if (age <= policy.raw_retention_seconds) return 0.0;
  for (const DownsampleLevel& l : policy.levels) {
    if (age <= l.retention_seconds) return l.resolution_seconds;
  }
  return std::nullopt;
}

namespace {

// " AND <col> = ?n" when `value` is set; binds it at `*next`.
std::string and_equals(const char* col, const std::string& value, int* next,
                       std::vector<std::pair<int, std::string>>* binds) {
  if (value.empty()) return {};
  const int n = (*next)++;
  binds->emplace_back(n, value);
  return std::string(" AND ") + col + "=?" + std::to_string(n);
}

// The sampled rows of one table in [since, until], the newest of each step
// bucket (SQLite returns the other columns of the row that holds MAX(t)).
struct RowsSql {
  std::string select;  // the rows
  std::string count;   // how many rows select gives
  std::vector<std::pair<int, std::string>> binds;
};

RowsSql rows_sql(const char* table, const char* columns, const char* key, const HistoryQuery& q,
                 bool with_job, const std::vector<const char*>& nullable = {}) {
  RowsSql r;
  int next = 4;  // ?1 since, ?2 until, ?3 step
  std::string where = std::string(" FROM ") + table + " WHERE t >= ?1 AND t <= ?2" +
                      and_equals("tier", q.tier, &next, &r.binds);
  if (with_job) where += and_equals("job", q.job, &next, &r.binds);
  // COUNT(col) counts the rows where a nullable column has a value.
  std::string counts = "COUNT(*)";
  for (const char* col : nullable) counts += std::string(", COUNT(") + col + ")";
  if (q.step > 0) {
    const std::string group = std::string(" GROUP BY ") + key + ", CAST((t - ?1) / ?3 AS INTEGER)";
    r.select = std::string("SELECT ") + columns + ", MAX(t)" + where + group + " ORDER BY " + key +
               ", MAX(t)";
    r.count = "SELECT " + counts + " FROM (SELECT " + columns + ", MAX(t)" + where + group + ")";
  } else {
    r.select = std::string("SELECT ") + columns + ", t" + where + " ORDER BY " + key + ", t";
    r.count = "SELECT " + counts + where;
  }
  return r;
}

void bind_all(sql::Stmt& st, const HistoryQuery& q, const RowsSql& r) {
  st.bind(1, q.since).bind(2, q.until);
  if (q.step > 0) st.bind(3, q.step);
  for (const auto& [n, v] : r.binds) st.bind(n, std::string_view(v));
}

// Rows, then for each nullable column the rows where it has a value.
std::vector<std::size_t> count_rows(sql::Db& db, const HistoryQuery& q, const RowsSql& r) {
  auto st = db.prepare(r.count);
  bind_all(st, q, r);
  std::vector<std::size_t> out;
  if (!st.step()) return out;
  for (int i = 0; i < st.columns(); ++i) out.push_back(static_cast<std::size_t>(st.int64(i)));
  return out;
}

}  // namespace

HistoryResult query_history(sql::Db& db, const HistoryQuery& q) {
  HistoryResult out;
  auto wants = [&](const char* name) { return q.series.empty() || q.series == name; };
  const bool want_size = wants("size_bytes");
  const bool want_avail = wants("avail_bytes");
  const bool want_used = wants("used_bytes");
  // The rules' figures a database written before schema 6 (read read-only
  // by report and plan) does not have: no such series, not zeros.
  std::vector<const char*> figures;
  for (const char* col : kTierFigureColumns) {
    if (wants(col) && has_column(db, "tier_samples", col)) figures.push_back(col);
  }
  // A job filter asks about a job: the tier series do not belong to it.
  const std::size_t tier_series =
      q.job.empty() ? (want_size ? 1 : 0) + (want_avail ? 1 : 0) + (want_used ? 1 : 0) : 0;
  if (!q.job.empty()) figures.clear();
  const bool want_jobs = wants("stored_bytes");

  std::string tier_columns = "tier, size_bytes, avail_bytes";
  for (const char* col : figures) tier_columns += std::string(", ") + col;
  const RowsSql tiers = rows_sql("tier_samples", tier_columns.c_str(), "tier", q, false, figures);
  const RowsSql jobs =
      rows_sql("tier_job_samples", "tier, job, stored_bytes", "tier, job", q, true);
  // Points, counted before they are read: a sample without a figure gives
  // no point in that figure's series.
  std::size_t points = 0;
  if (tier_series > 0 || !figures.empty()) {
    const std::vector<std::size_t> n = count_rows(db, q, tiers);
    for (std::size_t i = 0; i < n.size(); ++i) points += i == 0 ? n[0] * tier_series : n[i];
  }
  if (want_jobs) {
    const std::vector<std::size_t> n = count_rows(db, q, jobs);
    if (!n.empty()) points += n[0];
  }
  if (points > q.max_points) {
    out.too_many_points = points;
    return out;
  }

  std::map<std::tuple<std::string, std::string, std::string>, std::vector<HistoryPoint>> by_key;
  if (tier_series > 0 || !figures.empty()) {
    auto st = db.prepare(tiers.select);
    bind_all(st, q, tiers);
    const int t_col = 3 + static_cast<int>(figures.size());
    while (st.step()) {
      const std::string tier = st.text(0);
      const double size = st.real(1), avail = st.real(2), t = st.real(t_col);
      if (want_size) by_key[{tier, "", "size_bytes"}].push_back({t, size});
      if (want_avail) by_key[{tier, "", "avail_bytes"}].push_back({t, avail});
      if (want_used) by_key[{tier, "", "used_bytes"}].push_back({t, size - avail});
      for (std::size_t i = 0; i < figures.size(); ++i) {
        const int col = 3 + static_cast<int>(i);
        if (!st.is_null(col)) by_key[{tier, "", figures[i]}].push_back({t, st.real(col)});
      }
    }
  }
  if (want_jobs) {
    auto st = db.prepare(jobs.select);
    bind_all(st, q, jobs);
    while (st.step()) {
      by_key[{st.text(0), st.text(1), "stored_bytes"}].push_back({st.real(3), st.real(2)});
    }
  }
  for (auto& [key, pts] : by_key) {
    out.points += pts.size();
    out.series.push_back(
        HistorySeries{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::move(pts)});
  }
  return out;
}

}  // namespace ckptmon
