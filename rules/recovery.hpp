#pragma once
// Recovery point per job: the newest checkpoint that can be restored from any
// tier. Pure functions; thread-safe.

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "rules/inputs.hpp"

namespace ckptmon {

struct RecoveryPoint {
  std::string job;
  bool restorable = false;  // false: the job has checkpoints but none restorable
  std::int64_t step = -1;
  // Commit time of the restorable state: the earliest copy of that step, so a
  // copy drained later does not make the recovery point look younger.
  double timestamp = 0;
  std::string tier;  // the tier holding that earliest copy
  std::string path;
  bool verified = false;           // some copy passed integrity verification
  std::vector<std::string> tiers;  // every tier with a restorable copy of the step, sorted
  // Every copy of the step is a record kept from an earlier walk because its
  // directory cannot be read now (Checkpoint::unreadable): the point is kept,
  // but stale: nothing vouches that it is still there.
  bool unreadable = false;
  // Newest and oldest write of any checkpoint of the job, any state, any
  // tier: tells a job that still checkpoints from one that stopped.
  double last_activity = 0;
  double first_activity = 0;
};

// One entry per job in the catalog, sorted by job. A committed checkpoint is
// restorable unless a verification result says it failed; checkpoints on
// `skip_tiers` (deletion tiers) never count. Newest means highest step when
// every restorable checkpoint of the job has one, else latest commit time.
std::vector<RecoveryPoint> evaluate_recovery(const CheckpointView& all,
                                             const Verifications& verified,
                                             const std::set<std::string>& skip_tiers);

}  // namespace ckptmon
