#include "daemon/metrics/state.hpp"

#include "daemon/metrics/catalog.hpp"
#include "daemon/metrics/collectors.hpp"
#include "daemon/metrics/events.hpp"
#include "daemon/metrics/gpu.hpp"
#include "daemon/metrics/io.hpp"
#include "daemon/metrics/tiers.hpp"

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
