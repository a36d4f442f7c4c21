#pragma once
// The checkpoint catalog (tree_scan): ckpt_checkpoints, ckpt_job_*,
// ckpt_latest_committed_step, ckpt_last_checkpoint_*, ckpt_partial_*,
// ckpt_completion_skew_seconds, ckpt_access_findings, ckptmon_scan_*,
// ckptmon_catalog_stale. The recovery point (ckpt_restorable_*) is a rule's
// figure: metrics/rules.cpp renders it.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// Part of state_families().
void catalog_families(const State& state, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
