#pragma once
// The alert table: every alert ckptmon ships is defined here once, with its
// name, group, severity and `for:` (the policy's, alerting.rules.<name>), the
// condition the daemon evaluates (in words), its Prometheus expression, its
// summary and description templates, and what PromQL cannot say the same way.
// From it come the daemon's evaluator (rules/alerts.cpp adds conditions by
// AlertId), the Prometheus rule file (`ckptmon alerts --format
// prometheus-rules` writes deploy/prometheus/ckptmon-alerts.yml, which
// scripts/gen-prometheusrule.py wraps into the PrometheusRule manifest) and
// the runbook's index (`--format runbook-index`). tests/integration/
// test_alert_table.py fails when any of them lacks an alert of the table or
// has one it does not. No I/O.
//
// Hysteresis in PromQL: an alert with a clear threshold fires on `fire` and
// stays active while `hold` is true of an instance that is already active
// (ALERTS{alertname=...}, pending or firing, joined on the instance's
// labels), which is what the daemon's kHold does. `hold` yields the same figure
// as `fire` (the annotations read $value from either).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/alert_id.hpp"
#include "model/policy.hpp"

namespace ckptmon {

// CkptmonStateWriteFailing fires after this many failed writes in a row
// (/-/ready fails from then on too).
inline constexpr std::uint64_t kStoreFailingAfter = 3;

// The Prometheus rule group an alert belongs to.
enum class AlertGroup : std::uint8_t { kDaemon, kCheckpoints, kGpu, kStoragePath };

struct AlertSpec {
  AlertId id;
  // Its name is its id's (model/alert_id.hpp), written once there.
  std::string_view name() const { return alert_name(id); }
  AlertGroup group;
  // The daemon evaluates it (alerting.rules.<name> configures it); false:
  // Prometheus only, with the `for:` and severity below.
  bool daemon;
  double for_seconds;  // Prometheus-only rows; a daemon row takes its rule's
  Severity severity;   // likewise
  // The labels that identify an instance in Prometheus (the hysteresis join).
  std::string_view scope;
  // What the daemon evaluates, in words (docs and `ckptmon alerts`).
  std::string_view condition;
  // PromQL with ${param} placeholders (alert_params): fires, and, when the
  // rule has a clear threshold, keeps an active alert active.
  std::string_view fire;
  std::string_view hold;
  std::string_view summary;  // Prometheus annotation templates, with ${param}s
  std::string_view description;
  // An annotation beyond summary, description and runbook_url; empty = none.
  std::string_view extra_annotation;
  std::string_view extra_annotation_value;
  // A YAML comment above the rule (one line per '\n'); empty = none.
  std::string_view comment;
  // Where the PromQL rule cannot judge as the daemon does; empty = same.
  std::string_view promql_differs;
};

// Every alert, daemon ones first in AlertId order.
std::span<const AlertSpec> alert_table();
const AlertSpec& alert_spec(AlertId id);

// The policy rule of a daemon alert (enabled, for, severity); nullptr for a
// Prometheus-only one.
const AlertRuleCommon* alert_rule(const AlertRules& rules, AlertId id);

// The threshold values the templates of `id` read, from the policy: name ->
// text ("7200", "2h").
std::vector<std::pair<std::string, std::string>> alert_params(const AlertRules& rules, AlertId id);

// Numbers as the alert texts and rules show them: the shortest form that
// reads back the same ("0.05", "3600"), "+Inf", "-Inf", "NaN"; a ratio as a
// percentage to one decimal ("97.5%").
std::string alert_number(double v);
std::string alert_percent(double ratio);

// "docs/runbook.md#checkpointtierdown".
std::string runbook_url(std::string_view base, std::string_view name);

// deploy/prometheus/ckptmon-alerts.yml for this policy (alerts disabled in it
// are left out, thresholds and `for:` are its own).
std::string render_prometheus_rules(const AlertingConfig& alerting);
// The runbook's index: a Markdown table, one row per alert.
std::string render_runbook_index(const AlertingConfig& alerting);
// One block per alert for people: name, severity, for, condition, PromQL.
std::string render_alert_listing(const AlertingConfig& alerting);

}  // namespace ckptmon
