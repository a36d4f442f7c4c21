#include "tools/review/report_prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

// g++ 12 -Wnull-dereference false positive in basic_json::value<std::string>.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>
#pragma GCC diagnostic pop

#include "config/http_client_config.hpp"
#include "config/rules_config.hpp"
#include "http/http_client.hpp"
#include "prom/prometheus_api.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {

const PrometheusRecordingRule kReportRecordingRules[5] = {
    {"tier_training_job:ckpt_job_stored_bytes:sum",
     "sum by (tier, training_job) (ckpt_job_stored_bytes)"},
    {"tier:ckpt_tier_required_capacity_bytes:sum",
     "sum by (tier) (ckpt_tier_required_capacity_bytes and on (instance, tier) "
     "(ckpt_tier_shards > 1))"},
    {"tier_training_job:ckpt_cleanup_pending_bytes:sum",
     "sum by (tier, training_job) (ckpt_cleanup_pending_bytes)"},
    {"tier:ckpt_cleanup_oldest_age_seconds:max", "max by (tier) (ckpt_cleanup_oldest_age_seconds)"},
    {"tier_training_job:ckpt_partial_bytes:sum",
     "sum by (tier, training_job) (ckpt_partial_bytes)"},
};

double prometheus_step(double since, double until) {
  return std::max(1.0, std::ceil((until - since) / kPrometheusMaxPoints));
}

namespace {

struct Client {
  std::string flag, url_text;
  std::shared_ptr<const HttpClient> http;
  double timeout = 30;

  std::string where() const { return flag + " " + url_text; }

