#pragma once
// What the daemon currently knows about its tiers. The loop thread owns the one
// mutable State; collectors hand it Updates, and a copy is published as an
// immutable snapshot for scrapes and the API. Not thread-safe by itself.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "model/catalog.hpp"
#include "model/copy_on_write.hpp"
#include "model/events.hpp"
#include "model/gpu.hpp"
#include "model/io.hpp"
#include "model/restore_drill.hpp"
#include "model/settings.hpp"

namespace ckptmon {

// File-system figures of one tier from statvfs and /proc/self/mountinfo.
struct TierStats {
  double size_bytes = 0;   // f_blocks * f_frsize
  double free_bytes = 0;   // f_bfree * f_frsize (includes root-reserved blocks)
  double avail_bytes = 0;  // f_bavail * f_frsize (what an unprivileged writer can use)
  double files = 0;        // f_files
  double files_free = 0;   // f_ffree
  bool readonly = false;   // from the superblock options in mountinfo
  std::string mountpoint;
  std::string fstype;
  std::string device;  // mount source as mountinfo shows it
  // Detected from the system by the probe (collectors/encryption.hpp), never
  // taken from the configuration. At rest: fscrypt, dm-crypt, ecryptfs,
  // gocryptfs, none or unknown; in transit: krb5p, tls, smb3-seal, none, local
  // or unknown. A detection that fails is unknown, never none.
  std::string encryption_at_rest = "unknown";
  std::string encryption_in_transit = "unknown";
  std::string encryption_detail;  // how it was told, or why it is unknown
};

struct TierState {
  TierConfig config;
  bool up = false;
  std::string down_reason = "not probed yet";
  bool has_stats = false;  // stats hold a successful probe (possibly older than the last failure)
  TierStats stats;
  double last_success = 0;  // unix seconds of the last successful probe; 0 = never
  double last_probe = 0;    // unix seconds the last probe result (or deadline) was recorded
  // Unix seconds since when the tier's probe has not been run (its job never
  // reached a worker, or another job for it is stuck); 0 while it is probed.
  double not_probed_since = 0;
};

// Outcome of the runs of one collector, over all its targets.
struct CollectorStatus {
  struct Target {
    bool success = false;
    double duration_seconds = 0;
    bool in_flight = false;
    // The last outcome was "not started" (not probed); logged once per
    // stretch, the return logged once too.
    bool not_probed = false;
  };
  std::map<std::string, Target> targets;
  std::uint64_t timeouts = 0;
  std::uint64_t skipped = 0;
  // Runs that never reached a worker: still queued at their deadline, or
  // refused because their target already has a stuck job. Not probed.
  std::uint64_t not_started = 0;
  std::uint64_t errors = 0;
  // Results dropped on return because their tier was re-pointed or removed
  // by a reload while the run was in flight (State::current_tier).
  std::uint64_t stale_results_dropped = 0;

  bool success() const;             // every target's last run succeeded
  double duration_seconds() const;  // the slowest target's last run
};

struct State {
  std::shared_ptr<const Config> config;
  std::map<std::string, TierState> tiers;  // by tier name, the same set as config->tiers
  std::map<std::string, CollectorStatus> collectors;
  // By tier name. Shared with the snapshots published from this State: a
  // change goes through edit(), which copies a catalog a snapshot still holds.
  std::map<std::string, CopyOnWrite<TierCatalog>> catalogs;
  // What the checkpoint event logs said (manifest_tail) and what the
  // integrity verifier found; immutable snapshots, null until first loaded.
  std::shared_ptr<const EventCatalog> events;
  std::shared_ptr<const IntegrityStatus> integrity;
  // What the verifier is doing now (live: scrapes read its atomics); null
  // until its first run returned.
  std::shared_ptr<const IntegrityProgress> integrity_progress;
  // What the GPU source observed (collectors/gpu.cpp); null while gpu.source is none.
  std::shared_ptr<const GpuState> gpu;
  // What the storage path carried (collectors/tier_io.cpp); null until its
  // first run.
  std::shared_ptr<const IoState> io;
  // What the scheduled restore drills found (collectors/drill_collector.cpp);
  // null until that collector's first run.
  std::shared_ptr<const DrillState> drills;

  // The event-log view of a checkpoint the scanner found, or null.
  const EventStep* event_step(const Checkpoint& c) const;
  // Whether the integrity verifier found `c` broken (then it is not restorable).
  bool integrity_failed(const Checkpoint& c) const;

  // Aligns `tiers` and `catalogs` with a new configuration: keeps what is
  // known about tiers that stay (same name and epoch, TierConfig::generation),
  // adds new and re-pointed ones as not probed yet, drops removed ones.
  void apply_config(std::shared_ptr<const Config> cfg);

  // Whether a result of `collector` for `tier`, prepared under the tier epoch
  // `generation` (TierConfig::generation), still applies: the tier is
  // configured and has not been re-pointed since. A stale result is dropped
  // by the caller; this counts it (collectors[collector].stale_results_dropped)
  // and logs it at debug.
  bool current_tier(std::string_view collector, const std::string& tier, std::uint64_t generation);
};

// A change computed off the loop (on a worker) and applied on the loop thread.
using Update = std::function<void(State&)>;

}  // namespace ckptmon
