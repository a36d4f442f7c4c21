// Publishing a snapshot (Daemon::publish) and rendering its families, on a
// generated catalog of 4 tiers x jobs x 25 checkpoints: 10,000 and 100,000
// checkpoints. Run: ./build/bench/publish_bench (docs/performance.md).
//
// Unchanged: nothing changed since the last publish (a collector reported the
//            same figures: the common case, several times per scan interval).
// OneTier:   one checkpoint of one tier changed (a walk found a new save).
// Events:    the event catalog changed (a log line): every tier's catalog
//            families read it.
// GpuPoll:   the GPU collector's update per poll: copy the published
//            GpuState (8 GPUs, rings full at the default 1 s interval and
//            10 m max_window: 1,802 buckets each) and add one bucket per GPU.
// GpuPollDeepCopy: the same with the ring as one flat vector copied whole,
//            the shape before the rings shared their chunks (issue 25 item 4);
//            the peer of GpuPoll in the same run.
// The "before" figures of docs/performance.md are of the code before issue 16
// item 6, where publish copied the whole State and rendered every family:
//   snap->state = state; snap->metrics_text = serialize(state_families(state));

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <vector>

#include "model/gpu.hpp"
#include "serve/publisher.hpp"

namespace ckptmon {
namespace {

State make_state(int checkpoints) {
  State s;
  const int per_job = 25;
  const int jobs = checkpoints / 4 / per_job;
  for (const char* name : {"staging", "rapid", "capacity", "archive"}) {
    TierState t;
    t.config.name = name;
    t.up = true;
    t.has_stats = true;
    t.stats.size_bytes = 1e15;
    t.stats.avail_bytes = 4e14;
    s.tiers[name] = t;
    TierCatalog& cat = s.catalogs[name].edit();
    for (int j = 0; j < jobs; ++j) {
      const std::string job = "job-" + std::to_string(j);
      cat.jobs.insert(job);
      for (int k = 0; k < per_job; ++k) {
        Checkpoint c;
        c.tier = name;
        c.job = job;
        c.step = std::int64_t{k} * 1000;
        c.path = job + "/step-" + std::to_string(c.step);
        c.state = CkptState::kCommitted;
        c.bytes = 1'000'000'000;
        c.files = 16;
        c.marker_time = 1e9 + k * 600;
        c.last_write = c.marker_time;
        cat.checkpoints.push_back(c);
      }
      cat.skew_by_job.emplace(job, HistogramData(skew_buckets()));
    }
    cat.scanned = true;
  }
  s.events = std::make_shared<const EventCatalog>();
  return s;
}

void BM_PublishUnchanged(benchmark::State& bs) {
  State state = make_state(static_cast<int>(bs.range(0)));
  SnapshotPublisher publisher;
  std::shared_ptr<const Snapshot> snap;
  for (auto _ : bs) {
    snap = publisher.publish(state, nullptr, 0);
    benchmark::DoNotOptimize(snap);
  }
  bs.counters["bytes"] = static_cast<double>(snap->metrics_text.size());
}

void BM_PublishOneTier(benchmark::State& bs) {
  State state = make_state(static_cast<int>(bs.range(0)));
  SnapshotPublisher publisher;
  std::shared_ptr<const Snapshot> snap;
  std::uint64_t n = 0;
  for (auto _ : bs) {
    state.catalogs["rapid"].edit().checkpoints[n++ % 100].bytes += 1;
    snap = publisher.publish(state, nullptr, 0);
    benchmark::DoNotOptimize(snap);
  }
}

void BM_PublishEvents(benchmark::State& bs) {
  State state = make_state(static_cast<int>(bs.range(0)));
  SnapshotPublisher publisher;
  std::shared_ptr<const Snapshot> snap;
  for (auto _ : bs) {
    state.events = std::make_shared<const EventCatalog>();
    snap = publisher.publish(state, nullptr, 0);
    benchmark::DoNotOptimize(snap);
  }
}

constexpr unsigned kGpus = 8;
constexpr std::size_t kRing = 1802;

void BM_GpuPoll(benchmark::State& bs) {
  auto published = std::make_shared<GpuState>();
  double t = 1;
  for (unsigned g = 0; g < kGpus; ++g) {
    GpuSeries s(kRing, 1.0);
    for (std::size_t i = 0; i < kRing; ++i) s.add_bucket(static_cast<double>(i + 1), 0.5, 1);
    published->series.emplace(g, std::move(s));
  }
  t = kRing;
  std::shared_ptr<const GpuState> snapshot = published;
  for (auto _ : bs) {
    auto next = std::make_shared<GpuState>(*snapshot);
    t += 1;
    for (auto& [g, s] : next->series) s.add_bucket(t, 0.5, 1);
    snapshot = std::move(next);  // the new state is published; the old one let go
    benchmark::DoNotOptimize(snapshot);
  }
}

void BM_GpuPollDeepCopy(benchmark::State& bs) {
  struct Flat {
    std::vector<GpuBucket> buf;
    std::size_t head = 0;
  };
  auto published = std::make_shared<std::map<unsigned, Flat>>();
  for (unsigned g = 0; g < kGpus; ++g) {
    Flat f;
    f.buf.assign(kRing, GpuBucket{1, 0.5, 1});
    published->emplace(g, std::move(f));
  }
  double t = kRing;
  std::shared_ptr<const std::map<unsigned, Flat>> snapshot = published;
  for (auto _ : bs) {
    auto next = std::make_shared<std::map<unsigned, Flat>>(*snapshot);
    t += 1;
    for (auto& [g, f] : *next) {
      f.buf[f.head] = GpuBucket{t, 0.5, 1};
      f.head = (f.head + 1) % f.buf.size();
    }
    snapshot = std::move(next);
    benchmark::DoNotOptimize(snapshot);
  }
}

BENCHMARK(BM_GpuPoll)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuPollDeepCopy)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PublishUnchanged)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PublishOneTier)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PublishEvents)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ckptmon

BENCHMARK_MAIN();
