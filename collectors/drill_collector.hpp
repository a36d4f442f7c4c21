#pragma once
// restore_drill: the daemon's scheduled restore drills (docs/rules.md,
// "Restore drills"). A tier whose policy sets restore_drill.every gets, every
// that long for each job with a committed checkpoint there, a drill of the
// job's newest committed checkpoint (collectors/restore_drill.hpp: read back
// as its ranks would, read-only, rate-capped, cold by default). One drill at
// a time per tier (the runner never runs a target twice at once), only
// inside the daily window, never while the job is saving, with the window's
// remaining time as the deadline. Results go to State::drills and the drill
// ledger (the state database), so a restart remembers when each job was
// last drilled.

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/drill_ledger.hpp"

namespace ckptmon {

// What the scheduler decided for one tier at `now`.
struct DrillPlan {
  std::optional<std::string> job;   // drill this job now
  std::int64_t step = -1;           // its newest committed checkpoint in the catalog
  double budget_seconds = 0;        // the drill's deadline: the window's rest, at most the policy's
  std::vector<std::string> saving;  // due jobs passed over because they are saving
  std::string why_none;             // when `job` is unset: why (logged at debug)
};

// The jobs saving at `now`: a checkpoint of theirs on the tier is in
// progress (the walk), or an event log shows a checkpoint_start of theirs
// on any tier, younger than the tier's partial_after, that neither committed
// nor failed.
std::set<std::string> saving_jobs(const TierCatalog* catalog, const EventCatalog* events,
                                  double now, double partial_after_seconds);

// Pure: the job to drill on `tier` at `now`. A job is due when it has never
// been drilled (or refused) or its last drill is `every` old; among the due
// ones not saving, the one drilled longest ago (never first, then by name).
DrillPlan plan_drill(const TierConfig& tier, const TierCatalog* catalog, const EventCatalog* events,
                     const DrillState* drills, double now);

class DrillCollector final : public Collector {
 public:
  DrillCollector(std::shared_ptr<const Clock> clock, std::shared_ptr<DrillLedger> ledger);
  ~DrillCollector() override;
  DrillCollector(const DrillCollector&) = delete;
  DrillCollector& operator=(const DrillCollector&) = delete;

  std::string_view name() const override { return "restore_drill"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return deadline_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  void on_deadline(const std::string& target, State& state) override;
  void on_failure(const std::string& target, const std::string& error, State& state) override;

 private:
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<DrillLedger> ledger_;
  std::vector<TierConfig> tiers_;  // those with drills on
  Duration interval_ = std::chrono::seconds(15);
  Duration deadline_ = std::chrono::minutes(61);
  // Set to stop a running drill: its tier's drills were turned off or the
  // collector is going away (shutdown).
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> cancel_;
};

}  // namespace ckptmon
