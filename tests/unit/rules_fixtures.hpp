#pragma once
// Hand-built catalog snapshots for the rules tests.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/state.hpp"

namespace ckptmon::testing {

// Builds one checkpoint: Ck("staging", "jobA", 100).committed(1000, 10, 20).
struct Ck {
  Checkpoint c;
  Ck(std::string tier, std::string job, std::int64_t step) {
    c.tier = std::move(tier);
    c.job = std::move(job);
    c.step = step;
    c.path = c.job + "/step-" + std::to_string(step);
    c.framework = "pytorch_dcp";
  }
  // Shards written from `first` to `last`; the marker lands at `last`.
  Ck& committed(std::uint64_t bytes, double first, double last) {
    c.state = CkptState::kCommitted;
    c.bytes = bytes;
    c.first_write = first;
    c.last_write = last;
    c.marker_time = last;
    return *this;
  }
  Ck& partial(std::uint64_t bytes, double first, double last) {
    c.state = CkptState::kPartial;
    c.bytes = bytes;
    c.first_write = first;
    c.last_write = last;
    return *this;
  }
  Ck& in_progress(std::uint64_t bytes, double first, double last) {
    c.state = CkptState::kInProgress;
    c.bytes = bytes;
    c.first_write = first;
    c.last_write = last;
    return *this;
  }
  Ck& path(std::string p) {
    c.path = std::move(p);
    return *this;
  }
  Ck& save(double start, double end) {
    c.save_start = start;
    c.save_end = end;
    return *this;
  }
  // Per-file list; bytes becomes their sum.
  Ck& files(std::vector<std::pair<std::string, std::uint64_t>> list) {
    auto v = std::make_shared<std::vector<ShardFile>>();
    c.bytes = 0;
    for (auto& [p, size] : list) {
      v->push_back(ShardFile{p, size, c.last_write});
      c.bytes += size;
    }
    c.files = v->size();
    c.shard_files = std::move(v);
    return *this;
  }
  // The file count alone (no per-file list).
  Ck& file_count(std::uint64_t n) {
    c.files = n;
    return *this;
  }
  operator Checkpoint() const { return c; }
};

inline TierState tier_state(std::string name, TierRole role = TierRole::kRapid,
                            std::string drains_to = "", double size = 0, double avail = 0) {
  TierState t;
  t.config.name = std::move(name);
  t.config.path = "/tiers/" + t.config.name;
  t.config.role = role;
  t.config.drains_to = std::move(drains_to);
  t.up = true;
  t.down_reason.clear();
  if (size > 0) {
    t.has_stats = true;
    t.stats.size_bytes = size;
    t.stats.avail_bytes = avail;
    t.stats.free_bytes = avail;
  }
  return t;
}

}  // namespace ckptmon::testing
