#include "model/state.hpp"

#include <algorithm>

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
    if (it != tiers.end() && it->second.config.path == t.path) {
      TierState s = std::move(it->second);
      s.config = t;
      next.emplace(t.name, std::move(s));
    } else {
      catalogs.erase(t.name);  // a re-pointed tier starts a new catalog
      TierState s;
      s.config = t;
      next.emplace(t.name, std::move(s));
    }
  }
  tiers = std::move(next);
  std::erase_if(catalogs, [&](const auto& kv) { return !tiers.contains(kv.first); });
  config = std::move(cfg);
}

}  // namespace ckptmon
