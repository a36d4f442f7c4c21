#include "api/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/plan.hpp"
#include "api/time_range.hpp"
#include "http/http_server.hpp"
#include "model/checkpoint.hpp"
#include "model/namespace_rule.hpp"
#include "rules/alerts.hpp"
#include "rules/capacity.hpp"
#include "rules/series.hpp"
#include "store/drill_ledger.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

constexpr double kDay = 86400;
// A growth rate needs this many samples over at least --min-history (1h).
constexpr std::size_t kMinSamples = 3;

Trend trend_of(const std::vector<HistoryPoint>& pts, double now, double min_span) {
  Trend t;
  t.samples = pts.size();
  if (pts.empty()) return t;
  t.span_seconds = pts.back().t - pts.front().t;
  if (pts.size() < kMinSamples || t.span_seconds < min_span) return t;
  std::vector<Point> p;
  p.reserve(pts.size());
  for (const HistoryPoint& h : pts) p.push_back({h.t, h.v});
  auto fit = least_squares(p, now);
  if (!fit) return t;
  double ssr = 0, mean_x = 0;
  for (const Point& q : p) mean_x += q.t - now;
  mean_x /= static_cast<double>(p.size());
  double var_x = 0;
  for (const Point& q : p) {
    const double r = q.v - (fit->intercept + fit->slope * (q.t - now));
    ssr += r * r;
    var_x += (q.t - now - mean_x) * (q.t - now - mean_x);
  }
  const double dof = static_cast<double>(p.size()) - 2;
  t.slope_per_day = fit->slope * kDay;
  t.fitted_now = fit->intercept;
  if (dof > 0) {
    t.residual_stddev = std::sqrt(ssr / dof);
    t.slope_stderr_per_day = std::sqrt(ssr / dof / var_x) * kDay;
  }
  return t;
}

Quantiles quantiles_of(const std::vector<double>& v) {
  Quantiles q;
  q.samples = v.size();
  q.p50 = nearest_rank(v, 0.5);
  q.p90 = nearest_rank(v, 0.9);
  q.max = nearest_rank(v, 1.0);
  return q;
}

json opt(const std::optional<double>& v) {
  if (!v) return nullptr;
  if (std::isinf(*v)) return *v > 0 ? "+Inf" : "-Inf";
  return *v;
}

std::string days_text(double seconds) {
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%.1f days", seconds / kDay));
  return buf;
}

std::string duration_words(double seconds) {
  char buf[64];
  if (seconds < 120) {
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.0f seconds", seconds));
  } else if (seconds < 2 * 3600) {
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.0f minutes", seconds / 60));
  } else if (seconds < 2 * kDay) {
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.1f hours", seconds / 3600));
  } else {
    return days_text(seconds);
  }
  return buf;
}

// "30-day", "6-hour", "10-minute": a span as the findings name it (under a
// day in hours, under two hours in minutes).
std::string span_label(double seconds) {
  char text[32];
  if (seconds >= kDay) {
    static_cast<void>(std::snprintf(text, sizeof text, "%.0f-day", seconds / kDay));
  } else if (seconds >= 2 * 3600) {
    static_cast<void>(std::snprintf(text, sizeof text, "%.0f-hour", seconds / 3600));
  } else {
    static_cast<void>(std::snprintf(text, sizeof text, "%.0f-minute", seconds / 60));
  }
  return text;
}

void add_findings(Report& r) {
  const std::string period = span_label(r.until - r.since);
  for (const TierReport& t : r.tiers) {
    // A rate is named by the span it was fitted over, which on a young
    // install is shorter than the period asked for.
    const std::string fitted = t.used.span_seconds > 0 ? span_label(t.used.span_seconds) : period;
    if (t.time_to_full_seconds && *t.time_to_full_seconds <= 0) {
      // Full already: no "fills in 0.0 days", and say whether it still grows.
      const bool growing = t.used.slope_per_day && *t.used.slope_per_day > 0;
      r.findings.push_back(
          t.tier + " is full (" +
          (t.avail_bytes ? human_bytes(std::max(0.0, *t.avail_bytes)) : "none") + " available)" +
          (growing ? std::string() : ", and stopped growing over the " + fitted + " fit"));
    } else if (t.time_to_full_seconds && std::isfinite(*t.time_to_full_seconds)) {
      r.findings.push_back(t.tier + " fills in " + days_text(*t.time_to_full_seconds) + " at the " +
                           fitted + " growth rate (" + human_bytes(*t.used.slope_per_day) +
                           " per day)");
    } else if (t.time_to_full_seconds) {
      r.findings.push_back(t.tier + " is not filling over the " + fitted + " fit");
    }
    if (t.required_bytes && t.size_bytes && *t.required_bytes > *t.size_bytes) {
      r.findings.push_back("the sizing rule needs " +
                           human_bytes(*t.required_bytes - *t.size_bytes) + " more on " + t.tier +
                           (t.partial ? " (this shard's jobs alone)" : ""));
    }
  }
  for (const ComplianceReport::Row& c : r.compliance.rows) {
    r.findings.push_back(std::to_string(c.copies) + (c.copies == 1 ? " copy" : " copies") +
                         " of job " + c.job + " lay on tier " + c.tier + " (residency '" +
                         c.residency + "'), outside the residencies its namespaces allow");
  }
  std::map<std::string, int> fired;
  for (const AlertFired& a : r.alerts) ++fired[a.labels.alertname];
  for (const auto& [name, n] : fired) {
    r.findings.push_back(name + " fired " + std::to_string(n) + (n == 1 ? " time" : " times"));
  }
}

// ---- sources ----

