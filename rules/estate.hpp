#pragma once
// The estate (docs/rules.md "Durability and copies"): the catalogs of every
// tier joined into versions, a version being one (job, step) and its copies
// the checkpoints the tiers hold of it. From the versions come the figures
// no single tier can give: the durable recovery point (the newest version
// with a restorable copy on a durable tier), the steps a node loss would
// cost, how long the newest commits have waited to become durable, and the
// versions with fewer complete durable copies than policy asks. Pure
// functions over the catalogs of one rules cycle; thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/access.hpp"
#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/policy.hpp"
#include "model/state.hpp"
#include "rules/inputs.hpp"
#include "rules/recovery.hpp"

namespace ckptmon {

// One tier's copy of a version: a checkpoint of the catalog, with what its
// tier and the integrity verifier say about it.
struct EstateCopy {
  const Checkpoint* checkpoint = nullptr;  // in the view the versions were joined from
  bool durable = false;                    // its tier survives the loss of a node
  bool deletion = false;                   // its tier is a deletion queue (role: deletion)
  bool source = false;                     // its tier drains to another (drains_to)
  bool verify_failed = false;              // the integrity verifier found it broken
  // A complete copy whose size differs from the version's first complete
  // copy (the earliest commit; on a tie, the one on a drain source, as a
  // copy keeps its source's times): flagged, not merged (it is not a copy of
  // the same bytes).
  bool mismatched = false;

  // Restorable from this tier: committed, not failed, not queued for deletion.
  bool restorable() const;
};

struct Version {
  std::string_view job;    // into the catalog's records
  std::int64_t step = -1;  // -1: the layout gives none; the version is then one path
  std::string_view path;   // set only when step is -1
  std::vector<EstateCopy> copies;
  // Derived by join_versions:
  bool restorable = false;           // some copy is restorable
  double commit_time = 0;            // earliest commit among restorable copies; 0 = unknown
  std::uint32_t durable_copies = 0;  // restorable, unmismatched copies on durable tiers
};

// Every version of the catalog, sorted by (job, step, path). Checkpoints on
// tiers not in `tiers` are left out. Memory: one Version per (job, step) and
// one EstateCopy per checkpoint, pointing into the records.
std::vector<Version> join_versions(const CheckpointView& checkpoints,
                                   const std::map<std::string, TierState>& tiers,
                                   const Verifications& verified);

struct DurabilityFigures {
  std::string job;
  EstateJobPolicy policy;  // estate.for_job(job)
  // The newest version with a restorable copy on a durable tier (restorable
  // false: there is none). Only meaningful when durable_known.
  RecoveryPoint durable;
  // False when this instance watches no durable tier: a durable copy may
  // exist where another instance looks, so every figure below is unknown,
  // not zero (ckptmon exports none of them).
  bool durable_known = false;
  // The recovery point's step minus the durable one's: what a node loss
  // would cost in steps (the whole step when nothing is durable). Unknown
  // when either point has no step.
  std::optional<std::int64_t> steps_at_risk;
  // How long the oldest restorable version newer than the durable point has
  // waited since its commit; 0 when every restorable version up to the
  // newest is durable. CheckpointRecoveryPointNotDurable fires past
  // policy.durable_within_seconds.
  double durable_lag_seconds = 0;
  // Restorable versions, and those of them committed more than
  // durable_within ago with fewer complete durable copies than
  // copies_required.
  std::uint64_t versions = 0;
  std::uint64_t versions_under_copied = 0;
  // Complete copies whose size differs from their version's first one.
  std::uint64_t mismatched_copies = 0;
};

// Lifecycle (drain.move_after): versions with a restorable copy on `tier`
// committed more than its move_after ago that have no restorable copy on
// the tier it drains to. One entry per (tier, job) with a restorable copy on
// a tier that has move_after and drains to a tier this instance watches
// (where the target is not watched, whether a copy is there is unknown).
struct LifecycleFigures {
  std::string tier;
  std::string job;
  std::string drains_to;
  double move_after_seconds = 0;
  std::uint64_t overdue = 0;
  std::int64_t oldest_overdue_step = -1;  // -1: none, or the layout gives no step
  double oldest_overdue_commit = 0;       // 0: none
};
std::vector<LifecycleFigures> evaluate_lifecycle(const std::vector<Version>& versions,
                                                 const std::map<std::string, TierState>& tiers,
                                                 const RulesPolicy& policy, double now);

// Residency follows every copy: a job's allowed residencies are those of the
// namespace rules that claim it (on every tier whose namespaces do: the first
// rule of a tier that matches, as the access audit picks it), intersected
// when several restrict it. Every copy of the job's versions on a tier whose
// `residency` is outside that set is a violation, whichever tier's rules
// said so and however the copy got there (a drain, a backup, a deletion
// queue).
struct ResidencyFigures {
  std::string tier;
  std::string job;
  std::string residency;             // the tier's label; empty: none configured
  std::vector<std::string> allowed;  // the job's allowed residencies, sorted
  std::uint64_t copies = 0;          // copies of the job's versions on the tier
  std::uint64_t violations = 0;      // of those, copies outside `allowed`
};
struct ResidencyResult {
  // One entry per (tier, job) with copies, for jobs some namespace rule
  // restricts (a job no rule restricts has nothing to violate: no series).
  std::vector<ResidencyFigures> figures;
  // One finding of kind residency per violating copy, naming the version,
  // the tier and its residency; at most kMaxFindingsPerTierJob per (tier,
  // job), the newest versions first (figures count them all). A copy whose
  // own tier's namespace rule already forbids the residency is left to that
  // tier's access audit, which reports the job directory.
  std::vector<AccessFinding> findings;
  static constexpr std::size_t kMaxFindingsPerTierJob = 100;
};
ResidencyResult evaluate_residency(const std::vector<Version>& versions,
                                   const std::map<std::string, TierState>& tiers);

// One entry per job of `recovery` (evaluate_recovery's, over the same
// checkpoints), sorted by job.
std::vector<DurabilityFigures> evaluate_durability(const std::vector<Version>& versions,
                                                   const std::vector<RecoveryPoint>& recovery,
                                                   const CheckpointView& checkpoints,
                                                   const std::map<std::string, TierState>& tiers,
                                                   const Verifications& verified,
                                                   const EstatePolicy& policy, double now);

}  // namespace ckptmon
