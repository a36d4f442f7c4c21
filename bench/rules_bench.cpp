// evaluate_rules() on a generated catalog: tiers x jobs x checkpoints per job.
// Run: ./build/bench/rules_bench

#include <benchmark/benchmark.h>

#include <memory>
#include <regex>

#include "rules/alerts.hpp"
#include "rules/estate.hpp"
#include "rules/evaluate.hpp"
#include "rules/recovery.hpp"
#include "rules/storage_path.hpp"

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
        ck.step = std::int64_t{k} * 1000;
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
    ->Args({100, 1000})
    ->Unit(benchmark::kMillisecond);

// The estate's share of the cycle above (docs/performance.md "The estate"):
// the versions joined from the same catalog (every step has a copy on each
// of the 4 tiers, so jobs x per_job versions), then the durable recovery
// point, lifecycle and residency over them, with staging node-local, a
// move_after on staging and a residency rule that every job matches.
// `held_bytes`: the heap the joined versions hold while the cycle runs
// (vector capacities; the pointer array the join sorts is freed before it
// returns, and the figures are per job).
void BM_EstateJoin(benchmark::State& state) {
  Catalog c = make(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  c.tiers["staging"].config.durable = false;
  c.tiers["rapid"].config.residency = "eu-west";
  NamespaceRule ns;
  ns.job_regex = "^job-";
  ns.regex = std::make_shared<const std::regex>(ns.job_regex);
  ns.residency = {"eu-west"};
  c.tiers["rapid"].config.namespaces = {ns};
  RulesPolicy policy;
  policy.tiers["staging"].drain.move_after_seconds = 3600;
  const CheckpointView view(c.checkpoints);
  const double now = 1e6 + 86400;
  const std::vector<RecoveryPoint> recovery = evaluate_recovery(view, {}, {});
  std::size_t versions = 0, held = 0;
  for (auto _ : state) {
    const std::vector<Version> v = join_versions(view, c.tiers, {});
    auto d = evaluate_durability(v, recovery, view, c.tiers, {}, policy.estate, now);
    auto l = evaluate_lifecycle(v, c.tiers, policy, now);
    auto r = evaluate_residency(v, c.tiers);
    benchmark::DoNotOptimize(d);
    benchmark::DoNotOptimize(l);
    benchmark::DoNotOptimize(r);
    versions = v.size();
    held = v.capacity() * sizeof(Version);
    for (const Version& x : v) held += x.copies.capacity() * sizeof(EstateCopy);
  }
  state.counters["versions"] = static_cast<double>(versions);
  state.counters["held_bytes"] = static_cast<double>(held);
}
BENCHMARK(BM_EstateJoin)
    ->Args({10, 25})
    ->Args({100, 250})
    ->Args({100, 1000})
    ->Unit(benchmark::kMillisecond);

// The storage-path tracker's cycle on the same catalog, in its steady state
// (every committed checkpoint's window settled), with tier counters of 2880
// samples (12 h at 15 s) per tier: the per-cycle cost it adds to the rules.
void BM_StoragePathTracker(benchmark::State& state) {
  const Catalog c = make(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  RulesPolicy policy;
  for (const auto& [name, t] : c.tiers) {
    policy.tiers[name].storage_path.checkpoint_window_seconds = 120;
    policy.tiers[name].storage_path.recovery_time_objective_seconds = 600;
  }
  IoState io;
  std::set<std::string> names;
  for (const auto& [name, t] : c.tiers) {
    names.insert(name);
    TierIo& tio = io.tiers[name];
    tio.source = IoSource::kBlock;
    tio.history.capacity = 2880;
    for (int s = 0; s < 2880; ++s) {
      IoSample x;
      x.time = 1e6 - 600 + s * 15.0;
      x.counters.written_bytes = s * 1e9;
      x.counters.read_bytes = s * 5e8;
      x.counters.metadata_ops[0] = s * 100.0;
      tio.history.add(x);
    }
    tio.best_written_bytes_per_second = 1e9 / 15;
    tio.best_read_bytes_per_second = 5e8 / 15;
  }
  StoragePathTracker tracker;
  double now = 1e6 + 86400;
  tracker.update(c.checkpoints, names, {}, nullptr, &io, {}, policy, now);  // settles
  for (auto _ : state) {
    StoragePathFigures f = tracker.update(c.checkpoints, names, {}, nullptr, &io, {}, policy, now);
    benchmark::DoNotOptimize(f);
    now += 15;
  }
  state.counters["checkpoints"] = static_cast<double>(c.checkpoints.size());
}
BENCHMARK(BM_StoragePathTracker)
    ->Args({10, 25})
    ->Args({100, 25})
    ->Args({100, 250})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ckptmon

BENCHMARK_MAIN();
