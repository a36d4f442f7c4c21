#include "model/state.hpp"

#include <algorithm>

#include "util/log.hpp"

namespace ckptmon {

bool CollectorStatus::success() const {
  return std::all_of(targets.begin(), targets.end(),
                     [](const auto& kv) { return kv.second.success; });
}

double CollectorStatus::duration_seconds() const {
  double d = 0;
  for (const auto& [_, t] : targets) d = std::max(d, t.duration_seconds);
  return d;
}

const EventStep* State::event_step(const Checkpoint& c) const {
  if (!events || c.step < 0) return nullptr;
  return events->find(c.tier, c.job, c.step);
}

bool State::integrity_failed(const Checkpoint& c) const {
  return integrity && integrity->failed(c.tier, c.job, c.step, c.path);
}

void State::apply_config(std::shared_ptr<const Config> cfg) {
  std::map<std::string, TierState> next;
  for (const auto& t : cfg->tiers) {
    auto it = tiers.find(t.name);
    if (it != tiers.end() && it->second.config.generation == t.generation) {
      TierState s = std::move(it->second);
      s.config = t;
      next.emplace(t.name, std::move(s));
    } else {
      catalogs.erase(t.name);  // a new or re-pointed tier (new epoch) starts a new catalog
      TierState s;
      s.config = t;
      next.emplace(t.name, std::move(s));
    }
  }
  tiers = std::move(next);
  std::erase_if(catalogs, [&](const auto& kv) { return !tiers.contains(kv.first); });
  config = std::move(cfg);
}

bool State::current_tier(std::string_view collector, const std::string& tier,
                         std::uint64_t generation) {
  auto it = tiers.find(tier);
  if (it != tiers.end() && it->second.config.generation == generation) return true;
  ++collectors[std::string(collector)].stale_results_dropped;
  log::debug("result of a reloaded tier dropped",
             {{"collector", collector},
              {"tier", tier},
              {"generation", generation},
              {"current", it == tiers.end() ? std::string("removed")
                                            : std::to_string(it->second.config.generation)}});
  return false;
}

}  // namespace ckptmon