bool wanted(const std::vector<std::string>& only, const std::string& v) {
  return only.empty() || std::find(only.begin(), only.end(), v) != only.end();
}

double committed_at(const Checkpoint& c) {
  return c.marker_time > 0 ? c.marker_time : c.last_write;
}

// Per job, from the committed checkpoints of the period (deleted ones
// included): size, save duration and completion skew quantiles, the size
// trend, and the optimizer's share of the bytes at each commit. A duration
// that is not known (0) is left out, not counted as 0; so is the skew of a
// one-file checkpoint. The share is known only where some of the bytes were
// recognised as model or optimizer state (a checkpoint of unnamed shards says
// nothing of it).
void fill_checkpoints(Report& r, const std::vector<Checkpoint>& history, double now,
                      const ReportScope& o) {
  std::map<std::pair<std::string, std::string>, std::vector<const Checkpoint*>> by_job;
  for (const Checkpoint& c : history) {
    if (!wanted(o.tiers, c.tier) || !wanted(o.jobs, c.job)) continue;
    by_job[{c.tier, c.job}].push_back(&c);
  }
  for (TierReport& t : r.tiers) {
    for (TierReport::Job& j : t.jobs) j.have_checkpoints = true;
    for (const auto& entry : by_job) {
      // Named, not structured bindings: clang (clang-tidy) 14 cannot capture those in a lambda.
      const auto& key = entry.first;
      const auto& list = entry.second;
      if (key.first != t.tier) continue;
      auto it = std::find_if(t.jobs.begin(), t.jobs.end(),
                             [&](const TierReport::Job& j) { return j.job == key.second; });
      if (it == t.jobs.end()) {
        TierReport::Job j;
        j.job = key.second;
        j.have_checkpoints = true;
        t.jobs.push_back(std::move(j));
        it = std::prev(t.jobs.end());
      }
      TierReport::Job& j = *it;
      std::vector<double> sizes, durations, skews;
      for (const Checkpoint* c : list) {
        const double at = committed_at(*c);
        const auto bytes = static_cast<double>(c->bytes);
        ++j.committed;
        sizes.push_back(bytes);
        j.sizes.push_back({at, bytes});
        if (const double d = save_duration(*c); d > 0) durations.push_back(d);
        if (c->first_write > 0 && c->files > 1) skews.push_back(c->completion_skew());
        const auto model = c->component_bytes[static_cast<std::size_t>(Component::kModel)];
        const auto optim = c->component_bytes[static_cast<std::size_t>(Component::kOptimizer)];
        if (c->bytes > 0 && model + optim > 0) {
          j.optimizer_share.push_back({at, static_cast<double>(optim) / bytes});
        }
      }
      j.size = quantiles_of(sizes);
      j.duration = quantiles_of(durations);
      j.skew = quantiles_of(skews);
      j.size_trend = trend_of(j.sizes, now, o.min_history_seconds);
    }
  }
}

// The job's entry on a reported tier, added when only this figure knows it
// (a job known from its event log alone has no stored bytes); null when the
// tier is not reported or the job is filtered out.
TierReport::Job* job_entry(Report& r, const std::string& tier, const std::string& job,
                           const ReportScope& o) {
  if (!wanted(o.jobs, job)) return nullptr;
  for (TierReport& t : r.tiers) {
    if (t.tier != tier) continue;
    for (TierReport::Job& j : t.jobs) {
      if (j.job == job) return &j;
    }
    TierReport::Job j;
    j.job = job;
    j.have_checkpoints = true;
    t.jobs.push_back(std::move(j));
    return &t.jobs.back();
  }
  return nullptr;
}

// Per job, the highest hourly drain peak of the period (the earliest on a tie).
void fill_drain_peaks(Report& r, const std::vector<DrainPeak>& peaks, const ReportScope& o) {
  for (const DrainPeak& p : peaks) {
    TierReport::Job* j = job_entry(r, p.key.tier, p.key.job, o);
    if (j == nullptr) continue;
    ++j->drain_hours;
    if (!j->drain_peak || p.peak_bytes > j->drain_peak->peak_bytes) j->drain_peak = p;
  }
}

void fill_gpu_costs(Report& r, const std::vector<StoredGpuCost>& costs, const ReportScope& o) {
  for (const StoredGpuCost& c : costs) {
    TierReport::Job* j = job_entry(r, c.tier, c.job, o);
    if (j == nullptr) continue;
    if (c.lost_gpu_seconds) {
      j->gpu_lost += *c.lost_gpu_seconds;
      ++j->gpu_known;
    } else {
      ++j->gpu_unknown;
    }
  }
}

void fill_drills(Report& r, const std::vector<DrillRecord>& drills, const ReportScope& o) {
  for (const DrillRecord& d : drills) {
    TierReport::Job* j = job_entry(r, d.tier, d.job, o);
    if (j != nullptr) j->drills.push_back(d);
  }
}

