#pragma once
// The collector runner's own families from State::collectors:
// ckptmon_collector_{duration_seconds,success,timeouts_total,skipped_total,
// not_started_total,errors_total}{collector} and
// ckptmon_collector_results_dropped_total{collector,reason}. Part of
// state_families().

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

void collector_families(const State& state, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
