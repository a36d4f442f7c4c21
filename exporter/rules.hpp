#pragma once
// Renders the rules' figures, the firing alerts and the Alertmanager client's
// counters as Prometheus metric families. Pure functions of their inputs;
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "rules/alerts.hpp"
#include "rules/evaluate.hpp"

namespace ckptmon {

// What the Alertmanager notifier (serve/alertmanager_client.hpp) did, for the
// ckptmon_alertmanager_* families and its logs.
struct AlertmanagerStats {
  std::uint64_t posts_total = 0;        // POSTs finished, successful or not
  std::uint64_t post_errors_total = 0;  // of which failed (network, TLS, timeout, non-2xx)
  std::uint64_t alerts_sent_total = 0;  // alerts in accepted POSTs
  double last_success = 0;              // unix seconds of the last accepted POST; 0 = never
  std::string last_error;               // empty after a success
  bool in_flight = false;
};

// ckpt_drain_*, ckpt_tier_required_*/capacity/time_to_full/next_checkpoint_*,
// ckpt_job_next_checkpoint_*, ckpt_tier_*_write_bandwidth_*, ckpt_cleanup_*,
// ckpt_restorable_*. A figure that is unknown has no sample; one that is
// infinite (time to full of a tier that is not filling) is +Inf.
std::vector<prometheus::MetricFamily> rule_families(const RuleFigures& figures);

// ckpt_alert{alertname,severity,tier,job} 1 for each firing alert (empty
// labels left out), like Prometheus' ALERTS{alertstate="firing"}.
std::vector<prometheus::MetricFamily> alert_families(std::span<const AlertInstance> firing);

// ckptmon_alertmanager_* counters and the last success time.
std::vector<prometheus::MetricFamily> alertmanager_families(const AlertmanagerStats& stats);

// The rules cycle's own figures: ckptmon_rules_evaluations_total,
// ckptmon_rules_evaluation_errors_total, ckptmon_rules_evaluation_duration_seconds,
// ckptmon_rules_last_evaluation_timestamp_seconds, ckptmon_alerts_pending.
struct RulesCycleFigures {
  std::uint64_t cycles = 0;
  std::uint64_t errors = 0;
  double last_duration_seconds = 0;
  double evaluated_at = 0;
  std::size_t pending_alerts = 0;
};
void rules_cycle_families(const RulesCycleFigures& f, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
