#pragma once
// Alerts: each cycle the figures become one condition per alert instance
// (alertname, severity, tier, job); the evaluator moves every instance through
// inactive -> pending -> firing after its `for:` and back when the condition
// clears. It returns plain alert states; the daemon renders them for /metrics,
// /api/v1/alerts, the history and Alertmanager's v2 API (api/alerts_wire.hpp).
// No I/O.

#include <array>
#include <compare>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/policy.hpp"
#include "model/state.hpp"
#include "rules/alert_table.hpp"
#include "rules/evaluate.hpp"

namespace ckptmon {

// The identity of an alert instance. Empty tier or job: not applicable.
struct AlertLabels {
  std::string alertname;
  std::string severity;
  std::string tier;
  std::string job;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const AlertLabels&) const = default;
};

// What a condition says this cycle. With hysteresis a value between the fire
// and the clear threshold holds: an active alert stays active, an inactive one
// stays inactive. A figure that is unknown this cycle holds as well.
enum class Signal { kFire, kHold, kClear };

// One alert instance's condition in one cycle, with its texts (left empty
// when the signal is kClear: nothing reads them then).
struct AlertCondition {
  AlertLabels labels;
  Signal signal = Signal::kClear;
  double for_seconds = 0;
  double value = 0;  // the figure compared with the threshold
  std::string summary;
  std::string description;
  std::string runbook_url;
  // Annotations beyond summary, description and runbook_url (the slow
  // checkpoint's cause), in order.
  std::vector<std::pair<std::string, std::string>> annotations;
};

// How ckptmon itself is doing, for the alerts about it.
struct SelfHealth {
  // Writes to the state database that failed in a row, the file and the last error.
  std::uint64_t store_consecutive_errors = 0;
  std::uint64_t store_failing_after = kStoreFailingAfter;
  std::string store_path;
  std::string store_last_error;
};

// The conditions of every enabled alert for these figures. `tiers` gives up/down.
std::vector<AlertCondition> alert_conditions(const RuleFigures& figures,
                                             const std::map<std::string, TierState>& tiers,
                                             const AlertingConfig& config,
                                             const SelfHealth& self = {});

enum class AlertState { kInactive, kPending, kFiring };
std::string_view to_string(AlertState s);

struct AlertInstance {
  AlertLabels labels;
  AlertState state = AlertState::kInactive;
  // When it became pending and started firing (unix seconds; fired_at 0 = not
  // yet), as reported: the wall time of the last evaluation minus the
  // monotonic time since, so never later than that evaluation's wall time.
  double active_at = 0;
  double fired_at = 0;
  double resolved_at = 0;  // when it stopped firing; 0 = not resolved
  double active_for = 0;   // evaluation time spent active, seconds
  double for_seconds = 0;
  double value = 0;
  std::string summary;
  std::string description;
  std::string runbook_url;
  std::vector<std::pair<std::string, std::string>> annotations;  // as AlertCondition's
  // Monotonic readings of the moments above (Clock::monotonic); NaN for an
  // instance restored from the history, until the next evaluation.
  double active_mono = std::numeric_limits<double>::quiet_NaN();
  double fired_mono = std::numeric_limits<double>::quiet_NaN();
};

// A change of state, for the alert history.
struct AlertTransition {
  AlertLabels labels;
  AlertState from = AlertState::kInactive;
  AlertState to = AlertState::kInactive;
  double at = 0;
  double value = 0;
  std::string summary;
  std::string description;
};

// Holds the state of every alert instance between cycles. Loop thread only
// (not thread-safe); copy the outputs to publish them.
class AlertEvaluator {
 public:
  // Time between two evaluations, on the monotonic clock, counts towards
  // `for:` up to max_step_seconds: a pause of a day does not fire every
  // pending alert at once. The wall clock jumping does not count at all.
  explicit AlertEvaluator(double max_step_seconds = 300) : max_step_(max_step_seconds) {}

  // Feeds one cycle. An instance that had a condition before and has none now
  // (its tier or job is gone, its rule disabled) is treated as cleared.
  // Returns the transitions of this cycle, sorted by labels. `now` is wall
  // time (what is reported), `mono` the monotonic reading (what is measured).
  std::vector<AlertTransition> evaluate(std::span<const AlertCondition> conditions, double now,
                                        double mono);
  // With a wall clock that never jumps: mono = now.
  std::vector<AlertTransition> evaluate(std::span<const AlertCondition> conditions, double now) {
    return evaluate(conditions, now, now);
  }

  // Takes over the instances an earlier run left pending or firing (others
  // are ignored), replacing what is held. The next evaluate() counts no time
  // towards `for:`: time the daemon was down is not evaluation time. A
  // restored firing alert whose condition is gone resolves on that cycle.
  void restore(std::span<const AlertInstance> saved);

  std::vector<AlertInstance> active() const;  // pending and firing, sorted by labels
  std::vector<AlertInstance> firing() const;
  // Instances that stopped firing in the last evaluate(), resolved_at set.
  const std::vector<AlertInstance>& resolved() const { return resolved_; }

 private:
  double max_step_;
  double last_mono_ = std::numeric_limits<double>::quiet_NaN();
  std::map<AlertLabels, AlertInstance> instances_;  // active ones only
  std::vector<AlertInstance> resolved_;
};

}  // namespace ckptmon
