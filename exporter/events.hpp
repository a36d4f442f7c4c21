#pragma once
// What the event logs (manifest_tail) and the integrity verifier tell:
// ckptmon_manifest_*, ckpt_checkpoint_{duration,pause}_seconds,
// ckpt_checkpoint_failures_total, ckpt_restore_duration_seconds,
// ckpt_last_restore_timestamp_seconds, ckpt_integrity_checks_total,
// ckptmon_integrity_*.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// Line and error totals, save and pause durations, failures, restores,
// integrity checks. Part of state_families().
void event_families(const State& state, std::vector<prometheus::MetricFamily>& out);
// The verifier's queue and a stuck read, read at scrape time: a run blocked
// in a read publishes nothing else until it returns.
void integrity_live_families(const IntegrityProgress& progress, double now,
                             std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
