#pragma once
// `ckptmon report --prometheus URL` and `ckptmon plan --prometheus URL`: the
// fleet's Prometheus as a source. Range queries over ckptmon's own exported
// series (and the fleet recording rules of
// deploy/prometheus/ckptmon-recording-rules.yml where they are loaded) are
// turned into the same in-memory history `--state-dir` reads from SQLite
// (HistorySeries, AlertTransition), so both sources go through one report
// code path. Blocking HTTP (http/http_client.hpp, with the --prometheus.*
// flags' TLS, credentials and headers); one-shot commands only.

#include <map>
#include <string>
#include <vector>

#include "model/http_client_config.hpp"
#include "rules/alerts.hpp"
#include "rules/plan.hpp"
#include "store/history.hpp"

namespace ckptmon {

// Where and how to ask: `flag` ("--prometheus") and `url` name it in errors.
struct PrometheusEndpoint {
  std::string flag = "--prometheus";
  std::string url;
  HttpClientConfig client;  // from --prometheus.ca-file, .bearer-token-file, ...
  double timeout_seconds = 30;
};

// The --prometheus.* flags as given, before they are checked.
struct PrometheusClientFlags {
  std::string ca_file, cert_file, key_file, server_name;
  bool insecure_skip_verify = false;
  std::string basic_auth_user, basic_auth_password_file;
  std::string bearer_token_file;
  std::vector<std::string> headers;  // NAME=VALUE
};

// The client configuration of `flags`; false with `error` naming the flag
// (a header that is not NAME=VALUE or not allowed, a certificate without its
// key, both basic auth and a bearer token, a relative path).
bool prometheus_client_config(const PrometheusClientFlags& flags, HttpClientConfig* out,
                              std::string* error);

// The recording rules a Prometheus source uses, with the raw expression each
// falls back to where the rule is not loaded (or has no samples yet).
struct PrometheusRecordingRule {
  const char* record;
  const char* fallback;  // the rule's own expression over the raw series
};
extern const PrometheusRecordingRule kReportRecordingRules[5];

// Points per series of one range query: under Prometheus' 11,000 limit.
inline constexpr double kPrometheusMaxPoints = 10000;
// The step of a range query over [since, until]: at least 1 s, and no more
// than kPrometheusMaxPoints + 1 points.
double prometheus_step(double since, double until);

struct PrometheusHistory {
  // Per tier: size_bytes (max over instances), avail_bytes (min), used_bytes
  // (max of size - avail); per tier and training_job: stored_bytes (summed
  // over instances). As query_history() names them. Beyond what the state
  // database keeps: per tier cleanup_pending_bytes, partial_bytes (summed),
  // cleanup_oldest_age_seconds (max); per job checkpoint_bytes (the latest
  // committed checkpoint's size, max over instances).
  std::vector<HistorySeries> series;
  // ckptmon's alerts (ALERTS{alertstate="firing"} of the Checkpoint* and
  // Ckptmon* rules, else the daemon's own ckpt_alert) as firing/resolved
  // transitions, to the step's resolution; `job` is the training_job label.
  std::vector<AlertTransition> transitions;
  // Required capacity at the end of the period per tier: summed over the
  // shards of a sharded tier (one tier, one figure), the largest instance's
  // figure otherwise.
  std::map<std::string, double> required_bytes;
  double step = 0;
  // Recording rules not loaded in that Prometheus (the raw series were used).
  std::vector<std::string> missing_rules;
};

// Reads [since, until] from the Prometheus at `at`. False with `error`
// naming the flag and the URL (unreachable, a TLS or credential failure, an
// API error, not JSON).
bool prometheus_history(const PrometheusEndpoint& at, double since, double until,
                        PrometheusHistory* out, std::string* error);

// `plan --prometheus`: the plan inputs of every tier from the latest values
// at `time` of ckptmon's series (sizes, avail, per-job latest checkpoint and
// retained versions, concurrent jobs and writers, residue), with the sizing
// policy of `policy` (replicas, ratios, window: not exported). A sharded
// tier's shards are summed into one tier; of a tier several unsharded
// instances export (node-local tiers), the instance the rule asks most of.
// `notes` gets what was missing and assumed. False with `error` naming
// the flag and the URL.
bool prometheus_plan_inputs(const PrometheusEndpoint& at, double time, const RulesPolicy& policy,
                            std::vector<PlanInputs>* out, std::vector<std::string>* notes,
                            std::string* error);

}  // namespace ckptmon