// `tiers`: the configuration's (null: not known, and the section says so).
void fill_compliance(Report& r, const std::vector<Checkpoint>& history,
                     const std::vector<TierConfig>* tiers, const ReportScope& o) {
  if (tiers == nullptr) {
    r.compliance.unknown_reason =
        "needs the configuration (where tiers live, what namespaces allow): give --config.file";
    return;
  }
  r.compliance.known = true;
  std::map<std::string, std::optional<std::vector<std::string>>> allowed;  // by job
  std::map<std::pair<std::string, std::string>, ComplianceReport::Row> rows;
  for (const Checkpoint& c : history) {
    if (!wanted(o.tiers, c.tier) || !wanted(o.jobs, c.job)) continue;
    auto t = std::find_if(tiers->begin(), tiers->end(),
                          [&](const TierConfig& x) { return x.name == c.tier; });
    if (t == tiers->end()) continue;  // a tier no longer configured: where it lay is unknown
    auto a = allowed.find(c.job);
    if (a == allowed.end()) {
      a = allowed
              .emplace(
                  c.job,
                  allowed_residencies(
                      *tiers, [](const TierConfig& x) -> const TierConfig& { return x; }, c.job))
              .first;
    }
    if (!a->second ||
        std::find(a->second->begin(), a->second->end(), t->residency) != a->second->end()) {
      continue;
    }
    ComplianceReport::Row& row = rows[{c.tier, c.job}];
    const double at = committed_at(c);
    if (row.copies == 0) {
      row.tier = c.tier;
      row.job = c.job;
      row.residency = t->residency;
      row.allowed = *a->second;
      row.first_step = row.last_step = c.step;
      row.first_at = row.last_at = at;
    }
    ++row.copies;
    row.bytes += static_cast<double>(c.bytes);
    if (at < row.first_at) {
      row.first_at = at;
      row.first_step = c.step;
    }
    if (at >= row.last_at) {
      row.last_at = at;
      row.last_step = c.step;
    }
  }
  for (auto& [key, row] : rows) r.compliance.rows.push_back(std::move(row));
}

std::string not_enough(std::size_t samples, double span, double min_span) {
  return "not enough history: " + std::to_string(samples) +
         (samples == 1 ? " sample" : " samples") + " over " + duration_words(span) +
         " (a growth rate needs at least " + std::to_string(kMinSamples) + " samples over " +
         (min_span == 3600 ? std::string("1 hour") : duration_words(min_span)) +
         "; --min-history). Wait for more samples (the daemon keeps one per scan_interval), or "
         "fit a noisier rate over less time with a shorter --min-history, e.g. --min-history 10m";
}

bool check_enough(const Report& r, double min_span, std::string* error) {
  std::size_t most = 0;
  double span = 0;
  for (const TierReport& t : r.tiers) {
    if (t.avail.slope_per_day) return true;
    if (t.avail.samples > most) {
      most = t.avail.samples;
      span = t.avail.span_seconds;
    }
  }
  *error = not_enough(most, span, min_span);
  return false;
}

}  // namespace

std::vector<PlanInputs> plan_inputs_of_plan(const nlohmann::json& plan) {
  std::vector<PlanInputs> inputs;
  if (!plan.is_object()) return inputs;
  std::string e;
  for (const json& t : plan.value("tiers", json::array())) {
    if (!t.is_object()) continue;
    if (auto in = plan_inputs_from_json(t.value("inputs", json::object()), &e)) {
      inputs.push_back(std::move(*in));
    }
  }
  return inputs;
}

