#include "rules/inputs.hpp"

#include <algorithm>
#include <tuple>

namespace ckptmon {

double commit_time(const Checkpoint& c) {
  if (c.marker_time > 0) return c.marker_time;
  if (c.save_end > 0) return c.save_end;
  return c.last_write;
}

double save_start_time(const Checkpoint& c) {
  if (c.save_start > 0) return c.save_start;
  return c.first_write;
}

std::vector<const Checkpoint*> committed_oldest_first(std::span<const Checkpoint* const> job) {
  std::vector<const Checkpoint*> out;
  bool all_have_steps = true;
  for (const Checkpoint* c : job) {
    if (c->state != CkptState::kCommitted) continue;
    out.push_back(c);
    if (c->step < 0) all_have_steps = false;
  }
  if (all_have_steps) {
    std::sort(out.begin(), out.end(), [](const Checkpoint* a, const Checkpoint* b) {
      return std::tuple(a->step, commit_time(*a), std::string_view(a->path)) <
             std::tuple(b->step, commit_time(*b), std::string_view(b->path));
    });
  } else {
    std::sort(out.begin(), out.end(), [](const Checkpoint* a, const Checkpoint* b) {
      return std::tuple(commit_time(*a), a->step, std::string_view(a->path)) <
             std::tuple(commit_time(*b), b->step, std::string_view(b->path));
    });
  }
  return out;
}

JobCheckpoints group_by_job(const CheckpointView& all, const std::string& tier) {
  JobCheckpoints out;
  for (const Checkpoint& c : all) {
    if (c.tier == tier) out[c.job].push_back(&c);
  }
  return out;
}

std::int64_t observed_concurrency(const CheckpointView& all, const std::string& tier) {
  struct Edge {
    double t;
    int delta;  // +1 start, -1 end
    const std::string* job;
  };
  std::vector<Edge> edges;
  bool any = false;
  for (const Checkpoint& c : all) {
    if (c.tier != tier) continue;
    any = true;
    double end = commit_time(c);
    double start = save_start_time(c);
    if (start <= 0 && end <= 0) continue;
    if (start <= 0) start = end;
    if (end < start) end = start;
    edges.push_back({start, +1, &c.job});
    edges.push_back({end, -1, &c.job});
  }
  if (!any) return 0;
  // Starts before ends at the same instant: saves that touch count as overlapping.
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t < b.t || (a.t == b.t && a.delta > b.delta);
  });
  std::map<std::string, int> open;
  std::int64_t distinct = 0;
  std::int64_t best = 1;
  for (const Edge& e : edges) {
    int& n = open[*e.job];
    if (e.delta > 0) {
      if (n++ == 0) ++distinct;
    } else {
      if (--n == 0) --distinct;
    }
    best = std::max(best, distinct);
  }
  return best;
}

Verifications verifications_of(const State& state, const CheckpointView& checkpoints) {
  Verifications out;
  if (!state.integrity) return out;
  for (const Checkpoint& c : checkpoints) {
    if (c.state != CkptState::kCommitted) continue;
    if (auto v = state.integrity->verdict(c.tier, c.job, c.step, c.path)) {
      out[CheckpointKey{c.tier, c.path}] = *v;
    }
  }
  return out;
}

std::map<DrainKey, double> drained_totals_of(const State& state) {
  std::map<DrainKey, double> out;
  if (!state.events) return out;
  for (const auto& [key, step] : state.events->steps) {
    for (const auto& [route, progress] : step.drains) {
      const auto sep = route.find('>');
      if (sep == std::string::npos) continue;
      out[DrainKey{route.substr(0, sep), route.substr(sep + 1), key.job}] +=
          static_cast<double>(progress.bytes);
    }
  }
  return out;
}

}  // namespace ckptmon
