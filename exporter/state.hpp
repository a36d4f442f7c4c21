#pragma once
// Every family rendered from the published State, in exposition order: tiers,
// catalog, events, GPU, storage path, collectors. Each family is defined in
// its domain's file beside this one.

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

class CatalogRenderCache;

// Domain and collector metrics for everything in `state`.
std::vector<prometheus::MetricFamily> state_families(const State& state);

// serialize(state_families(state)), byte for byte, with the catalog's share
// rendered through `catalogs` (which renders a tier's catalog families once
// per change of it): what the snapshot publisher serves. Both walk one list
// of parts, so their order cannot drift apart.
std::string state_text(const State& state, CatalogRenderCache& catalogs);

}  // namespace ckptmon
