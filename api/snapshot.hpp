#pragma once
// What scrapes and the API read: the State as published, with what the last
// rules cycle produced. Every view in api/ is a function of a Snapshot; the
// loop (serve/publisher.hpp SnapshotPublisher, serve/rules_cycle.hpp) makes
// them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/access.hpp"
#include "model/state.hpp"
#include "rules/alerts.hpp"
#include "rules/evaluate.hpp"
#include "rules/plan.hpp"

namespace ckptmon {

// What one cycle produced, published with the snapshot. Immutable once made.
// One job's GPU cost as the landing page and /api/v1/jobs show it.
struct GpuJobSummary {
  std::size_t gpus = 0;
  double lost_total = 0;  // GPU-seconds lost to checkpoints since start
  std::uint64_t joined = 0;
  std::uint64_t unknown = 0;
  // The newest checkpoint with a known cost.
  std::optional<std::int64_t> last_step;
  std::optional<double> last_lost, last_during, last_baseline, last_drop;
};

// One job's recovery points as the landing page and /api/v1/jobs show them:
// the newest restorable copy anywhere and the newest on a durable tier.
struct JobRecoverySummary {
  RecoveryPoint any;
  DurabilityFigures durability;
};

struct RulesOutput {
  std::string metrics_text;  // rule, alert, Alertmanager and ckptmon_rules_* families
  std::map<std::string, GpuJobSummary> gpu_jobs;       // by job; empty while gpu.source is none
  std::map<std::string, JobRecoverySummary> recovery;  // by job, every job with checkpoints
  std::vector<AlertInstance> active;    // pending and firing alerts, sorted by labels
  std::string alerts_json;              // GET /api/v1/alerts body: alerts_json(active)
  std::string plan_json;                // GET /api/v1/plan body (tools/review/plan_command.hpp)
  std::vector<PlanInputs> plan_inputs;  // what plan_json was made from (GET /api/v1/report)
  // Window I/O and slow verdict per catalog entry, for /api/v1/checkpoints.
  std::shared_ptr<const std::map<CheckpointKey, CheckpointStoragePath>> storage_path;
  // The estate's findings (RuleFigures::estate_findings) by tier, with an
  // entry, empty or not, for every tier evaluated; GET /api/v1/findings and
  // the audit log show them beside the walks' own.
  std::map<std::string, std::shared_ptr<const std::vector<AccessFinding>>> estate_findings;
  double evaluated_at = 0;  // the injected clock's now of the cycle
};

// The State as it was when published, with its families rendered. Immutable
// once published; any thread may read it.
struct Snapshot {
  // Shares the loop's catalogs (CopyOnWrite) until the loop changes one.
  State state;
  std::string metrics_text;  // domain, collector and rule families, pre-rendered
  double taken_at = 0;
  // The last rules cycle (figures' text, pending and firing alerts); null
  // until the first cycle after the first collection.
  std::shared_ptr<const RulesOutput> rules;
};

}  // namespace ckptmon
