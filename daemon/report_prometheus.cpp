#include "daemon/report_prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "collectors/prometheus_api.hpp"
#include "config/rules_config.hpp"
#include "daemon/http_get.hpp"
#include "util/text.hpp"

namespace ckptmon {

const PrometheusRecordingRule kReportRecordingRules[2] = {
    {"tier_training_job:ckpt_job_stored_bytes:sum",
     "sum by (tier, training_job) (ckpt_job_stored_bytes)"},
    {"tier:ckpt_tier_required_capacity_bytes:sum",
     "sum by (tier) (ckpt_tier_required_capacity_bytes and on (instance, tier) "
     "(ckpt_tier_shards > 1))"},
};

double prometheus_step(double since, double until) {
  return std::max(1.0, std::ceil((until - since) / kPrometheusMaxPoints));
}

namespace {

struct Client {
  std::string flag, url_text;
  HttpUrl url;
  double timeout = 30;

  std::string where() const { return flag + " " + url_text; }

  // GET `target`; the body on 200, else false with the reason.
  bool get(const std::string& target, const std::string& what, std::string* body,
           std::string* error) const {
    HttpGetResult g = http_get(url, target, timeout, 64 * 1024 * 1024);
    if (!g.ok) {
      *error = where() + ": " + g.error;
      return false;
    }
    if (g.status != 200) {
      // The API's error answers are JSON with errorType and error.
      PromResponse r = parse_prometheus_response(g.body);
      *error = where() + ": " + what + ": answered " + std::to_string(g.status) + ": " +
               (r.error.empty() || r.error == "the answer is not JSON"
                    ? std::string(trim(g.body.substr(0, 200)))
                    : r.error) +
               (g.status == 404 ? " (not a Prometheus HTTP API at this URL?)" : "");
      return false;
    }
    *body = std::move(g.body);
    return true;
  }

  bool range(const std::string& query, double since, double until, double step, PromResponse* out,
             std::string* error) const {
    std::string body;
    const std::string what = "query_range " + query;
    if (!get(prometheus_query_range_target(query, since, until, step), what, &body, error))
      return false;
    *out = parse_prometheus_response(body);
    if (!out->ok) {
      *error = where() + ": " + what + ": " + out->error;
      return false;
    }
    if (out->result_type != "matrix") {
      *error = where() + ": " + what + ": a " + out->result_type + " answer, not a matrix";
      return false;
    }
    return true;
  }
};

std::string label(const PromSeries& s, const char* name) {
  auto it = s.metric.find(name);
  return it == s.metric.end() ? std::string() : it->second;
}

// Samples as history points; NaN (unknown) is left out, not zeroed.
std::vector<HistoryPoint> points_of(const PromSeries& s) {
  std::vector<HistoryPoint> out;
  out.reserve(s.values.size());
  for (const PromSample& p : s.values) {
    if (std::isfinite(p.v)) out.push_back({p.t, p.v});
  }
  return out;
}

// The recording rules loaded in that Prometheus (GET /api/v1/rules).
bool loaded_rules(const Client& c, std::set<std::string>* out, std::string* error) {
  std::string body;
  if (!c.get("/api/v1/rules?type=record", "/api/v1/rules", &body, error)) return false;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("status", "") != "success") {
    *error = c.where() + ": /api/v1/rules: " +
             (j.is_discarded() ? std::string("the answer is not JSON")
                               : std::string("not a rules answer"));
    return false;
  }
  try {
    for (const auto& g : j.at("data").at("groups")) {
      for (const auto& r : g.at("rules")) {
        if (r.value("type", "") == "recording") out->insert(r.at("name").get<std::string>());
      }
    }
  } catch (const nlohmann::json::exception&) {
    *error = c.where() + ": /api/v1/rules: not a rules answer";
    return false;
  }
  return true;
}

// Firing runs of each ALERTS series: a gap longer than 1.5 steps ends a run.
void add_transitions(const PromSeries& s, double step, double until,
                     std::vector<AlertTransition>* out) {
  AlertTransition t;
  t.labels = {label(s, "alertname"), label(s, "severity"), label(s, "tier"),
              label(s, "training_job")};
  const std::vector<HistoryPoint> pts = points_of(s);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (i == 0 || pts[i].t - pts[i - 1].t > 1.5 * step) {
      if (i > 0) {
        t.from = AlertState::kFiring;
        t.to = AlertState::kInactive;
        t.at = pts[i - 1].t + step;
        out->push_back(t);
      }
      t.from = AlertState::kPending;
      t.to = AlertState::kFiring;
      t.at = pts[i].t;
      out->push_back(t);
    }
  }
  if (!pts.empty() && pts.back().t + 1.5 * step < until) {
    t.from = AlertState::kFiring;
    t.to = AlertState::kInactive;
    t.at = pts.back().t + step;
    out->push_back(t);
  }
}

}  // namespace

