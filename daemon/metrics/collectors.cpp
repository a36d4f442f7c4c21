#include "daemon/metrics/collectors.hpp"

#include "daemon/metrics/family.hpp"

namespace ckptmon {

void collector_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  FamilyBuilder dur("ckptmon_collector_duration_seconds",
                    "Duration of the slowest target of the collector's last run (up to its "
                    "deadline while still running).",
                    MetricType::Gauge);
  FamilyBuilder ok("ckptmon_collector_success",
                   "1 when every target of the collector's last run succeeded in time.",
                   MetricType::Gauge);
  FamilyBuilder timeouts("ckptmon_collector_timeouts_total",
                         "Collector runs that passed their deadline.", MetricType::Counter);
  FamilyBuilder skipped("ckptmon_collector_skipped_total",
                        "Collector runs not started because the previous run of the same "
                        "target was still in flight.",
                        MetricType::Counter);
  FamilyBuilder not_started("ckptmon_collector_not_started_total",
                            "Collector runs that no worker ran: still queued at their deadline "
                            "(workers busy with stuck jobs) or refused because the target "
                            "already has a stuck job. The target was not probed.",
                            MetricType::Counter);
  FamilyBuilder errors("ckptmon_collector_errors_total", "Collector runs that failed.",
                       MetricType::Counter);
  FamilyBuilder dropped("ckptmon_collector_results_dropped_total",
                        "Collector results dropped on return, by reason: stale_generation, "
                        "the tier was re-pointed or removed by a reload while the run was in "
                        "flight.",
                        MetricType::Counter);
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
  append(out, std::move(dur));
  append(out, std::move(ok));
  append(out, std::move(timeouts));
  append(out, std::move(skipped));
  append(out, std::move(not_started));
  append(out, std::move(errors));
  append(out, std::move(dropped));
}

}  // namespace ckptmon
