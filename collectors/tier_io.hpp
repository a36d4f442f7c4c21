#pragma once
// tier_io: what the storage path carried. Per tier, every scan_interval on a
// worker with a deadline of probe_timeout, the counters of the source that
// fits the tier's mount (block: /proc/diskstats over the device's members;
// nfs: /proc/self/mountstats; lustre: llite stats; none otherwise), and one
// target for the configured network interfaces. Raw kernel counters become
// monotone running totals (a counter that goes backwards is a reset: counted,
// logged once, never a negative rate). Published as State::io. Errors are
// counted every time and logged once per tier and message; the other
// collectors never wait on this one.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/io_sources.hpp"

namespace ckptmon {

// What folding one read into a tier or interface did.
struct IoFold {
  bool error = false;        // the read failed (counted in errors)
  bool reset = false;        // a raw counter went backwards (counted in resets)
  bool recovered = false;    // ok again after a failure
  bool rebaselined = false;  // devices changed, or the interface came back
};

// Pure. Folds one read of a tier's source taken at `now` into `t`: the
// first read starts the running totals at the raw counters; later reads add
// each non-negative delta; a delta below zero in any counter is a reset (no
// increase that interval, new baseline). Keeps the IoHistory sample and the
// best one-interval read/write rates.
IoFold fold_tier_read(TierIo& t, IoSource source, const SourceRead& r, double now);

// Pure. The same for a network interface. An interface that is gone (or
// unreadable) keeps its totals; when it comes back its counters are a new
// baseline.
IoFold fold_net_read(NetInterfaceIo& n, const NetRead& r, double now);

// Pure. The node sample of a read of the node taken at `now`.
NodeSample node_sample(const NodeIo& n, double now);

// Pure. Sets every tier's shared_with: the other tiers with the same source
// and the same devices.
void update_shared_with(IoState& io);

// The collector target of the network interfaces (no tier name has a ':').
inline constexpr const char* kNetworkTarget = ":network";
// The collector target of the node's memory and pressure (read_node_pressure).
inline constexpr const char* kNodeTarget = ":node";

// Thread-compatible: members are touched on the loop thread only.
class TierIoCollector final : public Collector {
 public:
  explicit TierIoCollector(std::shared_ptr<const Clock> clock) : clock_(std::move(clock)) {}
  std::string_view name() const override { return "tier_io"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return timeout_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  void on_deadline(const std::string& target, State& state) override;
  void on_failure(const std::string& target, const std::string& error, State& state) override;

 private:
  void fail(const std::string& target, const std::string& error, State& state);

  std::shared_ptr<const Clock> clock_;
  std::vector<TierConfig> tiers_;
  std::vector<std::string> interfaces_;
  std::string proc_path_ = "/proc";
  std::string sys_path_ = "/sys";
  Duration timeout_ = std::chrono::seconds(10);
  Duration interval_ = std::chrono::seconds(15);
  // Messages logged already, per tier or interface (logged once each,
  // counted every time); forgotten when that target recovers.
  std::shared_ptr<std::set<std::string>> logged_ = std::make_shared<std::set<std::string>>();
};

}  // namespace ckptmon
