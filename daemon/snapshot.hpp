#pragma once
// What scrapes and the API read, and how the loop publishes it.

#include <cstdint>
#include <memory>
#include <string>

#include "daemon/rules_cycle.hpp"
#include "exporter/catalog.hpp"
#include "model/state.hpp"

namespace ckptmon {

// The State as it was when published, with its families rendered. Immutable
// once published; any thread may read it.
struct Snapshot {
  // Shares the loop's catalogs (CopyOnWrite) until the loop changes one.
  State state;
  std::string metrics_text;  // domain, collector and rule families, pre-rendered
  double taken_at = 0;
  // The last rules cycle (figures' text, pending and firing alerts); null
  // until the first cycle after the first collection.
  std::shared_ptr<const RulesOutput> rules;
};

// Takes snapshots of the loop's State. A snapshot shares every tier catalog
// that did not change (copying State copies pointers), and a tier's catalog
// families are rendered once per change of its catalog or of the event
// catalog, not once per publish. Loop thread.
class SnapshotPublisher {
 public:
  std::shared_ptr<const Snapshot> publish(const State& state,
                                          std::shared_ptr<const RulesOutput> rules, double now);
  // Tier catalogs rendered so far (tests, bench).
  std::uint64_t catalog_renders() const { return catalogs_.renders(); }

 private:
  CatalogRenderCache catalogs_;
};

}  // namespace ckptmon
