#pragma once
// `ckptmon burst --expect-detection URL`: asks a running ckptmon (http or https,
// /api/v1/tiers, /api/v1/checkpoints, /metrics) whether it saw what the burst
// did: each failed writer's checkpoint reported partial within the tier's
// partial_after + one scan interval, the fill threshold (the next checkpoint
// does not fit, or capacity headroom below 1), and the drain backlog while it
// existed. Blocking; runs on the burst's own thread.

#include <optional>
#include <string>
#include <vector>

#include "config/rules_config.hpp"
#include "tools/burst/burst.hpp"
#include "util/clock.hpp"

namespace ckptmon {

struct ExpectTarget {
  HttpUrl url;
  double timeout = 120;  // seconds, the longest any check waits
};

struct ExpectCheck {
  std::string name;  // "partial", "fill", "drain_backlog", "tier"
  bool ok = false;
  std::string detail;
};

// Parses the URL and asks the daemon once (/api/v1/tiers); nullopt with
// `error` when the URL is bad or the daemon cannot be reached.
std::optional<ExpectTarget> prepare_expect(const std::string& url, const std::string& timeout,
                                           std::string* error);

// Runs the checks. Called when the writes are done and the drain may still
// be copying (`engine.drain_backlog()` tells what is left).
std::vector<ExpectCheck> run_expect(const ExpectTarget& t, const burst::Options& o,
                                    const burst::Result& r, const burst::Burst& engine,
                                    const Clock& clock);

}  // namespace ckptmon
