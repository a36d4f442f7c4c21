#pragma once
// `ckptmon plan` and GET /api/v1/plan: the sizing and bandwidth rules term by
// term for one tier, from the figures the daemon computes (plan_inputs), with
// what-ifs that override any term (make_plan). The arithmetic is
// sizing_terms() and required_write_bandwidth() of rules/capacity.hpp, the
// code behind ckpt_tier_required_capacity_bytes and
// ckpt_tier_required_write_bandwidth_bytes_per_second. Pure; thread-safe.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/policy.hpp"
#include "rules/capacity.hpp"

namespace ckptmon {

// One job as the plan sizes it.
struct PlanJob {
  std::string job;
  double latest_bytes = 0;  // latest committed checkpoint (logical bytes)
  // p90 (nearest rank) of the job's committed checkpoints in the catalog; 0 if none.
  double p90_bytes = 0;
  double latest_allocated_bytes = 0;  // blocks the latest one occupies
  double retained_versions = 0;
  std::uint64_t ranks = 0;    // shards the latest checkpoint expects; 0 when unknown
  bool hypothetical = false;  // a what-if job (--jobs, --model-params), not measured
};

// One job's restore time against its recovery objective (rules/storage_path.hpp).
struct PlanRestore {
  std::string job;
  std::int64_t step = -1;  // the newest restorable checkpoint
  double bytes = 0;
  double files = 0;
  std::optional<double> estimated_seconds;  // nullopt: no read throughput known
  std::optional<double> read_bytes_per_second;
  std::string read_source;       // restores | counters | configured
  double objective_seconds = 0;  // recovery_time_objective; 0 = none
};

// What the plan starts from: the daemon's figures and policy for a tier.
struct PlanInputs {
  std::string tier;
  bool has_stats = false;
  double size_bytes = 0;
  double avail_bytes = 0;
  double replicas = 1;
  double temp_write_allowance_ratio = 1;
  double growth_headroom_ratio = 0.2;
  std::int64_t concurrent_jobs = 0;
  bool concurrency_observed = true;
  double residue_bytes = 0;
  double keep_last = 3;  // the retention policy's, for jobs not yet run
  double allowed_window_seconds = 120;
  double overhead_ratio = 0.1;
  std::int64_t concurrent_writers = 0;
  bool writers_observed = true;
  std::optional<double> observed_write_bytes_per_second;
  std::vector<PlanJob> jobs;  // by job name
  // shard: i/n of the tier: the jobs are this instance's share only.
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  // Restore time vs objective per job, where an objective or a read
  // throughput is known.
  std::vector<PlanRestore> restores;
};

// The inputs for one tier from what evaluate_capacity and evaluate_bandwidth
// gave (`all` for the per-job p90 and ranks).
PlanInputs plan_inputs(const CapacityFigures& capacity, const BandwidthFigures& bandwidth,
                       const CheckpointView& all, const TierPolicy& policy);

// Bytes per parameter a checkpoint holds (docs/rules.md#plan): weights in
// `precision`, an fp32 master copy when the precision is below fp32 and an
// optimizer is saved, and the optimizer's state (adam/adamw: two fp32
// moments, sgd: one fp32 momentum, none: nothing). nullopt for an unknown name.
std::optional<double> bytes_per_param(std::string_view precision, std::string_view optimizer);

// Overrides; unset ones keep the measured or configured value.
struct PlanWhatIfs {
  std::optional<double> retain;      // retained versions of every job
  std::optional<std::int64_t> jobs;  // jobs on the tier, all writing at once
  std::optional<double> replicas;
  std::optional<double> window_seconds;  // allowed write window
  std::optional<double> growth_ratio;
  std::optional<double> temp_allowance_ratio;
  std::optional<double> model_bytes;  // a job not yet run: params x bytes per param
  std::optional<std::int64_t> nodes;  // writers' nodes, for the per-node bandwidth
  double gpus_per_node = 8;           // nodes from ranks when `nodes` is unset

  bool any() const {
    return retain || jobs || replicas || window_seconds || growth_ratio || temp_allowance_ratio ||
           model_bytes;
  }
};

struct TierPlan {
  PlanInputs inputs;                    // as given (before the what-ifs)
  std::vector<std::string> overridden;  // the what-if flags applied, e.g. "--retain 4"
  std::vector<PlanJob> jobs;            // as sized (what-ifs applied)
  double replicas = 1;
  double temp_write_allowance_ratio = 1;
  double growth_headroom_ratio = 0.2;
  std::int64_t concurrent_jobs = 0;
  SizingTerms terms;
  // required - size: positive is what the tier lacks; nullopt without stats.
  std::optional<double> shortfall_bytes;
  std::optional<double> required_to_size_ratio;
  double allowed_window_seconds = 0;
  double overhead_ratio = 0;
  std::int64_t concurrent_writers = 0;
  double bytes_per_checkpoint = 0;
  double required_write_bytes_per_second = 0;
  // Nodes the writers run on (--nodes, else ranks / gpus_per_node of the
  // biggest writer); 0 when unknown, and then no per-node figure.
  std::int64_t nodes = 0;
  std::string nodes_source;  // "--nodes", "ranks", ""
  std::optional<double> required_write_bytes_per_second_per_node;
  // Logical / allocated bytes of the latest checkpoints: above 1 the tier
  // compresses or the files are sparse; nullopt when nothing is allocated.
  std::optional<double> logical_to_allocated_ratio;
  // Restore time vs objective of the planned jobs: the measured rows, or,
  // with a what-if on the jobs, the kept jobs' rows and an estimate for each
  // hypothetical one (step -1, files 0: not known).
  std::vector<PlanRestore> restores;
};

TierPlan make_plan(const PlanInputs& in, const PlanWhatIfs& what_ifs);

}  // namespace ckptmon