  // GET `target`; the body on 200, else false with the reason.
  bool get(const std::string& target, const std::string& what, std::string* body,
           std::string* error) const {
    HttpClientRequest req;
    req.target = target;
    req.timeout_seconds = timeout;
    req.max_body = std::size_t{64} * 1024 * 1024;
    HttpClientResponse g = http->fetch(std::move(req));
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

  bool instant(const std::string& query, double time, PromResponse* out, std::string* error) const {
    std::string body;
    const std::string what = "query " + query;
    if (!get(prometheus_query_target(query, time), what, &body, error)) return false;
    *out = parse_prometheus_response(body);
    if (!out->ok) {
      *error = where() + ": " + what + ": " + out->error;
      return false;
    }
    if (out->result_type != "vector") {
      *error = where() + ": " + what + ": a " + out->result_type + " answer, not a vector";
      return false;
    }
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

bool make_client(const PrometheusEndpoint& at, Client* c, std::string* error) {
  c->flag = at.flag;
  c->url_text = at.url;
  c->timeout = at.timeout_seconds;
  std::string e;
  auto u = parse_http_url(at.url, &e);
  if (!u) {
    *error = at.flag + ": " + e;
    return false;
  }
  c->http = std::make_shared<const HttpClient>(*u, at.client);
  if (!c->http->setup_error().empty()) {
    *error = c->where() + ": " + c->http->setup_error();
    return false;
  }
  return true;
}

// One instance's view of one tier at the plan's time.
struct InstanceTier {
  std::map<std::string, double> v;  // metric name -> value
  struct Job {
    std::optional<double> bytes, allocated, p90, retained;
  };
  std::map<std::string, Job> jobs;
  bool sharded() const {
    auto it = v.find("ckpt_tier_shards");
    return it != v.end() && it->second > 1;
  }
  std::optional<double> get(const char* name) const {
    auto it = v.find(name);
    if (it == v.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace

bool prometheus_history(const PrometheusEndpoint& at, double since, double until,
                        PrometheusHistory* out, std::string* error) {
  Client c;
  if (!make_client(at, &c, error)) return false;
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
      {"sum by (tier) (" + with_rule(kReportRecordingRules[2]) + ")", "cleanup_pending_bytes",
       false},
      {with_rule(kReportRecordingRules[3]), "cleanup_oldest_age_seconds", false},
      {"sum by (tier) (" + with_rule(kReportRecordingRules[4]) + ")", "partial_bytes", false},
      {"max by (tier, training_job) (ckpt_last_checkpoint_bytes)", "checkpoint_bytes", true},
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
  // ckptmon's alerts as Prometheus evaluated them (the shipped rule file),
  // or as the daemon's own evaluator exported them; one run per labels.
  const std::string alerts_query =
      "max by (alertname, severity, tier, training_job) (ALERTS{alertstate=\"firing\", "
      "alertname=~\"Checkpoint.*|Ckptmon.*\"}) or max by (alertname, severity, tier, "
      "training_job) (ckpt_alert)";
  if (!c.range(alerts_query, since, until, step, &alerts, error)) return false;
  for (const PromSeries& s : alerts.series) add_transitions(s, step, until, &out->transitions);
  std::stable_sort(out->transitions.begin(), out->transitions.end(),
                   [](const AlertTransition& a, const AlertTransition& b) { return a.at < b.at; });
  return true;
}

bool prometheus_plan_inputs(const PrometheusEndpoint& at, double time, const RulesPolicy& policy,
                            std::vector<PlanInputs>* out, std::vector<std::string>* notes,
                            std::string* error) {
  Client c;
  if (!make_client(at, &c, error)) return false;
  // (instance, tier) -> what that instance exports.
  std::map<std::pair<std::string, std::string>, InstanceTier> views;
  const char* tier_metrics[] = {"ckpt_tier_size_bytes",
                                "ckpt_tier_avail_bytes",
                                "ckpt_tier_shards",
                                "ckpt_tier_concurrent_jobs",
                                "ckpt_tier_residue_bytes",
                                "ckpt_tier_concurrent_writers",
                                "ckpt_tier_observed_write_bandwidth_bytes_per_second"};
  for (const char* m : tier_metrics) {
    PromResponse r;
    if (!c.instant(m, time, &r, error)) return false;
    for (const PromSeries& s : r.series) {
      const std::string tier = label(s, "tier");
      if (tier.empty() || s.values.empty() || !std::isfinite(s.values[0].v)) continue;
      views[{label(s, "instance"), tier}].v[m] = s.values[0].v;
    }
  }
  if (views.empty()) {
    *error = c.where() + ": no ckptmon series (ckpt_tier_size_bytes) at " + format_rfc3339(time) +
             ": is ckptmon scraped by this Prometheus?";
    return false;
  }
  struct JobQ {
    std::string query;
    std::optional<double> InstanceTier::Job::*field;
  };
  const JobQ job_queries[] = {
      {"ckpt_last_checkpoint_bytes", &InstanceTier::Job::bytes},
      {"ckpt_last_checkpoint_allocated_bytes", &InstanceTier::Job::allocated},
      {"quantile_over_time(0.9, ckpt_last_checkpoint_bytes[30d])", &InstanceTier::Job::p90},
      {"ckpt_job_retained_versions", &InstanceTier::Job::retained},
  };
  for (const JobQ& q : job_queries) {
    PromResponse r;
    if (!c.instant(q.query, time, &r, error)) return false;
    for (const PromSeries& s : r.series) {
      const std::string tier = label(s, "tier"), job = label(s, "training_job");
      if (tier.empty() || job.empty() || s.values.empty() || !std::isfinite(s.values[0].v))
        continue;
      auto it = views.find({label(s, "instance"), tier});
      if (it != views.end()) it->second.jobs[job].*q.field = s.values[0].v;
    }
  }

  std::set<std::string> missing;
  // One instance's figures as the rules code takes them.
  auto inputs_of = [&](const std::string& tier, const InstanceTier& v) {
    const TierPolicy& tp = policy.for_tier(tier);
    CapacityFigures cap;
    cap.tier = tier;
    const auto size = v.get("ckpt_tier_size_bytes");
    const auto avail = v.get("ckpt_tier_avail_bytes");
    cap.has_stats = size && avail;
    cap.size_bytes = size.value_or(0);
    cap.avail_bytes = avail.value_or(0);
    cap.concurrent_jobs = static_cast<std::int64_t>(v.get("ckpt_tier_concurrent_jobs").value_or(0));
    cap.concurrency_observed = tp.sizing.concurrent_jobs <= 0;
    cap.residue_bytes = v.get("ckpt_tier_residue_bytes").value_or(0);
    BandwidthFigures bw;
    bw.tier = tier;
    bw.concurrency_observed = tp.bandwidth.concurrent_writers <= 0;
    if (auto w = v.get("ckpt_tier_concurrent_writers")) {
      bw.concurrent_writers = static_cast<std::int64_t>(*w);
    } else {
      missing.insert("ckpt_tier_concurrent_writers (ckpt_tier_concurrent_jobs used)");
      bw.concurrent_writers = cap.concurrent_jobs;
    }
    bw.observed_bytes_per_second = v.get("ckpt_tier_observed_write_bandwidth_bytes_per_second");
    const double keep = static_cast<double>(std::max<std::int64_t>(1, tp.retention.keep_last));
    for (const auto& [name, j] : v.jobs) {
      if (!j.bytes) continue;
      JobCapacity jc;
      jc.job = name;
      jc.latest_bytes = static_cast<std::uint64_t>(std::max(0.0, *j.bytes));
      if (j.retained) {
        jc.retained_versions = *j.retained;
      } else {
        missing.insert("ckpt_job_retained_versions (the policy's keep_last used)");
        jc.retained_versions = keep;
      }
      cap.jobs.push_back(std::move(jc));
    }
    PlanInputs in = plan_inputs(cap, bw, {}, tp);
    for (PlanJob& pj : in.jobs) {
      const InstanceTier::Job& j = v.jobs.at(pj.job);
      pj.latest_allocated_bytes = j.allocated.value_or(0);
      pj.p90_bytes = j.p90.value_or(0);
    }
    return in;
  };

  std::map<std::string, std::vector<const InstanceTier*>> by_tier;
  for (const auto& [key, v] : views) by_tier[key.second].push_back(&v);
  for (const auto& [tier, list] : by_tier) {
    const bool sharded =
        std::any_of(list.begin(), list.end(), [](const InstanceTier* v) { return v->sharded(); });
    if (sharded) {
      // One file system, each shard exporting its own jobs: the tier's
      // figures are the shards' together.
      InstanceTier all;
      for (const InstanceTier* v : list) {
        for (const char* m : {"ckpt_tier_concurrent_jobs", "ckpt_tier_residue_bytes",
                              "ckpt_tier_concurrent_writers",
                              "ckpt_tier_observed_write_bandwidth_bytes_per_second"}) {
          if (auto x = v->get(m)) all.v[m] += *x;
        }
        for (const char* m : {"ckpt_tier_size_bytes", "ckpt_tier_avail_bytes"}) {
          auto x = v->get(m);
          if (!x) continue;
          auto it = all.v.find(m);
          if (it == all.v.end()) {
            all.v[m] = *x;
          } else {
            // The same file system seen at slightly different times: the
            // largest size and the least available space.
            it->second = std::string(m) == "ckpt_tier_size_bytes" ? std::max(it->second, *x)
                                                                  : std::min(it->second, *x);
          }
        }
        for (const auto& [name, j] : v->jobs) {
          InstanceTier::Job& t = all.jobs[name];
          if (!t.bytes || (j.bytes && *j.bytes > *t.bytes)) t = j;
        }
      }
      out->push_back(inputs_of(tier, all));
      continue;
    }
    // Node-local tiers: the same name, a file system per node; the node the
    // sizing rule asks most of.
    std::optional<PlanInputs> worst;
    double worst_required = -1;
    for (const InstanceTier* v : list) {
      PlanInputs in = inputs_of(tier, *v);
      const double required = make_plan(in, {}).terms.required_bytes;
      if (required > worst_required) {
        worst_required = required;
        worst = std::move(in);
      }
    }
    out->push_back(std::move(*worst));
  }
  for (const std::string& m : missing) notes->push_back("not exported, assumed: " + m);
  return true;
}

bool prometheus_client_config(const PrometheusClientFlags& f, HttpClientConfig* out,
                              std::string* error) {
  HttpClientConfig c;
  for (auto [flag, value, target] :
       {std::tuple{"--prometheus.ca-file", &f.ca_file, &c.tls.ca_file},
        std::tuple{"--prometheus.cert-file", &f.cert_file, &c.tls.cert_file},
        std::tuple{"--prometheus.key-file", &f.key_file, &c.tls.key_file},
        std::tuple{"--prometheus.basic-auth-password-file", &f.basic_auth_password_file,
                   &c.auth.password_file},
        std::tuple{"--prometheus.bearer-token-file", &f.bearer_token_file,
                   &c.auth.credentials_file}}) {
    if (value->empty()) continue;
    if (value->front() != '/') {
      // Relative paths would depend on where the command runs; the
      // configuration's *_file keys refuse them too.
      *error = std::string(flag) + ": expected an absolute path, got \"" + *value + "\"";
      return false;
    }
    *target = *value;
  }
  c.tls.server_name = f.server_name;
  c.tls.insecure_skip_verify = f.insecure_skip_verify;
  if (c.tls.cert_file.empty() != c.tls.key_file.empty()) {
    *error = "--prometheus.cert-file and --prometheus.key-file go together";
    return false;
  }
  if (!f.basic_auth_user.empty() && !f.bearer_token_file.empty()) {
    *error = "at most one of --prometheus.basic-auth-user and --prometheus.bearer-token-file";
    return false;
  }
  if (f.basic_auth_user.empty() != f.basic_auth_password_file.empty()) {
    *error = "--prometheus.basic-auth-user and --prometheus.basic-auth-password-file go together";
    return false;
  }
  c.auth.username = f.basic_auth_user;
  if (!f.bearer_token_file.empty()) c.auth.type = "Bearer";
  for (const std::string& h : f.headers) {
    const auto eq = h.find('=');
    if (eq == std::string::npos) {
      *error = "--prometheus.header: expected NAME=VALUE, got \"" + h + "\"";
      return false;
    }
    std::string name = h.substr(0, eq);
    std::string value = h.substr(eq + 1);
    if (std::string why = extra_header_error(name, value); !why.empty()) {
      *error = "--prometheus.header " + name;
      *error += ": ";
      *error += why;
      return false;
    }
    if (c.headers.size() >= kMaxExtraHeaders) {
      *error = "--prometheus.header: at most " + std::to_string(kMaxExtraHeaders) + " headers";
      return false;
    }
    c.headers.emplace_back(std::move(name), std::move(value));
  }
  *out = std::move(c);
  return true;
}

}  // namespace ckptmon
