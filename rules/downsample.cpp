#include "rules/downsample.hpp"

#include <cmath>
#include <map>
#include <utility>

namespace ckptmon {

std::vector<std::size_t> samples_to_delete(std::span<const double> timestamps, double now,
                                           const HistoryPolicy& policy) {
  std::vector<std::size_t> drop;
  // (level, bucket) -> index of the earliest sample seen so far.
  std::map<std::pair<std::size_t, double>, std::size_t> keeper;
  std::vector<bool> doomed(timestamps.size(), false);
  for (std::size_t i = 0; i < timestamps.size(); ++i) {
    const double t = timestamps[i];
    if (std::isnan(t)) {
      doomed[i] = true;
      continue;
    }
    const double age = now - t;
    if (age <= policy.raw_retention_seconds) continue;
    std::size_t level = policy.levels.size();
    for (std::size_t l = 0; l < policy.levels.size(); ++l) {
      if (age <= policy.levels[l].retention_seconds) {
        level = l;
        break;
      }
    }
    if (level == policy.levels.size() || !(policy.levels[level].resolution_seconds > 0)) {
      doomed[i] = true;
      continue;
    }
    const double bucket = std::floor(t / policy.levels[level].resolution_seconds);
    auto [it, inserted] = keeper.emplace(std::pair(level, bucket), i);
    if (inserted) continue;
    if (t < timestamps[it->second]) {
      doomed[it->second] = true;
      it->second = i;
    } else {
      doomed[i] = true;
    }
  }
  for (std::size_t i = 0; i < doomed.size(); ++i) {
    if (doomed[i]) drop.push_back(i);
  }
  return drop;
}

}  // namespace ckptmon
