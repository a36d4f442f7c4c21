#pragma once
// Tier families from State::tiers (the tier_stats probe): ckpt_tier_up,
// ckpt_tier_info, ckpt_tier_{size,avail,free}_bytes, ckpt_tier_files{,_free},
// ckpt_tier_readonly, ckpt_tier_last_success_timestamp_seconds,
// ckpt_tier_shards. Part of state_families().

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

void tier_families(const State& state, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
