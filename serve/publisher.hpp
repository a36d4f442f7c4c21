#pragma once
// How the loop publishes what scrapes and the API read (api/snapshot.hpp).

#include <cstdint>
#include <memory>
#include <string>

#include "api/snapshot.hpp"
#include "exporter/catalog.hpp"
#include "model/state.hpp"

namespace ckptmon {

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
