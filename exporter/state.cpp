#include "exporter/state.hpp"

#include "exporter/catalog.hpp"
#include "exporter/collectors.hpp"
#include "exporter/drills.hpp"
#include "exporter/events.hpp"
#include "exporter/family.hpp"
#include "exporter/gpu.hpp"
#include "exporter/io.hpp"
#include "exporter/tiers.hpp"

namespace ckptmon {
namespace {

// The state's families in exposition order, around the catalog's (which the
// publisher renders through its cache).
using Part = void (*)(const State&, std::vector<prometheus::MetricFamily>&);
constexpr Part kBeforeCatalog[] = {tier_families};
constexpr Part kAfterCatalog[] = {event_families, drill_families, gpu_families, io_families,
                                  collector_families};

}  // namespace

std::vector<prometheus::MetricFamily> state_families(const State& state) {
  std::vector<prometheus::MetricFamily> out;
  for (Part p : kBeforeCatalog) p(state, out);
  catalog_families(state, out);
  for (Part p : kAfterCatalog) p(state, out);
  return out;
}

std::string state_text(const State& state, CatalogRenderCache& catalogs) {
  std::vector<prometheus::MetricFamily> families;
  for (Part p : kBeforeCatalog) p(state, families);
  std::string text = serialize(families);
  text += catalogs.render(state);
  families.clear();
  for (Part p : kAfterCatalog) p(state, families);
  text += serialize(families);
  return text;
}

}  // namespace ckptmon
