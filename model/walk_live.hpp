#pragma once
// Live figures of one tier's metadata calls during walks: how many are in
// flight and how long they take. Written by the walk's slots, read by scrapes
// while a walk runs (a stuck call shows as in flight). Thread-safe (atomics).

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "model/catalog.hpp"

namespace ckptmon {

struct WalkLive {
  // Upper bounds of ckptmon_scan_call_duration_seconds, seconds.
  static constexpr std::array<double, 13> kBounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1, 10, 60};
  std::atomic<std::int64_t> inflight{0};  // calls issued and not returned
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets{};
  std::atomic<std::uint64_t> sum_ns{0};
  std::atomic<int> slots{0};  // the walk concurrency in use

  void observe(std::uint64_t ns) {
    const double s = static_cast<double>(ns) * 1e-9;
    std::size_t i = 0;
    while (i < kBounds.size() && s > kBounds[i]) ++i;
    buckets[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns.fetch_add(ns, std::memory_order_relaxed);
  }
  std::uint64_t calls() const {
    std::uint64_t n = 0;
    for (const auto& b : buckets) n += b.load(std::memory_order_relaxed);
    return n;
  }
  HistogramData histogram() const {
    HistogramData h(std::vector<double>(kBounds.begin(), kBounds.end()));
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      h.buckets[i] = buckets[i].load(std::memory_order_relaxed);
      h.count += h.buckets[i];
    }
    h.sum = static_cast<double>(sum_ns.load(std::memory_order_relaxed)) * 1e-9;
    return h;
  }
};

}  // namespace ckptmon
