#include "daemon/report_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "daemon/http_get.hpp"
#include "daemon/plan_command.hpp"
#include "daemon/report_prometheus.hpp"
#include "daemon/web.hpp"
#include "rules/alerts.hpp"
#include "rules/series.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

constexpr double kDay = 86400;
// A growth rate needs this many samples over at least this long.
constexpr std::size_t kMinSamples = 3;
constexpr double kMinSpanSeconds = 3600;

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

Trend trend_of(const std::vector<HistoryPoint>& pts, double now) {
  Trend t;
  t.samples = pts.size();
  if (pts.empty()) return t;
  t.span_seconds = pts.back().t - pts.front().t;
  if (pts.size() < kMinSamples || t.span_seconds < kMinSpanSeconds) return t;
  std::vector<Point> p;
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

json opt(const std::optional<double>& v) {
  if (!v) return nullptr;
  if (std::isinf(*v)) return *v > 0 ? "+Inf" : "-Inf";
  return *v;
}

struct TierReport {
  std::string tier;
  std::optional<double> size_bytes, avail_bytes, used_bytes;
  Trend used;                                  // growth of use
  Trend avail;                                 // for time to full
  std::optional<double> time_to_full_seconds;  // +Inf: not filling
  std::optional<double> required_bytes;        // the sizing rule now
  std::optional<double> headroom_bytes;        // size - required
  bool partial = false;                        // a shard's jobs only
  // Only where the source has their history (--prometheus); unknown otherwise.
  std::optional<double> cleanup_pending_bytes, cleanup_pending_peak_bytes;
  std::optional<double> cleanup_oldest_age_peak_seconds;
  std::optional<double> partial_bytes, partial_peak_bytes;
  struct Job {
    std::string job;
    std::optional<double> first_bytes, last_bytes, peak_bytes;
    Trend stored;
    std::optional<double> checkpoint_first_bytes, checkpoint_last_bytes;  // --prometheus
    Trend checkpoint;
  };
  std::vector<Job> jobs;
};

struct AlertFired {
  AlertLabels labels;
  double fired_at = 0;
  std::optional<double> resolved_at;  // nullopt: still firing
  std::string summary;
};

struct Report {
  double since = 0, until = 0;
  std::string source;
  std::vector<TierReport> tiers;
  std::vector<AlertFired> alerts;
  std::vector<std::string> findings;
};

std::string days_text(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f days", seconds / kDay);
  return buf;
}

std::string duration_words(double seconds) {
  char buf[64];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0f seconds", seconds);
  } else if (seconds < 2 * 3600) {
    std::snprintf(buf, sizeof buf, "%.0f minutes", seconds / 60);
  } else if (seconds < 2 * kDay) {
    std::snprintf(buf, sizeof buf, "%.1f hours", seconds / 3600);
  } else {
    return days_text(seconds);
  }
  return buf;
}

