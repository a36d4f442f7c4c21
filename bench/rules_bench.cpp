// evaluate_rules() on a generated catalog: tiers x jobs x checkpoints per job.
// Run: ./build/bench/rules_bench

#include <benchmark/benchmark.h>

#include "rules/alerts.hpp"
#include "rules/evaluate.hpp"

namespace ckptmon {
namespace {

struct Catalog {
  std::map<std::string, TierState> tiers;
  std::vector<Checkpoint> checkpoints;
  RulesHistory history;
};

Catalog make(int jobs, int per_job) {
  Catalog c;
  const std::vector<std::pair<std::string, std::string>> tiers{
      {"staging", "rapid"}, {"rapid", ""}, {"capacity", ""}, {"archive", ""}};
  for (const auto& [name, to] : tiers) {
    TierState t;
    t.config.name = name;
    t.config.drains_to = to;
    t.up = true;
    t.has_stats = true;
    t.stats.size_bytes = 1e15;
    t.stats.avail_bytes = 4e14;
    c.tiers[name] = t;
    for (int s = 0; s < 2880; ++s) {
      c.history.tiers[name].push_back({1e6 + s * 30.0, 1e15, 5e14 - s * 1e9, {}});
    }
    for (int j = 0; j < jobs; ++j) {
      for (int k = 0; k < per_job; ++k) {
        Checkpoint ck;
        ck.tier = name;
        ck.job = "job-" + std::to_string(j);
        ck.step = k * 1000;
        ck.path = ck.job + "/step-" + std::to_string(ck.step);
        ck.state = k == per_job - 1 ? CkptState::kInProgress : CkptState::kCommitted;
        ck.bytes = 1'000'000'000ULL + static_cast<std::uint64_t>(j);
        ck.first_write = 1e6 + k * 600.0;
        ck.last_write = ck.first_write + 30;
        ck.marker_time = ck.last_write;
        c.checkpoints.push_back(std::move(ck));
      }
    }
  }
  return c;
}

void BM_EvaluateRules(benchmark::State& state) {
  const Catalog c = make(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  RulesPolicy policy;
  AlertEvaluator ev;
  double now = 1e6 + 86400;
  for (auto _ : state) {
    RuleFigures f = evaluate_rules(c.tiers, c.checkpoints, c.history, {}, policy, now);
    auto conds = alert_conditions(f, c.tiers, policy.alerting);
    ev.evaluate(conds, now);
    benchmark::DoNotOptimize(f);
    now += 15;
  }
  state.counters["checkpoints"] = static_cast<double>(c.checkpoints.size());
}
// jobs, checkpoints per job per tier (4 tiers)
BENCHMARK(BM_EvaluateRules)
    ->Args({10, 25})
    ->Args({100, 25})
    ->Args({100, 250})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ckptmon

BENCHMARK_MAIN();