namespace {

// ---- rendering ----

json quantiles_json(const Quantiles& q, bool known) {
  if (!known) return nullptr;
  return {{"samples", q.samples}, {"p50", opt(q.p50)}, {"p90", opt(q.p90)}, {"max", opt(q.max)}};
}

json share_json(const TierReport::Job& j) {
  if (!j.have_checkpoints) return nullptr;
  const auto& s = j.optimizer_share;
  json out = {{"samples", s.size()}, {"first", nullptr}, {"first_at", nullptr}, {"last", nullptr},
              {"last_at", nullptr},  {"min", nullptr},   {"max", nullptr}};
  if (s.empty()) return out;
  out["first"] = s.front().v;
  out["first_at"] = s.front().t;
  out["last"] = s.back().v;
  out["last_at"] = s.back().t;
  double lo = s.front().v, hi = s.front().v;
  for (const HistoryPoint& p : s) {
    lo = std::min(lo, p.v);
    hi = std::max(hi, p.v);
  }
  out["min"] = lo;
  out["max"] = hi;
  return out;
}

json drain_json(const TierReport::Job& j) {
  if (!j.drain_peak) return nullptr;
  return {{"to_tier", j.drain_peak->key.to_tier},
          {"peak_bytes", j.drain_peak->peak_bytes},
          {"peak_at", j.drain_peak->peak_at},
          {"hours_observed", j.drain_hours}};
}

// null without GPU history for the job; lost_gpu_seconds sums the known
// costs only (checkpoints_unknown says how many are missing from it).
json gpu_json(const TierReport::Job& j) {
  if (j.gpu_known + j.gpu_unknown == 0) return nullptr;
  return {{"lost_gpu_seconds", j.gpu_known > 0 ? json(j.gpu_lost) : json()},
          {"checkpoints_known", j.gpu_known},
          {"checkpoints_unknown", j.gpu_unknown}};
}

// null without a drill of the job in the period; else how many, how many were
// ok (read it all within the objective), the slowest, and the last one.
json drills_json(const TierReport::Job& j) {
  if (j.drills.empty()) return nullptr;
  std::size_t ok = 0;
  double slowest = 0;
  for (const DrillRecord& d : j.drills) {
    ok += d.ok() ? 1 : 0;
    if (d.read_ok()) slowest = std::max(slowest, d.total_seconds());
  }
  const DrillRecord& last = j.drills.back();
  json l{{"finished_at", last.finished_at},
         {"step", last.step},
         {"seconds", last.total_seconds()},
         {"bytes", last.bytes},
         {"read_bytes_per_second", opt(last.read_bytes_per_second())},
         {"objective_seconds", opt(last.objective_seconds)},
         {"ok", last.ok()},
         {"failure", last.failure.empty() ? json() : json(last.failure)}};
  return {{"drills", j.drills.size()},
          {"ok", ok},
          {"failed", j.drills.size() - ok},
          {"slowest_seconds", slowest > 0 ? json(slowest) : json()},  // of those read in full
          {"last", std::move(l)}};
}

json points_json(const std::vector<HistoryPoint>& pts) {
  json out = json::array();
  for (const HistoryPoint& p : pts) out.push_back({p.t, p.v});
  return out;
}

// `with_series`: the points behind the figures too (the HTML charts).
json to_json(const Report& r, bool with_series = false) {
  json tiers = json::array();
  for (const TierReport& t : r.tiers) {
    json jobs = json::array();
    for (const TierReport::Job& j : t.jobs) {
      const bool k = j.have_checkpoints;
      json jj = {{"job", j.job},
                 {"first_stored_bytes", opt(j.first_bytes)},
                 {"last_stored_bytes", opt(j.last_bytes)},
                 {"peak_stored_bytes", opt(j.peak_bytes)},
                 {"growth_bytes_per_day", opt(j.stored.slope_per_day)},
                 {"growth_stderr_bytes_per_day", opt(j.stored.slope_stderr_per_day)},
                 {"checkpoints_committed", k ? json(j.committed) : json()},
                 {"checkpoint_bytes", quantiles_json(j.size, k)},
                 {"checkpoint_first_bytes", opt(j.checkpoint_first_bytes)},
                 {"checkpoint_last_bytes", opt(j.checkpoint_last_bytes)},
                 {"checkpoint_size_growth_bytes_per_day", opt(j.size_trend.slope_per_day)},
                 {"save_duration_seconds", quantiles_json(j.duration, k)},
                 {"completion_skew_seconds", quantiles_json(j.skew, k)},
                 {"optimizer_share", share_json(j)},
                 {"drain_backlog", drain_json(j)},
                 {"gpu_cost", gpu_json(j)},
                 {"restore_drills", drills_json(j)}};
      if (with_series) {
        jj["series"] = {{"stored_bytes", points_json(j.stored_points)},
                        {"checkpoint_bytes", points_json(j.sizes)},
                        {"optimizer_share", points_json(j.optimizer_share)}};
      }
      jobs.push_back(std::move(jj));
    }
    tiers.push_back(
        {{"tier", t.tier},
         {"size_bytes", opt(t.size_bytes)},
         {"avail_bytes", opt(t.avail_bytes)},
         {"used_bytes", opt(t.used_bytes)},
         {"samples", t.avail.samples},
         {"span_seconds", t.avail.span_seconds},
         {"growth_bytes_per_day", opt(t.used.slope_per_day)},
         {"growth_stderr_bytes_per_day", opt(t.used.slope_stderr_per_day)},
         {"growth_residual_stddev_bytes", opt(t.used.residual_stddev)},
         {"time_to_full_seconds", opt(t.time_to_full_seconds)},
         {"required_capacity_bytes", opt(t.required_bytes)},
         {"required_capacity_as_of",
          t.required_bytes ? json(t.required_from_history ? "period_end" : "now") : json()},
         {"size_minus_required_bytes", opt(t.headroom_bytes)},
         {"partial", t.partial},
         {"cleanup_pending_bytes", opt(t.cleanup_pending_bytes)},
         {"cleanup_pending_peak_bytes", opt(t.cleanup_pending_peak_bytes)},
         {"cleanup_oldest_age_peak_seconds", opt(t.cleanup_oldest_age_peak_seconds)},
         {"partial_bytes", opt(t.partial_bytes)},
         {"partial_peak_bytes", opt(t.partial_peak_bytes)},
         {"jobs", std::move(jobs)}});
    if (with_series) {
      tiers.back()["series"] = {{"used_bytes", points_json(t.used_points)},
                                {"avail_bytes", points_json(t.avail_points)},
                                {"size_bytes", points_json(t.size_points)},
                                {"required_capacity_bytes", points_json(t.required_points)}};
    }
  }
  json alerts = json::array();
  for (const AlertFired& a : r.alerts) {
    alerts.push_back(
        {{"alertname", a.labels.alertname},
         {"severity", a.labels.severity},
         {"tier", a.labels.tier},
         {"job", a.labels.job},
         {"fired_at", a.fired_at},
         {"resolved_at", opt(a.resolved_at)},
         {"duration_seconds", opt(a.resolved_at ? std::optional<double>(*a.resolved_at - a.fired_at)
                                                : std::optional<double>(r.until - a.fired_at))},
         {"summary", a.summary}});
  }
  json compliance = {{"known", r.compliance.known}};
  if (r.compliance.known) {
    json rows = json::array();
    for (const ComplianceReport::Row& c : r.compliance.rows) {
      rows.push_back({{"tier", c.tier},
                      {"job", c.job},
                      {"residency", c.residency},
                      {"allowed", c.allowed},
                      {"copies", c.copies},
                      {"bytes", c.bytes},
                      {"first_step", c.first_step},
                      {"first_committed_at", c.first_at},
                      {"last_step", c.last_step},
                      {"last_committed_at", c.last_at}});
    }
    compliance["outside_residency"] = std::move(rows);
  } else {
    compliance["reason"] = r.compliance.unknown_reason;
  }
  return {{"since", r.since},
          {"until", r.until},
          {"source", r.source},
          {"tiers", tiers},
          {"alerts", alerts},
          {"findings", r.findings},
          {"compliance", std::move(compliance)}};
}

// Numbers as JSON writes them, so markdown and CSV carry the same values.
std::string num(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
  return out;
}

std::string bytes_or_dash(const json& v) {
  return v.is_number() ? human_bytes(v.get<double>()) : std::string("-");
}

std::vector<std::string> decode_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    out.push_back(url_decode(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

void fill_tiers(Report& r, const std::vector<HistorySeries>& series, double now,
                const ReportScope& o) {
  std::map<std::string, TierReport> tiers;
  for (const HistorySeries& s : series) {
    if (!wanted(o.tiers, s.tier)) continue;
    TierReport& t = tiers[s.tier];
    t.tier = s.tier;
    if (s.points.empty()) continue;
    if (s.job.empty()) {
      const double last = s.points.back().v;
      if (s.series == "size_bytes") {
        t.size_bytes = last;
        t.size_points = s.points;
      }
      if (s.series == "avail_bytes") {
        t.avail_bytes = last;
        t.avail = trend_of(s.points, now, o.min_history_seconds);
        t.avail_points = s.points;
        if (t.avail.slope_per_day && t.avail.fitted_now) {
          t.time_to_full_seconds = *t.avail.fitted_now <= 0 ? 0.0
                                   : *t.avail.slope_per_day >= 0
                                       ? std::numeric_limits<double>::infinity()
                                       : -*t.avail.fitted_now / (*t.avail.slope_per_day / kDay);
        }
      }
      if (s.series == "used_bytes") {
        t.used_bytes = last;
        t.used = trend_of(s.points, now, o.min_history_seconds);
        t.used_points = s.points;
      }
      auto peak_of = [&] {
        double peak = s.points.front().v;
        for (const HistoryPoint& p : s.points) peak = std::max(peak, p.v);
        return peak;
      };
      if (s.series == "cleanup_pending_bytes") {
        t.cleanup_pending_bytes = last;
        t.cleanup_pending_peak_bytes = peak_of();
      }
      if (s.series == "cleanup_oldest_age_seconds") t.cleanup_oldest_age_peak_seconds = peak_of();
      if (s.series == "partial_bytes") {
        t.partial_bytes = last;
        t.partial_peak_bytes = peak_of();
      }
      if (s.series == "required_capacity_bytes") {
        t.required_bytes = last;
        t.required_from_history = true;
        t.required_points = s.points;
      }
    } else if (s.series == "checkpoint_bytes" && wanted(o.jobs, s.job)) {
      auto it = std::find_if(t.jobs.begin(), t.jobs.end(),
                             [&](const TierReport::Job& x) { return x.job == s.job; });
      if (it == t.jobs.end()) it = t.jobs.insert(t.jobs.end(), TierReport::Job{.job = s.job});
      it->checkpoint_first_bytes = s.points.front().v;
      it->checkpoint_last_bytes = s.points.back().v;
      // The latest checkpoint's size over time: the same size trend the
      // checkpoint history gives --state-dir.
      it->sizes = s.points;
      it->size_trend = trend_of(s.points, now, o.min_history_seconds);
    } else if (s.series == "stored_bytes" && wanted(o.jobs, s.job)) {
      auto it = std::find_if(t.jobs.begin(), t.jobs.end(),
                             [&](const TierReport::Job& x) { return x.job == s.job; });
      if (it == t.jobs.end()) it = t.jobs.insert(t.jobs.end(), TierReport::Job{.job = s.job});
      TierReport::Job& j = *it;
      j.first_bytes = s.points.front().v;
      j.last_bytes = s.points.back().v;
      double peak = 0;
      for (const HistoryPoint& p : s.points) peak = std::max(peak, p.v);
      j.peak_bytes = peak;
      j.stored = trend_of(s.points, now, o.min_history_seconds);
      j.stored_points = s.points;
    }
  }
  for (auto& [name, t] : tiers) r.tiers.push_back(std::move(t));
}

void fill_alerts(Report& r, const std::vector<AlertTransition>& transitions, const ReportScope& o) {
  std::map<AlertLabels, std::size_t> open;
  for (const AlertTransition& t : transitions) {
    if (t.at > r.until) break;  // after --now: not in the period (oldest first)
    if (!t.labels.tier.empty() && !wanted(o.tiers, t.labels.tier)) continue;
    if (!t.labels.job.empty() && !wanted(o.jobs, t.labels.job)) continue;
    if (t.to == AlertState::kFiring) {
      open[t.labels] = r.alerts.size();
      r.alerts.push_back({t.labels, t.at, std::nullopt, t.summary});
    } else if (t.from == AlertState::kFiring) {
      auto it = open.find(t.labels);
      if (it != open.end()) {
        r.alerts[it->second].resolved_at = t.at;
        open.erase(it);
      }
    }
  }
}

void fill_required(Report& r, const std::vector<PlanInputs>& inputs) {
  for (TierReport& t : r.tiers) {
    for (const PlanInputs& in : inputs) {
      if (in.tier != t.tier) continue;
      t.partial = in.shard_count > 1;
      if (!t.required_from_history) t.required_bytes = make_plan(in, {}).terms.required_bytes;
    }
    if (t.size_bytes && t.required_bytes) t.headroom_bytes = *t.size_bytes - *t.required_bytes;
  }
}

// Everything the state database keeps of the period: tier samples (and the
// rules' figures kept with them), the checkpoint history, drain peaks, GPU
// costs and alert transitions. Throws sql::Error.
void fill_from_db(sql::Db& db, const ReportScope& o, Report& r, double now,
                  const std::vector<TierConfig>* tiers) {
  HistoryQuery q;
  q.since = r.since;
  q.until = r.until;
  q.max_points = std::numeric_limits<std::size_t>::max();
  const HistoryResult h = query_history(db, q);
  fill_tiers(r, h.series, now, o);
  const std::vector<Checkpoint> history = read_committed_history(db, r.since, r.until);
  fill_checkpoints(r, history, now, o);
  fill_compliance(r, history, tiers, o);
  if (auto peaks = load_drain_peaks(db, r.since, r.until)) fill_drain_peaks(r, *peaks, o);
  if (auto costs = load_gpu_costs(db, r.since, r.until)) fill_gpu_costs(r, *costs, o);
  if (auto drills = load_drills(db, r.since, r.until)) fill_drills(r, *drills, o);
  fill_alerts(r, load_alert_transitions(db, r.since), o);
}

// One row per figure: section,tier,job,figure,value — the JSON's numbers.
std::string to_csv(const json& j) {
  std::string out = "section,tier,job,figure,value\n";
  auto row = [&](const std::string& section, const std::string& tier, const std::string& job,
                 const std::string& figure, const json& v) {
    out += section + "," + csv_field(tier) + "," + csv_field(job) + "," + figure + "," +
           csv_field(num(v)) + "\n";
  };
  for (const json& t : j["tiers"]) {
    const std::string tier = t["tier"];
    for (const auto& [k, v] : t.items()) {
      if (k == "tier" || k == "jobs") continue;
      row("tier", tier, "", k, v);
    }
    for (const json& jb : t["jobs"]) {
      for (const auto& [k, v] : jb.items()) {
        if (k == "job") continue;
        if (!v.is_object()) {
          row("job", tier, jb["job"], k, v);
          continue;
        }
        // Nested figures flatten to figure.field (save_duration_seconds.p90).
        for (const auto& [k2, v2] : v.items()) {
          row("job", tier, jb["job"], std::string(k).append(".").append(k2), v2);
        }
      }
    }
  }
  for (const json& a : j["alerts"]) {
    row("alert", a["tier"], a["job"], a["alertname"].get<std::string>() + ".duration_seconds",
        a["duration_seconds"]);
  }
  for (const json& f : j["findings"]) row("finding", "", "", "text", f);
  if (j.contains("compliance") && j["compliance"].contains("outside_residency")) {
    for (const json& c : j["compliance"]["outside_residency"]) {
      for (const auto& [k, v] : c.items()) {
        if (k == "tier" || k == "job") continue;
        row("compliance", c["tier"], c["job"], k,
            v.is_array() ? json(join(v.get<std::vector<std::string>>(), " ")) : v);
      }
    }
  }
  return out;
}

std::string to_markdown(const json& j) {
  std::string out = "# Checkpoint storage capacity review\n\n";
  out += "Period: " + format_rfc3339(j["since"]) + " to " + format_rfc3339(j["until"]) +
         "; source: " + md_cell(j["source"]) + ".\n\n## Findings\n\n";
  if (j["findings"].empty()) out += "Nothing to report.\n";
  for (const json& f : j["findings"]) out += "- " + md_cell(f) + "\n";
  out +=
      "\n## Tiers\n\n| tier | size | used | available | growth per day | ± | time to full "
      "| required | size − required |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: |\n";
  for (const json& t : j["tiers"]) {
    std::string ttf = "-";
    if (t["time_to_full_seconds"].is_string()) ttf = "not filling";
    if (t["time_to_full_seconds"].is_number()) ttf = days_text(t["time_to_full_seconds"]);
    out += "| " + md_cell(t["tier"]) + (t["partial"].get<bool>() ? " (shard)" : "") + " | " +
           bytes_or_dash(t["size_bytes"]) + " | " + bytes_or_dash(t["used_bytes"]) + " | " +
           bytes_or_dash(t["avail_bytes"]) + " | " + bytes_or_dash(t["growth_bytes_per_day"]) +
           " | " + bytes_or_dash(t["growth_stderr_bytes_per_day"]) + " | " + ttf + " | " +
           bytes_or_dash(t["required_capacity_bytes"]) + " | " +
           bytes_or_dash(t["size_minus_required_bytes"]) + " |\n";
  }
  out +=
      "\nExact figures (bytes, bytes per day, seconds), as in `--format json`:\n\n"
      "| tier | growth_bytes_per_day | growth_stderr_bytes_per_day | time_to_full_seconds | "
      "required_capacity_bytes |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (const json& t : j["tiers"]) {
    out += "| " + md_cell(t["tier"]) + " | " + num(t["growth_bytes_per_day"]) + " | " +
           num(t["growth_stderr_bytes_per_day"]) + " | " + num(t["time_to_full_seconds"]) + " | " +
           num(t["required_capacity_bytes"]) + " |\n";
  }
  out +=
      "\n## Cleanup and residue\n\nWhat the retention policy says should be gone (at the end "
      "of the period, and its peak), the longest any of it waited, and the partial "
      "checkpoints' bytes; `-` where the history does not keep them.\n\n| tier | cleanup "
      "pending | peak | oldest waited | partial bytes | peak |\n| --- | ---: | ---: | ---: | ---: "
      "| ---: |\n";
  for (const json& t : j["tiers"]) {
    const json& age = t["cleanup_oldest_age_peak_seconds"];
    out += "| " + md_cell(t["tier"]) + " | " + bytes_or_dash(t["cleanup_pending_bytes"]) + " | " +
           bytes_or_dash(t["cleanup_pending_peak_bytes"]) + " | " +
           (age.is_number() ? duration_words(age.get<double>()) : std::string("-")) + " | " +
           bytes_or_dash(t["partial_bytes"]) + " | " + bytes_or_dash(t["partial_peak_bytes"]) +
           " |\n";
  }
  out +=
      "\n## Jobs\n\n| tier | job | stored at start | stored at end | peak | growth per day "
      "|\n| --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) + " | " +
             bytes_or_dash(jb["first_stored_bytes"]) + " | " +
             bytes_or_dash(jb["last_stored_bytes"]) + " | " +
             bytes_or_dash(jb["peak_stored_bytes"]) + " | " +
             bytes_or_dash(jb["growth_bytes_per_day"]) + " |\n";
    }
  }
  out +=
      "\n## Checkpoints per job\n\nCommitted in the period, deleted ones included (p50 / p90 / "
      "max by nearest rank).\n\n| tier | job | committed | size p50 / p90 / max | save duration "
      "p50 / p90 / max | completion skew p50 / p90 / max | optimizer share first → last |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n";
  auto triple = [](const json& q, auto fmt) -> std::string {
    if (!q.is_object() || !q["max"].is_number()) return "-";
    return fmt(q["p50"]) + " / " + fmt(q["p90"]) + " / " + fmt(q["max"]);
  };
  auto secs = [](const json& v) {
    const double d = v.get<double>();
    if (d >= 10) return duration_words(d);
    char buf[32];  // sub-second saves stay visible: 0.000675 seconds
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.3g seconds", d));
    return std::string(buf);
  };
  auto pct = [](const json& v) {
    char buf[32];
    static_cast<void>(std::snprintf(buf, sizeof buf, "%.1f %%", v.get<double>() * 100));
    return std::string(buf);
  };
  bool unknown = false;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& share = jb["optimizer_share"];
      const bool known = jb["checkpoints_committed"].is_number();
      unknown = unknown || !known;
      out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) + " | " +
             (known ? num(jb["checkpoints_committed"]) : std::string("not known")) + " | " +
             triple(jb["checkpoint_bytes"], bytes_or_dash) + " | " +
             triple(jb["save_duration_seconds"], secs) + " | " +
             triple(jb["completion_skew_seconds"], secs) + " | " +
             (share.is_object() && share["first"].is_number()
                  ? pct(share["first"]) + " → " + pct(share["last"])
                  : std::string("-")) +
             " |\n";
    }
  }
  out +=
      "\nExact figures (bytes, seconds, share of bytes), as in `--format json`:\n\n| tier | job | "
      "figure | p50 | p90 | max |\n| --- | --- | --- | ---: | ---: | ---: |\n";
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      for (const char* f :
           {"checkpoint_bytes", "save_duration_seconds", "completion_skew_seconds"}) {
        const json& q = jb[f];
        if (!q.is_object()) continue;
        out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) + " | " + f + " | " +
               num(q["p50"]) + " | " + num(q["p90"]) + " | " + num(q["max"]) + " |\n";
      }
      const json& share = jb["optimizer_share"];
      if (share.is_object()) {
        out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) +
               " | optimizer_share first / last / max | " + num(share["first"]) + " | " +
               num(share["last"]) + " | " + num(share["max"]) + " |\n";
      }
    }
  }
  if (unknown) {
    out +=
        "\nCheckpoint figures need the checkpoint history: `--state-dir` has it, `--from` not.\n";
  }
  out += "\n## Drain backlog peaks\n\n";
  bool any_drain = false;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& d = jb["drain_backlog"];
      if (!d.is_object()) continue;
      if (!any_drain) {
        out +=
            "The highest backlog of each drain in the period and when it was first seen.\n\n| "
            "tier | to | job | peak | peak_bytes | at | hours observed |\n| --- | --- | --- | "
            "---: | ---: | --- | ---: |\n";
      }
      any_drain = true;
      out += "| " + md_cell(t["tier"]) + " | " + md_cell(d["to_tier"]) + " | " +
             md_cell(jb["job"]) + " | " + bytes_or_dash(d["peak_bytes"]) + " | " +
             num(d["peak_bytes"]) + " | " + format_rfc3339(d["peak_at"].get<double>()) + " | " +
             num(d["hours_observed"]) + " |\n";
    }
  }
  if (!any_drain) out += "No drain observed in the period (or not known: `--from` has none).\n";
  out += "\n## GPU time lost to checkpoints\n\n";
  bool any_gpu = false;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& g = jb["gpu_cost"];
      if (!g.is_object()) continue;
      if (!any_gpu) {
        out +=
            "GPU-seconds lost while the period's checkpoints blocked training (known costs "
            "summed; unknown ones counted apart).\n\n| tier | job | lost GPU-seconds | "
            "checkpoints known | unknown |\n| --- | --- | ---: | ---: | ---: |\n";
      }
      any_gpu = true;
      out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) + " | " +
             num(g["lost_gpu_seconds"]) + " | " + num(g["checkpoints_known"]) + " | " +
             num(g["checkpoints_unknown"]) + " |\n";
    }
  }
  if (!any_gpu) {
    out += "No GPU history in the period (no GPU source, or not known: `--from` has none).\n";
  }
  out += "\n## Restore drills\n\n";
  bool any_drill = false;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& d = jb["restore_drills"];
      if (!d.is_object()) continue;
      if (!any_drill) {
        out +=
            "Scheduled restore drills that finished in the period (rules.md, \"Restore "
            "drills\"): ok = read it all within the job's recovery_time_objective.\n\n| tier | "
            "job | drills | ok | failed | slowest s | last | last s | last result |\n| --- | "
            "--- | ---: | ---: | ---: | ---: | --- | ---: | --- |\n";
      }
      any_drill = true;
      const json& l = d["last"];
      const std::string result = l["ok"].get<bool>()        ? std::string("ok")
                                 : l["failure"].is_string() ? l["failure"].get<std::string>()
                                                            : std::string("over the objective");
      out += "| " + md_cell(t["tier"]) + " | " + md_cell(jb["job"]) + " | " + num(d["drills"]) +
             " | " + num(d["ok"]) + " | " + num(d["failed"]) + " | " + num(d["slowest_seconds"]) +
             " | " + format_rfc3339(l["finished_at"].get<double>()) + " | " + num(l["seconds"]) +
             " | " + md_cell(result) + " |\n";
    }
  }
  if (!any_drill) {
    out +=
        "No restore drill in the period (no tier sets restore_drill, or not known: `--from` "
        "has none).\n";
  }
  out += "\n## Alerts fired\n\n";
  if (j["alerts"].empty())
    out += "None in the period (or not known: `--from` has no alert history).\n";
  else
    out +=
        "| alert | severity | tier | job | fired | for |\n| --- | --- | --- | --- | --- | ---: |\n";
  for (const json& a : j["alerts"]) {
    out += "| " + md_cell(a["alertname"]) + " | " + md_cell(a["severity"]) + " | " +
           md_cell(a["tier"]) + " | " + md_cell(a["job"]) + " | " + format_rfc3339(a["fired_at"]) +
           " | " + duration_words(a["duration_seconds"].get<double>()) +
           (a["resolved_at"].is_null() ? " (still firing)" : "") + " |\n";
  }
  out += "\n## Compliance: copies outside their allowed residency\n\n";
  const json c = j.value("compliance", json::object());
  if (!c.value("known", false)) {
    out +=
        "Not known: " + md_cell(c.value("reason", std::string("the source does not say"))) + ".\n";
  } else if (c["outside_residency"].empty()) {
    out += "None: every checkpoint committed in the period lay where its job's namespaces allow.\n";
  } else {
    out +=
        "Committed in the period, deleted ones included, on tiers whose residency the job's "
        "namespaces do not allow.\n\n| tier | residency | job | allowed | copies | bytes | "
        "first (step, committed) | last (step, committed) |\n| --- | --- | --- | --- | ---: | "
        "---: | --- | --- |\n";
    for (const json& x : c["outside_residency"]) {
      out += "| " + md_cell(x["tier"]) + " | " + md_cell(x["residency"]) + " | " +
             md_cell(x["job"]) + " | " +
             md_cell(join(x["allowed"].get<std::vector<std::string>>(), ", ")) + " | " +
             num(x["copies"]) + " | " + bytes_or_dash(x["bytes"]) + " | " + num(x["first_step"]) +
             ", " + format_rfc3339(x["first_committed_at"]) + " | " + num(x["last_step"]) + ", " +
             format_rfc3339(x["last_committed_at"]) + " |\n";
    }
  }
  return out;
}

