#pragma once
// Every family rendered from the published State, in exposition order: tiers,
// catalog, events, GPU, storage path, collectors. Each family is defined in
// its domain's file beside this one.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// Domain and collector metrics for everything in `state`.
std::vector<prometheus::MetricFamily> state_families(const State& state);

}  // namespace ckptmon
