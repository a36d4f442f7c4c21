#include "model/settings.hpp"

namespace ckptmon {

std::string_view to_string(TierRole r) {
  switch (r) {
    case TierRole::kStaging:
      return "staging";
    case TierRole::kRapid:
      return "rapid";
    case TierRole::kMilestone:
      return "milestone";
    case TierRole::kCapacity:
      return "capacity";
    case TierRole::kDeletion:
      return "deletion";
  }
  return "unknown";
}

std::string_view to_string(GpuSourceKind k) {
  switch (k) {
    case GpuSourceKind::kNone:
      return "none";
    case GpuSourceKind::kNvml:
      return "nvml";
    case GpuSourceKind::kDcgm:
      return "dcgm";
    case GpuSourceKind::kPrometheus:
      return "prometheus";
  }
  return "none";
}

const TierConfig* Config::find_tier(std::string_view name) const {
  for (const auto& t : tiers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace ckptmon
