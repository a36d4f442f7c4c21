#include "exporter/collectors.hpp"

#include "exporter/family.hpp"

namespace ckptmon {

void collector_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder dur = gauge("ckptmon_collector_duration_seconds",
                            "Duration of the slowest target of the collector's last run (up to its "
                            "deadline while still running).");
  FamilyBuilder ok = gauge("ckptmon_collector_success",
                           "1 when every target of the collector's last run succeeded in time.");
  FamilyBuilder timeouts =
      counter("ckptmon_collector_timeouts_total", "Collector runs that passed their deadline.");
  FamilyBuilder skipped = counter("ckptmon_collector_skipped_total",
                                  "Collector runs not started because the previous run of the same "
                                  "target was still in flight.");
  FamilyBuilder not_started =
      counter("ckptmon_collector_not_started_total",
              "Collector runs that no worker ran: still queued at their deadline "
              "(workers busy with stuck jobs) or refused because the target "
              "already has a stuck job. The target was not probed.");
  FamilyBuilder errors = counter("ckptmon_collector_errors_total", "Collector runs that failed.");
  FamilyBuilder dropped =
      counter("ckptmon_collector_results_dropped_total",
              "Collector results dropped on return, by reason: stale_generation, "
              "the tier was re-pointed or removed by a reload while the run was in "
              "flight.");
  for (const auto& [name, c] : state.collectors) {
    const Labels l{{"collector", name}};
    dur.add(l, c.duration_seconds());
    ok.add(l, c.success() ? 1 : 0);
    timeouts.add(l, static_cast<double>(c.timeouts));
    skipped.add(l, static_cast<double>(c.skipped));
    not_started.add(l, static_cast<double>(c.not_started));
    errors.add(l, static_cast<double>(c.errors));
    dropped.add({{"collector", name}, {"reason", "stale_generation"}},
                static_cast<double>(c.stale_results_dropped));
  }
  append(out, {&dur, &ok, &timeouts, &skipped, &not_started, &errors, &dropped});
}

}  // namespace ckptmon
