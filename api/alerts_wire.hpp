#pragma once
// The alert wire formats: the GET /api/v1/alerts body and the Alertmanager v2
// POST body, rendered from the plain alert states the rules layer returns
// (rules/alerts.hpp). Label values go through the same sanitiser as the
// ckpt_alert series, so silences and routes match both. No I/O.

#include <span>
#include <string>

#include "rules/alerts.hpp"

namespace ckptmon {

// GET /api/v1/alerts body, shaped like Prometheus' own endpoint:
// {"status":"success","data":{"alerts":[{"labels":{...},"annotations":{...},
//  "state":"firing","activeAt":"...","value":"..."}]}}
std::string alerts_json(std::span<const AlertInstance> active);

// POST /api/v2/alerts body for Alertmanager: firing alerts with endsAt =
// now + 4 x resend interval (Alertmanager resolves them itself if the daemon
// stops sending), resolved ones with endsAt = when they resolved. Empty labels
// are left out.
std::string alertmanager_payload(std::span<const AlertInstance> firing,
                                 std::span<const AlertInstance> resolved, double now,
                                 double resend_interval_seconds, const std::string& generator_url);

}  // namespace ckptmon
