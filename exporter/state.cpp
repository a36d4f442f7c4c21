#include "exporter/state.hpp"

#include "exporter/catalog.hpp"
#include "exporter/collectors.hpp"
#include "exporter/events.hpp"
#include "exporter/gpu.hpp"
#include "exporter/io.hpp"
#include "exporter/tiers.hpp"

namespace ckptmon {

std::vector<prometheus::MetricFamily> state_families(const State& state) {
  std::vector<prometheus::MetricFamily> out;
  tier_families(state, out);
  catalog_families(state, out);
  event_families(state, out);
  gpu_families(state, out);
  io_families(state, out);
  collector_families(state, out);
  return out;
}

}  // namespace ckptmon
