#include "rules/recovery.hpp"

#include <algorithm>
#include <map>

namespace ckptmon {

std::vector<RecoveryPoint> evaluate_recovery(const CheckpointView& all,
                                             const Verifications& verified,
                                             const std::set<std::string>& skip_tiers) {
  struct Candidate {
    const Checkpoint* c;
    bool verified_ok;
  };
  std::map<std::string, RecoveryPoint> points;
  std::map<std::string, std::vector<Candidate>> candidates;
  for (const Checkpoint& c : all) {
    RecoveryPoint& p = points[c.job];
    p.job = c.job;
    const double last = std::max(c.last_write, commit_time(c));
    const double first = c.first_write > 0 ? c.first_write : last;
    p.last_activity = std::max(p.last_activity, last);
    if (first > 0 && (p.first_activity == 0 || first < p.first_activity)) p.first_activity = first;

    if (c.state != CkptState::kCommitted || skip_tiers.contains(c.tier)) continue;
    bool ok = false;
    if (auto it = verified.find(CheckpointKey{c.tier, c.path}); it != verified.end()) {
      if (!it->second) continue;  // failed verification: not restorable
      ok = true;
    }
    candidates[c.job].push_back({&c, ok});
  }

  std::vector<RecoveryPoint> out;
  for (auto& [job, p] : points) {
    auto it = candidates.find(job);
    if (it != candidates.end() && !it->second.empty()) {
      const auto& cs = it->second;
      const bool by_step =
          std::all_of(cs.begin(), cs.end(), [](const Candidate& x) { return x.c->step >= 0; });
      // The winning state: highest step, or newest commit time.
      const Candidate* best = &cs.front();
      for (const Candidate& x : cs) {
        if (by_step ? x.c->step > best->c->step : commit_time(*x.c) > commit_time(*best->c)) {
          best = &x;
        }
      }
      // Its copies: same step on every tier (by_step) or just the one.
      std::set<std::string> tiers;
      const Candidate* earliest = best;
      bool all_unreadable = true;
      for (const Candidate& x : cs) {
        const bool same = by_step ? x.c->step == best->c->step : &x == best;
        if (!same) continue;
        tiers.insert(x.c->tier);
        p.verified = p.verified || x.verified_ok;
        all_unreadable = all_unreadable && x.c->unreadable;
        if (commit_time(*x.c) < commit_time(*earliest->c)) earliest = &x;
      }
      p.restorable = true;
      p.unreadable = all_unreadable;
      p.step = earliest->c->step;
      p.timestamp = commit_time(*earliest->c);
      p.tier = earliest->c->tier;
      p.path = earliest->c->path;
      p.tiers.assign(tiers.begin(), tiers.end());
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ckptmon
