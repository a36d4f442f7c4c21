#include "model/checkpoint.hpp"

namespace ckptmon {

std::string_view to_string(CkptState s) {
  switch (s) {
    case CkptState::kInProgress:
      return "in_progress";
    case CkptState::kCommitted:
      return "committed";
    case CkptState::kPartial:
      return "partial";
  }
  return "unknown";
}

std::optional<CkptState> ckpt_state_from(std::string_view s) {
  if (s == "in_progress") return CkptState::kInProgress;
  if (s == "committed") return CkptState::kCommitted;
  if (s == "partial") return CkptState::kPartial;
  return std::nullopt;
}

std::optional<Component> component_of_word(std::string_view w) {
  if (w.find("rng") != std::string::npos || w.find("random_states") != std::string::npos) {
    return Component::kRng;
  }
  if (w.find("scheduler") != std::string::npos || w.find("lr_sched") != std::string::npos) {
    return Component::kScheduler;
  }
  // HF Trainer and Accelerate: scaler.pt (torch.cuda.amp.GradScaler);
  // DeepSpeed/Lightning: grad_scaler / amp_scaler.
  if (w.find("scaler") != std::string::npos) return Component::kScaler;
  // Accelerate: sampler.bin, dl_state_dict.bin (StatefulDataLoader);
  // torchtitan/torchdata: dataloader*; NeMo: data_loader*.
  if (w.find("dataloader") != std::string::npos || w.find("data_loader") != std::string::npos ||
      w.starts_with("dl_state") || w.starts_with("sampler")) {
    return Component::kDataloader;
  }
  if (w.find("optim") != std::string::npos || w.find("opt_state") != std::string::npos) {
    return Component::kOptimizer;
  }
  if (w.find("model") != std::string::npos || w.find("weights") != std::string::npos ||
      w.find("params") != std::string::npos || w.ends_with(".safetensors")) {
    return Component::kModel;
  }
  return std::nullopt;
}

std::string_view to_string(Component c) {
  switch (c) {
    case Component::kModel:
      return "model";
    case Component::kOptimizer:
      return "optimizer";
    case Component::kRng:
      return "rng";
    case Component::kScheduler:
      return "scheduler";
    case Component::kMetadata:
      return "metadata";
    case Component::kOther:
      return "other";
    case Component::kScaler:
      return "scaler";
    case Component::kDataloader:
      return "dataloader";
  }
  return "other";
}

}  // namespace ckptmon

#include "model/access.hpp"

namespace ckptmon {

std::string_view to_string(FindingKind k) {
  switch (k) {
    case FindingKind::kWorldReadable:
      return "world_readable";
    case FindingKind::kWorldWritable:
      return "world_writable";
    case FindingKind::kForeignOwner:
      return "foreign_owner";
    case FindingKind::kOutsideNamespace:
      return "outside_namespace";
    case FindingKind::kResidency:
      return "residency";
    case FindingKind::kUnreadable:
      return "unreadable";
    case FindingKind::kTooDeep:
      return "too_deep";
    case FindingKind::kReadableOutsideProject:
      return "readable_outside_project";
    case FindingKind::kAclInvalid:
      return "acl_invalid";
    case FindingKind::kNotEncrypted:
      return "not_encrypted";
    case FindingKind::kCleanupUnverified:
      return "cleanup_unverified";
  }
  return "unknown";
}

FindingCounts count_by_kind(const std::vector<AccessFinding>& findings) {
  FindingCounts out{};
  for (const AccessFinding& f : findings) ++out[static_cast<std::size_t>(f.kind)];
  return out;
}

std::optional<FindingKind> finding_kind_from(std::string_view s) {
  for (int i = 0; i < kFindingKindCount; ++i) {
    auto k = static_cast<FindingKind>(i);
    if (to_string(k) == s) return k;
  }
  return std::nullopt;
}

}  // namespace ckptmon
