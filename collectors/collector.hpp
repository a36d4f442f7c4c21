#pragma once
// The one interface every collector implements. A collector observes storage
// (blocking calls allowed, on a worker thread) and returns an Update that the
// loop thread applies to the State. Collectors are listed in registry.cpp.

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/http_fetch.hpp"
#include "model/settings.hpp"
#include "model/state.hpp"
#include "util/clock.hpp"

namespace ckptmon {

// Blocking work for one target. Runs on a worker thread; must not touch State.
// Throwing is allowed: the runner catches it and counts the run as failed.
using Job = std::function<Update()>;

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  // Loop thread. Called at start and after every successful reload.
  virtual void configure(const Config& cfg) = 0;
  // Loop thread. How often every target runs, and how long one run may take
  // before the target is reported as timed out (the run itself goes on).
  virtual Duration interval() const = 0;
  virtual Duration deadline() const = 0;
  // Loop thread. Independent units of work (usually tier names). Each runs
  // with its own deadline and never twice at the same time.
  virtual std::vector<std::string> targets() const = 0;
  // Loop thread. Captures everything the job needs by value: from `state`
  // only shared, immutable parts (CopyOnWrite::shared()), since the job runs
  // while the loop goes on changing it.
  virtual Job prepare(const std::string& target, const State& state) = 0;
  // Loop thread. The target's job is past its deadline and still blocked.
  virtual void on_deadline(const std::string& /*target*/, State& /*state*/) {}
  // Loop thread. The target's job threw `error`.
  virtual void on_failure(const std::string& /*target*/, const std::string& /*error*/,
                          State& /*state*/) {}
  // Loop thread. The target was not probed this time: its job never reached
  // a worker before its deadline (every worker busy with stuck jobs), or the
  // target already has a stuck job. Nothing new is known of it; `why` says
  // which.
  virtual void on_not_started(const std::string& /*target*/, const std::string& /*why*/,
                              State& /*state*/) {}
  // A descriptor that becomes readable when the collector wants to run before
  // its interval is up (inotify), or -1.
  virtual int wake_fd() const { return -1; }
  // Loop thread, when wake_fd() is readable: read it without blocking (never
  // touching storage) and return the targets to run early; empty = all.
  virtual std::set<std::string> on_wake() { return {}; }
};

class DrillLedger;
class EventJournal;
class VerificationLedger;

struct CollectorEnv {
  // Shared so that a job still blocked on a hung mount at shutdown never
  // outlives the clock it reads.
  std::shared_ptr<const Clock> clock;
  // Persistence ports (collectors/event_journal.hpp,
  // collectors/verification_ledger.hpp), implemented over the state database
  // by store/ and injected by the daemon; null in tools without one.
  std::shared_ptr<EventJournal> event_journal;
  std::shared_ptr<VerificationLedger> verification_ledger;
  // Makes the HTTP GET of sources that scrape or query a peer (gpu.source
  // dcgm, prometheus) with their TLS, credentials and headers; null in tools
  // without one (the source then reports down).
  HttpFetchFactory http_fetch;
  // Where the scheduled restore drills keep their results
  // (collectors/drill_ledger.hpp); null in tools without a state database.
  std::shared_ptr<DrillLedger> drill_ledger;
};

// Every collector the daemon runs, in a fixed order (collectors/registry.cpp).
std::vector<std::shared_ptr<Collector>> make_collectors(const CollectorEnv& env);

}  // namespace ckptmon
