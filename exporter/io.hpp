#pragma once
// Storage-path families from State::io (collectors/tier_io.cpp), part of
// state_families. Pure functions of the state; thread-safe.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// ckpt_tier_read_bytes_total{tier}, ckpt_tier_written_bytes_total{tier},
// ckpt_tier_metadata_operations_total{tier,op} (nfs and lustre only),
// ckpt_tier_io_source_info{tier,source,devices,shared_with},
// ckpt_network_{receive,transmit}_bytes_total{interface},
// ckpt_network_link_speed_bytes_per_second{interface} (absent when unknown),
// ckptmon_io_read_errors_total, ckptmon_io_resets_total.
void io_families(const State& state, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