bool prometheus_history(const std::string& flag, const std::string& url, double since, double until,
                        double timeout_seconds, PrometheusHistory* out, std::string* error) {
  Client c;
  c.flag = flag;
  c.url_text = url;
  c.timeout = timeout_seconds;
  std::string e;
  auto u = parse_http_url(url, &e);
  if (!u) {
    *error = flag + ": " + e;
    return false;
  }
  if (u->tls) {
    *error = flag + " " + url + ": https:// is not supported here; use http://";
    return false;
  }
  c.url = *u;
  std::set<std::string> rules;
  if (!loaded_rules(c, &rules, error)) return false;
  for (const PrometheusRecordingRule& r : kReportRecordingRules) {
    if (!rules.contains(r.record)) out->missing_rules.push_back(r.record);
  }
  const double step = prometheus_step(since, until);
  out->step = step;
  // The recorded series where the rule has samples, else the rule's own
  // expression over the raw series (`or` per sample).
  auto with_rule = [](const PrometheusRecordingRule& r) {
    return std::string(r.record) + " or " + r.fallback;
  };
  struct Q {
    std::string query;
    const char* series;
    bool per_job;
  };
  const Q tier_queries[] = {
      {"max by (tier) (ckpt_tier_size_bytes)", "size_bytes", false},
      {"min by (tier) (ckpt_tier_avail_bytes)", "avail_bytes", false},
      {"max by (tier) (ckpt_tier_size_bytes - ckpt_tier_avail_bytes)", "used_bytes", false},
      {with_rule(kReportRecordingRules[0]), "stored_bytes", true},
  };
  std::map<std::tuple<std::string, std::string, std::string>, HistorySeries> by_key;
  for (const Q& q : tier_queries) {
    PromResponse r;
    if (!c.range(q.query, since, until, step, &r, error)) return false;
    for (const PromSeries& s : r.series) {
      HistorySeries h;
      h.tier = label(s, "tier");
      h.job = q.per_job ? label(s, "training_job") : "";
      h.series = q.series;
      h.points = points_of(s);
      if (h.tier.empty() || (q.per_job && h.job.empty()) || h.points.empty()) continue;
      by_key[{h.tier, h.job, h.series}] = std::move(h);
    }
  }
  for (auto& [k, h] : by_key) out->series.push_back(std::move(h));

  // Required capacity: the shards' sum for a sharded tier, the largest
  // instance's figure for the others.
  PromResponse req;
  const std::string req_query =
      with_rule(kReportRecordingRules[1]) +
      " or max by (tier) (ckpt_tier_required_capacity_bytes unless on (instance, tier) "
      "(ckpt_tier_shards > 1))";
  if (!c.range(req_query, since, until, step, &req, error)) return false;
  for (const PromSeries& s : req.series) {
    const auto pts = points_of(s);
    if (!label(s, "tier").empty() && !pts.empty())
      out->required_bytes[label(s, "tier")] = pts.back().v;
  }

  PromResponse alerts;
  if (!c.range("ALERTS{alertstate=\"firing\"}", since, until, step, &alerts, error)) return false;
  for (const PromSeries& s : alerts.series) add_transitions(s, step, until, &out->transitions);
  std::stable_sort(out->transitions.begin(), out->transitions.end(),
                   [](const AlertTransition& a, const AlertTransition& b) { return a.at < b.at; });
  return true;
}

}  // namespace ckptmon
