#pragma once
// integrity: a background verifier that re-reads shards whose events carried
// a checksum (queued by manifest_tail) and the files listed in Megatron
// torch_dist `integrity.json` manifests, within a read budget in bytes per
// second, and records ok / mismatch / missing / error per tier. A checkpoint
// that fails verification is not restorable (daemon/metrics.cpp).
// Progress is committed to the state database file by file, so a restart
// neither repeats nor skips a count.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "model/events.hpp"
#include "util/log.hpp"

namespace ckptmon {

class Store;

// Paces reads to `bytes_per_second` on average, allowing a burst of one
// second's worth after idling. Time comes from an injected clock and waiting
// from an injected sleep, so tests run on a FakeClock. Not thread-safe.
class ByteRateLimiter {
 public:
  using Sleep = std::function<void(double seconds)>;
  ByteRateLimiter(double bytes_per_second, std::shared_ptr<const Clock> clock, Sleep sleep);
  // Accounts for `bytes` read, sleeping first if the budget is spent.
  void acquire(std::uint64_t bytes);
  void set_rate(double bytes_per_second);
  double slept_seconds() const { return slept_; }

 private:
  void refill();

  double rate_;
  std::shared_ptr<const Clock> clock_;
  Sleep sleep_;
  double tokens_ = 0;
  double last_ = 0;
  double slept_ = 0;
};

// Re-reads one file and compares its digest with `want`. `buf` is reused
// between calls. Never throws for outside reasons: those are kError.
IntegrityResult verify_file(const std::string& path, const Checksum& want, ByteRateLimiter& limiter,
                            std::vector<char>& buf, std::uint64_t* bytes_read, std::string* detail);

// The work of the verifier; one run at a time (not thread-safe).
class IntegrityVerifier {
 public:
  IntegrityVerifier(std::shared_ptr<Store> store, std::shared_ptr<const Clock> clock,
                    ByteRateLimiter::Sleep sleep);

  // tier name -> root path, for relative shard paths and integrity.json.
  void configure(double bytes_per_second, std::map<std::string, std::string> tier_roots);

  struct Pass {
    std::uint64_t files = 0;  // files verified (any result)
    std::uint64_t bytes = 0;
    bool finished = true;  // false: stopped at the budget with work left
  };
  // Verifies queued shards, then unverified integrity.json checkpoints,
  // until there is no work left or `budget_seconds` have passed.
  Pass run(double budget_seconds);
  std::shared_ptr<const IntegrityStatus> snapshot() const;
  // Any thread: a run in progress returns after its current file (shutdown).
  void stop() { stopping_ = true; }

 private:
  void publish();
  std::string resolve(const std::string& tier, const std::string& path) const;

  std::shared_ptr<Store> store_;
  std::shared_ptr<const Clock> clock_;
  ByteRateLimiter limiter_;
  std::map<std::string, std::string> tier_roots_;
  std::vector<char> buf_;
  double pending_rate_ = 0;                           // guarded by mu_
  std::map<std::string, std::string> pending_roots_;  // guarded by mu_
  bool loaded_ = false;
  IntegrityStatus status_;
  mutable std::mutex mu_;  // guards snapshot_ and the pending settings
  std::shared_ptr<const IntegrityStatus> snapshot_;
  log::RateLimiter log_limit_{5, 60};
  std::atomic<bool> stopping_{false};
};

class IntegrityCollector final : public Collector {
 public:
  IntegrityCollector(std::shared_ptr<const Clock> clock, std::shared_ptr<Store> store);
  ~IntegrityCollector() override;
  std::string_view name() const override { return "integrity"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return std::chrono::hours(1); }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target) override;

 private:
  std::shared_ptr<IntegrityVerifier> verifier_;
  bool enabled_ = false;
  bool first_ = true;  // the first run only loads, so readiness does not wait for verification
  Duration interval_ = std::chrono::seconds(30);
};

}  // namespace ckptmon
