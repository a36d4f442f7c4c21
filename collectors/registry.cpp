// The explicit table of collectors. Adding a collector means adding a line
// here: no self-registering static initialisers (a static library drops them).

#include <array>

#include "collectors/collector.hpp"
#include "collectors/drill_collector.hpp"
#include "collectors/gpu.hpp"
#include "collectors/integrity.hpp"
#include "collectors/manifest_tail.hpp"
#include "collectors/tier_io.hpp"
#include "collectors/tier_stats.hpp"
#include "collectors/tree_scan.hpp"

namespace ckptmon {
namespace {

struct Entry {
  std::string_view name;
  std::shared_ptr<Collector> (*make)(const CollectorEnv&);
};

constexpr std::array kCollectors{
    Entry{"tier_stats",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<TierStatsCollector>(env.clock);
          }},
    Entry{"tree_scan",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<TreeScanCollector>(env.clock);
          }},
    Entry{"manifest_tail",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<ManifestTailCollector>(env.clock, env.event_journal);
          }},
    Entry{"integrity",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<IntegrityCollector>(env.clock, env.verification_ledger);
          }},
    Entry{"tier_io",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<TierIoCollector>(env.clock);
          }},
    Entry{"gpu",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<GpuCollector>(env.clock, env.http_fetch);
          }},
    Entry{"restore_drill",
          [](const CollectorEnv& env) -> std::shared_ptr<Collector> {
            return std::make_shared<DrillCollector>(env.clock, env.drill_ledger);
          }},
};

}  // namespace

std::vector<std::shared_ptr<Collector>> make_collectors(const CollectorEnv& env) {
  std::vector<std::shared_ptr<Collector>> out;
  out.reserve(kCollectors.size());
  for (const auto& e : kCollectors) out.push_back(e.make(env));
  return out;
}

}  // namespace ckptmon
