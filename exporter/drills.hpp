#pragma once
// What the scheduled restore drills found (State::drills,
// collectors/drill_collector.hpp): ckpt_restore_drill_* per (tier, job) and
// ckptmon_restore_drills_total per tier.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// Part of state_families().
void drill_families(const State& state, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
