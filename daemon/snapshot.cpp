#include "daemon/snapshot.hpp"

#include "daemon/malloc_tuning.hpp"
#include "daemon/metrics/collectors.hpp"
#include "daemon/metrics/events.hpp"
#include "daemon/metrics/family.hpp"
#include "daemon/metrics/gpu.hpp"
#include "daemon/metrics/io.hpp"
#include "daemon/metrics/tiers.hpp"

namespace ckptmon {

std::shared_ptr<const Snapshot> SnapshotPublisher::publish(const State& state,
                                                           std::shared_ptr<const RulesOutput> rules,
                                                           double now) {
  // A publish follows each collector report, whose result (a walk's
  // checkpoints, findings, listings) was freed just before: what it leaves
  // free in the heap goes back to the kernel here rather than staying
  // resident until the next walk reuses it. At most every
  // kTrimEverySeconds: with a short scan_interval the pages given back would
  // be faulted in again by the next walk a second later.
  if (now - last_trim_ >= kTrimEverySeconds || now < last_trim_) {
    last_trim_ = now;
    release_free_heap();
  }
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
