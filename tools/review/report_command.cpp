#include "tools/review/report_command.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "api/report_render.hpp"
#include "api/time_range.hpp"
#include "http/http_client.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "tools/review/plan_command.hpp"
#include "tools/review/report_prometheus.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

bool from_state_dir(const ReportCommandOptions& o, Report& r, double now, std::string* error) {
  auto db = open_state_readonly(o.state_dir, error);
  if (!db) {
    *error = "--state-dir: " + *error;
    return false;
  }
  std::optional<Config> cfg;
  if (!o.config_file.empty() && !load_policy(o.config_file, &cfg, error)) return false;
  try {
    fill_from_db(*db, o, r, now, cfg ? &cfg->tiers : nullptr);
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
  HttpClientResponse g = http_get(url, target, o.timeout_seconds);
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

// A daemon older than GET /api/v1/report: its history API and plan only.
bool from_daemon_history(const ReportCommandOptions& o, Report& r, double now, std::string* error) {
  std::string e;
  auto url = parse_http_url(o.from, &e);
  if (!url) {
    *error = "--from: " + e;
    return false;
  }
  // One point per step keeps the answer under the API's 11,000 points for
  // a handful of series; the coarsest stored resolution is the floor.
  char target[160];
  static_cast<void>(std::snprintf(target, sizeof target,
                                  "/api/v1/history?since=%.3f&until=%.3f&step=%.0f", r.since,
                                  r.until, std::max(300.0, (r.until - r.since) / 1000)));
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
  fill_required(r, plan_inputs_of_plan(plan));
  // Alert history is in the state database only: --from has none.
  r.compliance.unknown_reason = "not known from a daemon without GET /api/v1/report";
  return true;
}

// The fleet's Prometheus: the same history, alert transitions and required
// capacity, from range queries (tools/review/report_prometheus.cpp).
bool from_prometheus(const ReportCommandOptions& o, Report& r, double now, std::string* error,
                     std::ostream& err) {
  PrometheusHistory h;
  if (!prometheus_history({"--prometheus", o.prometheus, o.prometheus_client, o.timeout_seconds},
                          r.since, r.until, &h, error)) {
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
  r.compliance.unknown_reason =
      "needs the checkpoint history: --state-dir or --from has it, --prometheus not "
      "(ckpt_residency_violations has the counts as they were scraped)";
  for (TierReport& t : r.tiers) {
    auto it = h.required_bytes.find(t.tier);
    if (it == h.required_bytes.end()) continue;
    t.required_bytes = it->second;  // a sharded tier's shards summed: the whole tier
    t.required_from_history = true;
    if (t.size_bytes) t.headroom_bytes = *t.size_bytes - it->second;
  }
  return true;
}

// `report --from`: the daemon builds the report from its own state database
// (GET /api/v1/report), so --from and --state-dir give the same figures; a
// daemon without that route (404) is asked for its history and plan only.
// Sets `*done` with the finished JSON when the daemon built it.
bool from_daemon(const ReportCommandOptions& o, Report& r, double now, std::optional<json>* done,
                 std::string* error) {
  std::string e;
  auto url = parse_http_url(o.from, &e);
  if (!url) {
    *error = "--from: " + e;
    return false;
  }
  char range[96];
  static_cast<void>(std::snprintf(range, sizeof range, "since=%.3f&until=%.3f", r.since, r.until));
  std::string target = std::string("/api/v1/report?") + range +
                       "&min_history=" + std::to_string(o.min_history_seconds) +
                       (o.format == "html" ? "&series=1" : "");
  if (!o.tiers.empty()) target += "&tier=" + url_encode(encode_list(o.tiers));
  if (!o.jobs.empty()) target += "&job=" + url_encode(encode_list(o.jobs));
  HttpClientResponse g = http_get(*url, target, o.timeout_seconds);
  if (!g.ok) {
    *error = "--from " + o.from + ": " + g.error;
    return false;
  }
  if (g.status == 404) return from_daemon_history(o, r, now, error);
  json doc = json::parse(g.body, nullptr, false);
  if (g.status != 200) {
    const std::string why =
        !doc.is_discarded() && doc.is_object() && doc.contains("error") && doc["error"].is_string()
            ? doc["error"].get<std::string>()
            : std::string(trim(g.body.substr(0, 300)));
    *error = "--from " + o.from + ": GET /api/v1/report answered " + std::to_string(g.status) +
             ": " + why;
    return false;
  }
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("tiers")) {
    *error = "--from " + o.from + ": GET /api/v1/report did not answer a report";
    return false;
  }
  doc["source"] = r.source;
  *done = std::move(doc);
  return true;
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
  if (o.format != "markdown" && o.format != "csv" && o.format != "json" && o.format != "html") {
    err << "ckptmon report: --format: expected markdown, csv, json or html, got \"" << o.format
        << "\"\n";
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
  std::optional<json> done;
  const bool ok = !o.from.empty()         ? from_daemon(o, r, now, &done, &error)
                  : !o.prometheus.empty() ? from_prometheus(o, r, now, &error, err)
                                          : from_state_dir(o, r, now, &error);
  if (o.progress) err << std::string(60, ' ') << "\r" << std::flush;
  if (!ok) {
    err << "ckptmon report: " << error << "\n";
    return 2;
  }
  if (!done) done = finish_report(r, o.tiers, o.min_history_seconds, o.format == "html", &error);
  if (!done) {
    err << "ckptmon report: " << error << "\n";
    return 2;
  }
  const json& j = *done;
  std::string text = o.format == "html" ? report_html(j)
                     : o.format == "json"
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
