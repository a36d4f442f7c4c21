#include "model/policy.hpp"

namespace ckptmon {

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
