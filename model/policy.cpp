#include "model/policy.hpp"

#include <cmath>

namespace ckptmon {

double RestoreDrillPolicy::window_left_seconds(double now) const {
  if (!has_window()) return deadline_seconds;
  constexpr double kDay = 86400;
  const double into_day = std::fmod(std::fmod(now, kDay) + kDay, kDay);  // seconds after 00:00 UTC
  const double start = window_start_minute * 60.0;
  double end = window_end_minute * 60.0;
  double at = into_day;
  if (end < start) {  // wraps past midnight: measure from the start
    end += kDay;
    if (at < start) at += kDay;
  }
  if (at < start || at >= end) return 0;
  return std::min(deadline_seconds, end - at);
}

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

const TierPolicy& RulesPolicy::for_tier(const std::string& tier) const {
  static const TierPolicy kDefaults;
  auto it = tiers.find(tier);
  return it == tiers.end() ? kDefaults : it->second;
}

const EstateJobPolicy& EstatePolicy::for_job(const std::string& job) const {
  for (const EstateJobRule& r : jobs) {
    if (r.regex && std::regex_match(job, *r.regex)) return r.policy;
  }
  return defaults;
}

}  // namespace ckptmon