void add_findings(Report& r) {
  const double period_days = (r.until - r.since) / kDay;
  char period[32];
  std::snprintf(period, sizeof period, "%.0f-day", period_days);
  for (const TierReport& t : r.tiers) {
    if (t.time_to_full_seconds && std::isfinite(*t.time_to_full_seconds)) {
      r.findings.push_back(t.tier + " fills in " + days_text(*t.time_to_full_seconds) + " at the " +
                           period + " growth rate (" + human_bytes(*t.used.slope_per_day) +
                           " per day)");
    } else if (t.time_to_full_seconds) {
      r.findings.push_back(t.tier + " is not filling over the " + period + " period");
    }
    if (t.required_bytes && t.size_bytes && *t.required_bytes > *t.size_bytes) {
      r.findings.push_back("the sizing rule needs " +
                           human_bytes(*t.required_bytes - *t.size_bytes) + " more on " + t.tier +
                           (t.partial ? " (this shard's jobs alone)" : ""));
    }
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

void fill_tiers(Report& r, const std::vector<HistorySeries>& series, double now,
                const ReportCommandOptions& o) {
  std::map<std::string, TierReport> tiers;
  for (const HistorySeries& s : series) {
    if (!wanted(o.tiers, s.tier)) continue;
    TierReport& t = tiers[s.tier];
    t.tier = s.tier;
    if (s.points.empty()) continue;
    if (s.job.empty()) {
      const double last = s.points.back().v;
      if (s.series == "size_bytes") t.size_bytes = last;
      if (s.series == "avail_bytes") {
        t.avail_bytes = last;
        t.avail = trend_of(s.points, now);
        if (t.avail.slope_per_day && t.avail.fitted_now) {
          t.time_to_full_seconds = *t.avail.fitted_now <= 0 ? 0.0
                                   : *t.avail.slope_per_day >= 0
                                       ? std::numeric_limits<double>::infinity()
                                       : -*t.avail.fitted_now / (*t.avail.slope_per_day / kDay);
        }
      }
      if (s.series == "used_bytes") {
        t.used_bytes = last;
        t.used = trend_of(s.points, now);
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
    } else if (s.series == "checkpoint_bytes" && wanted(o.jobs, s.job)) {
      auto it = std::find_if(t.jobs.begin(), t.jobs.end(),
                             [&](const TierReport::Job& x) { return x.job == s.job; });
      if (it == t.jobs.end()) it = t.jobs.insert(t.jobs.end(), TierReport::Job{.job = s.job});
      it->checkpoint_first_bytes = s.points.front().v;
      it->checkpoint_last_bytes = s.points.back().v;
      it->checkpoint = trend_of(s.points, now);
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
      j.stored = trend_of(s.points, now);
    }
  }
  for (auto& [name, t] : tiers) r.tiers.push_back(std::move(t));
}

void fill_alerts(Report& r, const std::vector<AlertTransition>& transitions,
                 const ReportCommandOptions& o) {
  std::map<AlertLabels, std::size_t> open;
  for (const AlertTransition& t : transitions) {
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
      const TierPlan p = make_plan(in, {});
      t.required_bytes = p.terms.required_bytes;
      t.partial = in.shard_count > 1;
      if (t.size_bytes) t.headroom_bytes = *t.size_bytes - p.terms.required_bytes;
    }
  }
}

std::string not_enough(std::size_t samples, double span) {
  return "not enough history: " + std::to_string(samples) +
         (samples == 1 ? " sample" : " samples") + " over " + duration_words(span) +
         " (a growth rate needs at least " + std::to_string(kMinSamples) + " samples over 1 hour)";
}

bool check_enough(const Report& r, std::string* error) {
  std::size_t most = 0;
  double span = 0;
  for (const TierReport& t : r.tiers) {
    if (t.avail.slope_per_day) return true;
    if (t.avail.samples > most) {
      most = t.avail.samples;
      span = t.avail.span_seconds;
    }
  }
  *error = not_enough(most, span);
  return false;
}

bool from_state_dir(const ReportCommandOptions& o, Report& r, double now, std::string* error) {
  auto db = open_state_readonly(o.state_dir, error);
  if (!db) {
    *error = "--state-dir: " + *error;
    return false;
  }
  HistoryQuery q;
  q.since = r.since;
  q.until = r.until;
  q.max_points = std::numeric_limits<std::size_t>::max();
  try {
    const HistoryResult h = query_history(*db, q);
    fill_tiers(r, h.series, now, o);
    fill_alerts(r, load_alert_transitions(*db, r.since), o);
  } catch (const std::exception& e) {
    *error = "--state-dir " + o.state_dir + ": " + e.what();
    return false;
  }
  db.reset();
  if (auto in = plan_inputs_from_state_dir(o.state_dir, o.config_file, now, error)) {
    fill_required(r, *in);
  } else {
    return false;
  }
  return true;
}

bool get_json(const HttpUrl& url, const ReportCommandOptions& o, const std::string& target,
              json* doc, std::string* error) {
  HttpGetResult g = http_get(url, target, o.timeout_seconds);
  if (!g.ok) {
    *error = "--from " + o.from + ": " + g.error;
    return false;
  }
  if (g.status != 200) {
    *error = "--from " + o.from + ": GET " + target + " answered " + std::to_string(g.status) +
             ": " + std::string(trim(g.body.substr(0, 300)));
    return false;
  }
  *doc = json::parse(g.body, nullptr, false);
  if (doc->is_discarded()) {
    *error = "--from " + o.from + ": GET " + target + " did not answer JSON";
    return false;
  }
  return true;
}

bool from_daemon(const ReportCommandOptions& o, Report& r, double now, std::string* error) {
  std::string e;
  auto url = parse_http_url(o.from, &e);
  if (!url) {
    *error = "--from: " + e;
    return false;
  }
  // One point per step keeps the answer under the API's 11,000 points for
  // a handful of series; the coarsest stored resolution is the floor.
  char target[160];
  std::snprintf(target, sizeof target, "/api/v1/history?since=%.3f&until=%.3f&step=%.0f", r.since,
                r.until, std::max(300.0, (r.until - r.since) / 1000));
  json doc;
  if (!get_json(*url, o, target, &doc, error)) return false;
  std::vector<HistorySeries> series;
  try {
    for (const json& s : doc.at("series")) {
      HistorySeries hs;
      hs.tier = s.at("tier").get<std::string>();
      hs.job = s.at("job").is_string() ? s.at("job").get<std::string>() : "";
      hs.series = s.at("series").get<std::string>();
      for (const json& p : s.at("points")) hs.points.push_back({p.at(0), p.at(1)});
      series.push_back(std::move(hs));
    }
  } catch (const json::exception& ex) {
    *error = "--from " + o.from + ": /api/v1/history: " + ex.what();
    return false;
  }
  fill_tiers(r, series, now, o);
  json plan;
  if (!get_json(*url, o, "/api/v1/plan", &plan, error)) return false;
  std::vector<PlanInputs> inputs;
  for (const json& t : plan.value("tiers", json::array())) {
    if (auto in = plan_inputs_from_json(t.value("inputs", json::object()), &e)) {
      inputs.push_back(std::move(*in));
    }
  }
  fill_required(r, inputs);
  // Alert history is in the state database only: --from has none.
  return true;
}

// The fleet's Prometheus: the same history, alert transitions and required
// capacity, from range queries (daemon/report_prometheus.cpp).
bool from_prometheus(const ReportCommandOptions& o, Report& r, double now, std::string* error,
                     std::ostream& err) {
  PrometheusHistory h;
  if (!prometheus_history("--prometheus", o.prometheus, r.since, r.until, o.timeout_seconds, &h,
                          error)) {
    return false;
  }
  if (!h.missing_rules.empty()) {
    err << "ckptmon report: --prometheus " << o.prometheus
        << ": recording rules not loaded (deploy/prometheus/ckptmon-recording-rules.yml):";
    for (const std::string& m : h.missing_rules) err << " " << m;
    err << "; using the raw series they are recorded from\n";
  }
  fill_tiers(r, h.series, now, o);
  fill_alerts(r, h.transitions, o);
  for (TierReport& t : r.tiers) {
    auto it = h.required_bytes.find(t.tier);
    if (it == h.required_bytes.end()) continue;
    t.required_bytes = it->second;  // a sharded tier's shards summed: the whole tier
    if (t.size_bytes) t.headroom_bytes = *t.size_bytes - it->second;
  }
  return true;
}

// ---- rendering ----

json to_json(const Report& r) {
  json tiers = json::array();
  for (const TierReport& t : r.tiers) {
    json jobs = json::array();
    for (const TierReport::Job& j : t.jobs) {
      jobs.push_back({{"job", j.job},
                      {"first_stored_bytes", opt(j.first_bytes)},
                      {"last_stored_bytes", opt(j.last_bytes)},
                      {"peak_stored_bytes", opt(j.peak_bytes)},
                      {"growth_bytes_per_day", opt(j.stored.slope_per_day)},
                      {"growth_stderr_bytes_per_day", opt(j.stored.slope_stderr_per_day)},
                      {"checkpoint_first_bytes", opt(j.checkpoint_first_bytes)},
                      {"checkpoint_last_bytes", opt(j.checkpoint_last_bytes)},
                      {"checkpoint_growth_bytes_per_day", opt(j.checkpoint.slope_per_day)}});
    }
    tiers.push_back({{"tier", t.tier},
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
                     {"size_minus_required_bytes", opt(t.headroom_bytes)},
                     {"partial", t.partial},
                     {"cleanup_pending_bytes", opt(t.cleanup_pending_bytes)},
                     {"cleanup_pending_peak_bytes", opt(t.cleanup_pending_peak_bytes)},
                     {"cleanup_oldest_age_peak_seconds", opt(t.cleanup_oldest_age_peak_seconds)},
                     {"partial_bytes", opt(t.partial_bytes)},
                     {"partial_peak_bytes", opt(t.partial_peak_bytes)},
                     {"jobs", std::move(jobs)}});
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
  return {{"since", r.since}, {"until", r.until}, {"source", r.source},
          {"tiers", tiers},   {"alerts", alerts}, {"findings", r.findings}};
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
        if (k != "job") row("job", tier, jb["job"], k, v);
      }
    }
  }
  for (const json& a : j["alerts"]) {
    row("alert", a["tier"], a["job"], a["alertname"].get<std::string>() + ".duration_seconds",
        a["duration_seconds"]);
  }
  for (const json& f : j["findings"]) row("finding", "", "", "text", f);
  return out;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
  return out;
}

