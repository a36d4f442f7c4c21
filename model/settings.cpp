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

void stamp_generation(Config& next, const Config* previous) {
  next.generation = (previous != nullptr ? previous->generation : 0) + 1;
  for (auto& t : next.tiers) {
    const TierConfig* before = previous != nullptr ? previous->find_tier(t.name) : nullptr;
    // The one place a tier's root is compared: it defines the tier's identity.
    t.generation =
        before != nullptr && before->path == t.path ? before->generation : next.generation;
  }
}

}  // namespace ckptmon
