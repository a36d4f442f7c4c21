#pragma once
// Every alert ckptmon ships, by id and name: the names alerting.rules.<name>
// configures and the ALERTS series carry. The rest of each alert (group,
// severity, PromQL, templates) is the alert table's (rules/alert_table.hpp),
// which takes its names from here; config reads the rules by these names
// without depending on the rules layer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ckptmon {

enum class AlertId : std::uint8_t {
  // Evaluated by the daemon (and in PromQL).
  kDrainBacklogGrowing,
  kDrainTooSlow,
  kTierFillingUp,
  kTierAlmostFull,
  kNextWontFit,
  kPartial,
  kCleanupStalled,
  kRecoveryPointStale,
  kCompletionSkewHigh,
  kTierDown,
  kBandwidthShortfall,
  kStateWriteFailing,
  kStallingGpus,
  kGoodputLow,
  kWindowMissed,
  kRtoAtRisk,
  kRecoveryPointNotDurable,
  kUnderCopied,
  kIntegrityFailed,
  kTierInodesLow,
  kSavesFailing,
  kAccessFinding,
  kDeletionStalled,
  kOutsideAllowedResidency,
  kTierNotEncrypted,
  kRestoreDrillFailed,
  // In PromQL only: about ckptmon itself, which a dead or blind daemon cannot report.
  kCkptmonDown,
  kCollectorFailing,
  kConfigReloadFailed,
  kCatalogStale,
  kAlertmanagerUnreachable,
};

inline constexpr std::size_t kAlertCount = 31;

inline constexpr std::array<std::string_view, kAlertCount> kAlertNames{{
    "CheckpointDrainBacklogGrowing",
    "CheckpointDrainTooSlow",
    "CheckpointTierFillingUp",
    "CheckpointTierAlmostFull",
    "CheckpointNextWontFit",
    "CheckpointPartial",
    "CheckpointCleanupStalled",
    "CheckpointRecoveryPointStale",
    "CheckpointCompletionSkewHigh",
    "CheckpointTierDown",
    "CheckpointBandwidthShortfall",
    "CkptmonStateWriteFailing",
    "CheckpointStallingGPUs",
    "CheckpointGoodputLow",
    "CheckpointWindowMissed",
    "CheckpointRecoveryTimeObjectiveAtRisk",
    "CheckpointRecoveryPointNotDurable",
    "CheckpointUnderCopied",
    "CheckpointIntegrityFailed",
    "CheckpointTierInodesLow",
    "CheckpointSavesFailing",
    "CheckpointAccessFinding",
    "CheckpointDeletionStalled",
    "CheckpointOutsideAllowedResidency",
    "CheckpointTierNotEncrypted",
    "CheckpointRestoreDrillFailed",
    "CkptmonDown",
    "CkptmonCollectorFailing",
    "CkptmonConfigReloadFailed",
    "CkptmonCatalogStale",
    "CkptmonAlertmanagerUnreachable",
}};

constexpr std::string_view alert_name(AlertId id) {
  return kAlertNames[static_cast<std::size_t>(id)];
}

}  // namespace ckptmon
