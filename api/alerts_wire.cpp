#include "api/alerts_wire.hpp"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "prom/sample_value.hpp"
#include "util/label.hpp"
#include "util/metric_labels.hpp"
#include "util/time_format.hpp"

namespace ckptmon {
namespace {

nlohmann::json labels_json(const AlertLabels& l) {
  nlohmann::json j = nlohmann::json::object();
  j["alertname"] = l.alertname;
  if (!l.severity.empty()) j["severity"] = label_value(l.severity);
  // The same values as the ckpt_alert series, so silences and routes match both.
  if (!l.tier.empty()) j["tier"] = label_value(l.tier);
  if (!l.job.empty()) j[kTrainingJobLabel] = label_value(l.job);
  return j;
}

nlohmann::json annotations_json(const AlertInstance& a) {
  nlohmann::json j = {
      {"summary", a.summary}, {"description", a.description}, {"runbook_url", a.runbook_url}};
  for (const auto& [k, v] : a.annotations) j[k] = v;
  return j;
}

}  // namespace

std::string alerts_json(std::span<const AlertInstance> active) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const AlertInstance& a : active) {
    alerts.push_back({{"labels", labels_json(a.labels)},
                      {"annotations", annotations_json(a)},
                      {"state", std::string(to_string(a.state))},
                      {"activeAt", format_rfc3339(a.active_at)},
                      {"value", prom_value(a.value)}});
  }
  nlohmann::json doc = {{"status", "success"}, {"data", {{"alerts", std::move(alerts)}}}};
  // Labels and texts come from outside (job and tier names): never throw on bad UTF-8.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string alertmanager_payload(std::span<const AlertInstance> firing,
                                 std::span<const AlertInstance> resolved, double now,
                                 double resend_interval_seconds, const std::string& generator_url) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](const AlertInstance& a, double ends_at) {
    nlohmann::json j = {{"labels", labels_json(a.labels)},
                        {"annotations", annotations_json(a)},
                        {"startsAt", format_rfc3339(a.fired_at > 0 ? a.fired_at : a.active_at)},
                        {"endsAt", format_rfc3339(ends_at)}};
    if (!generator_url.empty()) j["generatorURL"] = generator_url;
    out.push_back(std::move(j));
  };
  for (const AlertInstance& a : firing) add(a, now + 4 * resend_interval_seconds);
  for (const AlertInstance& a : resolved) add(a, a.resolved_at > 0 ? a.resolved_at : now);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ckptmon
