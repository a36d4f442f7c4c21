#pragma once
// tier_stats: statvfs and mount identity of every tier root. A probe on a hung
// mount is never waited for: the runner marks the tier down at the deadline
// and the late result brings it back.

#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/mountinfo.hpp"

namespace ckptmon {

struct TierProbe {
  bool ok = false;
  std::string error;  // why the tier is down, when !ok
  TierStats stats;
};

// Blocking. Opens the tier root, statvfs()es it, finds its mount in
// `<proc_path>/self/mountinfo` and detects its encryption
// (collectors/encryption.hpp, device-mapper layers from `sys_path`). Never
// creates, modifies or follows anything below the root.
TierProbe probe_tier(const std::string& path, const std::string& proc_path,
                     const std::string& sys_path = "/sys");

struct TierMount {
  bool ok = false;
  std::string error;
  MountInfo mount;  // the mount holding the tier root, when ok
};

// Blocking. The mount the tier root lives on, found the way probe_tier()
// finds it (the root's device number and canonical path against
// `<proc_path>/self/mountinfo`). Touches nothing below the root.
TierMount resolve_tier_mount(const std::string& path, const std::string& proc_path);

// Thread-compatible: all members are touched on the loop thread only.
class TierStatsCollector final : public Collector {
 public:
  explicit TierStatsCollector(std::shared_ptr<const Clock> clock) : clock_(std::move(clock)) {}
  std::string_view name() const override { return "tier_stats"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return timeout_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  void on_deadline(const std::string& target, State& state) override;
  void on_failure(const std::string& target, const std::string& error, State& state) override;
  // Not probed (collector.hpp): a tier that read up is down for as long as
  // it goes unprobed, since its last answer is no longer a fact about now; a
  // tier already down keeps the reason it was found down for.
  void on_not_started(const std::string& target, const std::string& why, State& state) override;

 private:
  std::shared_ptr<const Clock> clock_;
  std::vector<TierConfig> tiers_;
  std::string proc_path_;
  std::string sys_path_;
  Duration timeout_{};
  Duration interval_{};
};

}  // namespace ckptmon
