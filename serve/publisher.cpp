#include "serve/publisher.hpp"

#include "exporter/collectors.hpp"
#include "exporter/events.hpp"
#include "exporter/family.hpp"
#include "exporter/gpu.hpp"
#include "exporter/io.hpp"
#include "exporter/tiers.hpp"

namespace ckptmon {

std::shared_ptr<const Snapshot> SnapshotPublisher::publish(const State& state,
                                                           std::shared_ptr<const RulesOutput> rules,
                                                           double now) {
  auto snap = std::make_shared<Snapshot>();
  snap->state = state;
  // state_families(state), in its order, with the catalog's share cached.
  std::vector<prometheus::MetricFamily> families;
  tier_families(state, families);
  std::string text = serialize(families);
  text += catalogs_.render(state);
  families.clear();
  event_families(state, families);
  gpu_families(state, families);
  io_families(state, families);
  collector_families(state, families);
  text += serialize(families);
  if (rules) text += rules->metrics_text;
  snap->metrics_text = std::move(text);
  snap->rules = std::move(rules);
  snap->taken_at = now;
  return snap;
}

}  // namespace ckptmon