// The steps after the source: every --tier asked for is known, there is
// history enough to fit, the findings; then the JSON every format renders.
std::optional<json> finish_report(Report& r, const std::vector<std::string>& tiers,
                                  double min_history_seconds, bool with_series,
                                  std::string* error) {
  for (const std::string& t : tiers) {
    if (std::none_of(r.tiers.begin(), r.tiers.end(),
                     [&](const TierReport& x) { return x.tier == t; })) {
      *error = "--tier: no history of tier \"" + t + "\" in " + r.source;
      return std::nullopt;
    }
  }
  if (!check_enough(r, min_history_seconds, error)) {
    *error = r.source + ": " + *error;
    return std::nullopt;
  }
  add_findings(r);
  return to_json(r, with_series);
}

// "a,b" of url-encoded names (a name may hold a comma): the list a
// GET /api/v1/report parameter carries.
std::string encode_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + url_encode(n);
  return out;
}

bool parse_report_query(const std::map<std::string, std::string>& query, double now,
                        ReportApiRequest* out, std::string* error) {
  ReportApiRequest q;
  TimeRange range;
  switch (parse_time_range(query, now, 30 * kDay, &range, error)) {
    case TimeRangeFault::kNone:
      break;
    case TimeRangeFault::kUnparsable:
      return false;
    case TimeRangeFault::kSinceInFuture:
    case TimeRangeFault::kUntilBeforeSince:
      // This route has always named both bounds in one message.
      *error = "since: " + format_rfc3339(range.since) + " must be before until (" +
               format_rfc3339(range.until) + ") and not in the future (now is " +
               format_rfc3339(now) + ")";
      return false;
  }
  q.since = range.since;
  q.until = range.until;
  auto value = [&](const char* key) {
    auto it = query.find(key);
    return it == query.end() ? std::string() : it->second;
  };
  if (const std::string m = value("min_history"); !m.empty()) {
    char* end = nullptr;
    q.min_history_seconds = std::strtod(m.c_str(), &end);
    if (end == m.c_str() || *end != '\0' || !std::isfinite(q.min_history_seconds) ||
        q.min_history_seconds < 0) {
      *error = "min_history: expected seconds, got \"" + m + "\"";
      return false;
    }
  }
  q.tiers = decode_list(value("tier"));
  q.jobs = decode_list(value("job"));
  q.with_series = value("series") == "1";
  *out = std::move(q);
  return true;
}

ReportApiAnswer report_api_answer(sql::Db& db, const ReportApiRequest& q,
                                  const std::vector<PlanInputs>& plan, const std::string& source,
                                  const std::vector<TierConfig>* tiers) {
  // The report's end is its now (as --now makes it for the CLI): fits and
  // "still firing" are judged there, whenever the daemon answers.
  const double at = q.until;
  ReportScope o;
  o.tiers = q.tiers;
  o.jobs = q.jobs;
  o.min_history_seconds = q.min_history_seconds;
  Report r;
  r.since = q.since;
  r.until = q.until;
  r.source = source;
  try {
    fill_from_db(db, o, r, at, tiers);
  } catch (const std::exception& e) {
    return {500, "{\"error\":" + json_quote(std::string("state database: ") + e.what()) + "}"};
  }
  fill_required(r, plan);
  std::string error;
  auto j = finish_report(r, o.tiers, o.min_history_seconds, q.with_series, &error);
  if (!j) return {400, "{\"error\":" + json_quote(error) + "}"};
  return {200, j->dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace ckptmon
