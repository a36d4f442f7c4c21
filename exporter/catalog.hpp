#pragma once
// The checkpoint catalog (tree_scan): ckpt_checkpoints, ckpt_job_*,
// ckpt_latest_committed_step, ckpt_last_checkpoint_*, ckpt_partial_*,
// ckpt_completion_skew_seconds, ckpt_access_findings, ckptmon_scan_*,
// ckptmon_catalog_stale. The recovery point (ckpt_restorable_*) is a rule's
// figure: metrics/rules.cpp renders it.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

namespace ckptmon {

// Part of state_families().
void catalog_families(const State& state, std::vector<prometheus::MetricFamily>& out);

// Renders catalog_families(state) as text, byte for byte the same, keeping
// each tier's share of the per-job families (most of the text) from the last
// call while its catalog object and the event catalog are the same ones: a
// catalog changes only through CopyOnWrite::edit(), which gives it a new
// object once this cache holds it. The per-tier families (scan counters, live
// walk figures, findings) are rendered every time. Loop thread.
class CatalogRenderCache {
 public:
  std::string render(const State& state);
  std::uint64_t renders() const { return renders_; }  // tier catalogs rendered so far

 private:
  static constexpr std::size_t kJobFamilies = 14;
  struct Entry {
    std::shared_ptr<const TierCatalog> catalog;
    std::shared_ptr<const EventCatalog> events;
    std::array<std::string, kJobFamilies> samples;  // per family, without # lines
  };
  std::map<std::string, Entry> tiers_;
  std::array<std::string, kJobFamilies> heads_;  // # HELP and # TYPE of each family
  std::uint64_t renders_ = 0;
};

}  // namespace ckptmon
