#pragma once
// The rules' evaluation cycle on the daemon's loop. Once per scan interval
// (and at once when the first collection finished) it samples the tiers,
// evaluates the rules over the catalog, moves the alerts through their
// states, hands history to the store, pushes to Alertmanager and renders what
// scrapes and the API show, so a scrape only copies text. Nothing here waits
// for the disk or the network: the store and the Alertmanager client work
// asynchronously. Loop thread only (not thread-safe).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "api/snapshot.hpp"
#include "config/config.hpp"
#include "model/checkpoint_view.hpp"
#include "model/state.hpp"
#include "rules/alerts.hpp"
#include "rules/evaluate.hpp"
#include "rules/plan.hpp"
#include "serve/alertmanager_client.hpp"
#include "serve/clock_timers.hpp"
#include "store/history.hpp"
#include "util/clock.hpp"

namespace ckptmon {

class Store;

// Builds the rules' policy from a configuration.
RulesPolicy rules_policy(const Config& cfg);

class RulesCycle {
 public:
  // `state` is the daemon's State (read on the loop thread at each cycle);
  // `ready` says whether the first collection finished (before that every
  // tier looks down and every catalog empty, so nothing is evaluated);
  // `on_evaluated` runs after each cycle (the daemon publishes). `store` may
  // be null (no history is kept).
  RulesCycle(boost::asio::io_context& io, std::shared_ptr<const Clock> clock, Store* store,
             const State& state, std::function<bool()> ready, std::function<void()> on_evaluated);
  ~RulesCycle();
  RulesCycle(const RulesCycle&) = delete;
  RulesCycle& operator=(const RulesCycle&) = delete;

  // Takes the policy, history settings and Alertmanager target of `cfg`.
  // `self_url` ("http://host:port") is the generatorURL base when
  // alerting.external_url is empty. The Alertmanager client is replaced only
  // when its settings changed. Alert states are kept.
  void configure(const Config& cfg, const std::string& self_url);
  // Reads the recent tier samples and the alerts left pending or firing by
  // the previous run. Blocking: call at start, before the loop runs.
  void load();
  // Evaluates every `interval` from now on. Again while running (a reload):
  // the same interval keeps the schedule as it is; a new one moves the next
  // cycle to where the new interval ends, counted from the same start (at
  // once when that is past), never back to a full interval from now, so
  // reloads more often than the interval do not stop the cycles.
  void start(Duration interval);
  void stop();
  // Evaluates as soon as the loop gets to it, then every interval from then.
  void trigger();

  // One cycle now, whatever the timer says (tests; the timer calls it).
  void evaluate();

  // The last cycle's output; null before the first one.
  std::shared_ptr<const RulesOutput> output() const { return output_; }
  const RulesHistory& history() const { return history_; }
  const RulesPolicy& policy() const { return policy_; }
  const AlertmanagerClient* alertmanager() const { return alertmanager_.get(); }
  // What checkpoints cost the GPUs so far (rules/gpu_cost.hpp).
  const GpuCostTracker& gpu_costs() const { return gpu_costs_; }
  std::uint64_t cycles() const { return cycles_; }

 private:
  // Waits until `after` seconds of the clock's monotonic reading from
  // `began` (now when unset) have passed, then ticks.
  void arm(double after, std::optional<double> began = std::nullopt);
  void tick();
  void record_tier_figures(const RuleFigures& figures, HistoryWrite& write) const;
  void sample_tiers(double now, HistoryWrite& write);
  void render(const RuleFigures& figures, const std::vector<AlertInstance>& active, double now);

  boost::asio::io_context& io_;
  std::shared_ptr<const Clock> clock_;
  Store* store_;
  const State& state_;
  std::function<bool()> ready_;
  std::function<void()> on_evaluated_;
  // Follow the clock's monotonic reading (a FakeClock in tests).
  ClockTimers timers_;
  ClockTimers::Id timer_ = 0;
  double armed_at_ = 0;  // monotonic, when the wait for the next cycle began
  Duration interval_{std::chrono::seconds(15)};
  bool running_ = false;

  RulesPolicy policy_;
  double tier_keep_seconds_ = 6 * 3600;  // longest trend window of any tier
  double drain_keep_seconds_ = 15 * 60;  // longest drain rate window of any tier
  RulesHistory history_;
  std::map<std::string, double> sampled_probe_;  // tier -> last_success already sampled
  AlertEvaluator evaluator_;
  PendingAnchors pending_anchors_;            // drain ages on the monotonic clock
  UnverifiedCleanupCounter cleanup_counter_;  // ckpt_cleanup_unverified_total
  bool saved_active_ = false;                 // the store holds a non-empty active set
  double last_prune_ = 0;
  std::optional<AlertmanagerOptions> alertmanager_options_;
  std::unique_ptr<AlertmanagerClient> alertmanager_;

  // Slow checkpoints and restore estimates (rules/storage_path.hpp).
  StoragePathTracker storage_path_;

  // The GPU join: gpu.job_map, how long a window waits for its samples.
  GpuCostTracker gpu_costs_;
  std::map<unsigned, std::string> gpu_job_map_;
  double gpu_grace_seconds_ = 30;
  bool gpu_enabled_ = false;

  std::string plan_json_;  // this cycle's, for render()
  std::vector<PlanInputs> plan_inputs_;
  std::shared_ptr<const RulesOutput> output_;
  std::uint64_t cycles_ = 0;
  std::uint64_t errors_ = 0;
  double last_duration_ = 0;
};

}  // namespace ckptmon
