#include "model/checkpoint.hpp"

namespace ckptmon {

std::string_view to_string(CkptState s) {
  switch (s) {
    case CkptState::kInProgress: return "in_progress";
    case CkptState::kCommitted: return "committed";
    case CkptState::kPartial: return "partial";
  }
  return "unknown";
}

std::optional<CkptState> ckpt_state_from(std::string_view s) {
  if (s == "in_progress") return CkptState::kInProgress;
  if (s == "committed") return CkptState::kCommitted;
  if (s == "partial") return CkptState::kPartial;
  return std::nullopt;
}

std::string_view to_string(Component c) {
  switch (c) {
    case Component::kModel: return "model";
    case Component::kOptimizer: return "optimizer";
    case Component::kRng: return "rng";
    case Component::kScheduler: return "scheduler";
    case Component::kMetadata: return "metadata";
    case Component::kOther: return "other";
  }
  return "other";
}

}  // namespace ckptmon