std::string bytes_or_dash(const json& v) {
  return v.is_number() ? human_bytes(v.get<double>()) : std::string("-");
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
  return out;
}

}  // namespace

int run_report_command(const ReportCommandOptions& o, const Clock& clock, std::ostream& out,
                       std::ostream& err) {
  const double now = o.now.value_or(clock.now());
  const int sources =
      (o.from.empty() ? 0 : 1) + (o.state_dir.empty() ? 0 : 1) + (o.prometheus.empty() ? 0 : 1);
  if (sources != 1) {
    err << "ckptmon report: give one source: --from http://host:port, --state-dir DIR or "
           "--prometheus http://host:9090\n";
    return 2;
  }
  if (o.format != "markdown" && o.format != "csv" && o.format != "json") {
    err << "ckptmon report: --format: expected markdown, csv or json, got \"" << o.format << "\"\n";
    return 2;
  }
  Report r;
  auto since = parse_time_arg(o.since, now);
  if (!since) {
    err << "ckptmon report: --since: expected a duration before now (30d) or unix seconds, got \""
        << o.since << "\"\n";
    return 2;
  }
  if (*since > now) {
    err << "ckptmon report: --since: " << format_rfc3339(*since) << " is in the future (now is "
        << format_rfc3339(now) << ")\n";
    return 2;
  }
  r.since = *since;
  r.until = now;
  r.source = !o.from.empty()         ? o.from
             : !o.prometheus.empty() ? "Prometheus " + o.prometheus
                                     : "state directory " + o.state_dir;
  if (o.progress) err << "ckptmon report: reading " << r.source << " ...\r" << std::flush;
  std::string error;
  const bool ok = !o.from.empty()         ? from_daemon(o, r, now, &error)
                  : !o.prometheus.empty() ? from_prometheus(o, r, now, &error, err)
                                          : from_state_dir(o, r, now, &error);
  if (o.progress) err << std::string(60, ' ') << "\r" << std::flush;
  if (!ok) {
    err << "ckptmon report: " << error << "\n";
    return 2;
  }
  for (const std::string& t : o.tiers) {
    if (std::none_of(r.tiers.begin(), r.tiers.end(),
                     [&](const TierReport& x) { return x.tier == t; })) {
      err << "ckptmon report: --tier: no history of tier \"" << t << "\" in " << r.source << "\n";
      return 2;
    }
  }
  if (!check_enough(r, &error)) {
    err << "ckptmon report: " << r.source << ": " << error << "\n";
    return 2;
  }
  add_findings(r);
  const json j = to_json(r);
  std::string text = o.format == "json"
                         ? j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"
                     : o.format == "csv" ? to_csv(j)
                                         : to_markdown(j);
  if (o.output.empty()) {
    out << text;
    return 0;
  }
  std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) {
    err << "ckptmon report: --output " << o.output << ": cannot write\n";
    return 2;
  }
  return 0;
}

}  // namespace ckptmon
