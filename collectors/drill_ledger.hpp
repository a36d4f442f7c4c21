#pragma once
// The drill ledger: where the scheduled restore drills keep their results,
// so a restart neither forgets when each job was last drilled nor drills it
// again at once. Declared here, implemented by the store
// (store/drill_ledger.hpp), injected by the daemon. Every method blocks
// until its read or write is done (worker threads only) and throws when it
// fails.

#include <vector>

#include "model/restore_drill.hpp"

namespace ckptmon {

class DrillLedger {
 public:
  virtual ~DrillLedger() = default;
  // The newest drill of every (tier, job) stored.
  virtual std::vector<DrillRecord> load() = 0;
  // Keeps `r` (one transaction); older drills of its (tier, job) past the
  // newest kDrillsKept are dropped.
  virtual void record(const DrillRecord& r) = 0;
  // Up to `limit` drills finished at or after `since` (unix seconds), oldest
  // first, for `ckptmon report`.
  virtual std::vector<DrillRecord> since(double since, std::size_t limit) = 0;

  static constexpr std::size_t kDrillsKept = 100;
};

}  // namespace ckptmon
