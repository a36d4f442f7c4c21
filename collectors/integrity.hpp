#pragma once
// integrity: a background verifier that re-reads shards whose events carried
// a checksum (queued by manifest_tail) and the files listed in Megatron
// torch_dist `integrity.json` manifests, within a read budget in bytes per
// second, and records ok / mismatch / missing / error per tier. A checkpoint
// that fails verification is not restorable (exporter/metrics.cpp).
// Progress is committed to the state database file by file, so a restart
// neither repeats nor skips a count.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/verification_ledger.hpp"
#include "model/events.hpp"
#include "util/log.hpp"

namespace ckptmon {

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

// A path as an event log or an integrity.json names it, made relative to the
// tier root `root` without touching the file system: an absolute path must lie
// under `root`; `.` and empty components are dropped; `..` is refused
// whatever follows it. Symlinks are for open_beneath to refuse.
struct TierPath {
  std::string rel;                     // components joined by '/', never empty when not refused
  std::optional<PathRefusal> refused;  // set: there is nothing to open
};
TierPath tier_relative_path(std::string_view root, std::string_view path);

// How open_beneath resolves: openat2(2) with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it, or a
// walk component by component with O_NOFOLLOW (tests force the walk).
enum class BeneathMode : std::uint8_t { kAuto, kWalk };

// Opens `rel` (a TierPath::rel) under the directory `root_fd` with `flags`
// (O_NOFOLLOW and O_CLOEXEC are added), following no symlink anywhere on the
// way and never leaving `root_fd`. Returns the descriptor, or -1 with either
// *refused set (a symlink, an escape, a `..`) or *err set to the errno.
int open_beneath(int root_fd, const std::string& rel, int flags,
                 std::optional<PathRefusal>* refused, int* err,
                 BeneathMode mode = BeneathMode::kAuto);

// Reads the open file `fd` to its end and compares its digest with `want`;
// does not close it. `buf` is reused between calls. `progress`, when given, is
// told of every read that returns. Never throws for outside reasons: those
// are kError.
// `read` is read(2) but for tests that need a read that hangs.
using ReadFn = std::function<ssize_t(int fd, void* buf, std::size_t n)>;
IntegrityResult verify_fd(int fd, const Checksum& want, ByteRateLimiter& limiter,
                          std::vector<char>& buf, std::uint64_t* bytes_read, std::string* detail,
                          IntegrityProgress* progress, const Clock* clock,
                          const ReadFn& read = nullptr);

// verify_fd on `path`, opened as it is (callers that trust the path: tests).
IntegrityResult verify_file(const std::string& path, const Checksum& want, ByteRateLimiter& limiter,
                            std::vector<char>& buf, std::uint64_t* bytes_read, std::string* detail);

// The work of the verifier; one run at a time (not thread-safe).
class IntegrityVerifier {
 public:
  IntegrityVerifier(std::shared_ptr<VerificationLedger> ledger, std::shared_ptr<const Clock> clock,
                    ByteRateLimiter::Sleep sleep);

  // tier name -> root path: every path is resolved under its tier's root.
  // `read_deadline_seconds`: a read without progress for this long is stuck.
  void configure(double bytes_per_second, std::map<std::string, std::string> tier_roots,
                 double read_deadline_seconds = 3600);
  // Tests: resolve by walking components instead of openat2.
  void set_beneath_mode(BeneathMode mode) { mode_ = mode; }
  // Tests: read files with `read` (a read that hangs) instead of read(2).
  void set_read(ReadFn read) { read_ = std::move(read); }

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
  // Any thread: what a run is doing now (pending shards, a stuck read).
  std::shared_ptr<const IntegrityProgress> progress() const { return progress_; }
  // Any thread: the file being opened or read, if any (for the stuck-read log).
  std::string reading_path() const;

 private:
  void publish();
  // The directory descriptor of `tier`'s root, opened once per run; -1 with
  // *detail when it cannot be opened.
  int tier_fd(const std::string& tier, std::string* detail);
  // Resolves `path` (as an event or integrity.json names it) under `tier` and
  // verifies it; nullopt when it is refused, never opened (*refused says why).
  std::optional<IntegrityResult> check(const std::string& tier, const std::string& path,
                                       const Checksum& want, std::uint64_t* bytes,
                                       std::string* detail, PathRefusal* refused);
  void close_tier_fds();

  std::shared_ptr<VerificationLedger> ledger_;
  std::shared_ptr<const Clock> clock_;
  ByteRateLimiter limiter_;
  std::map<std::string, std::string> tier_roots_;
  std::map<std::string, int> tier_fds_;  // opened during one run
  BeneathMode mode_ = BeneathMode::kAuto;
  ReadFn read_;
  std::vector<char> buf_;
  double pending_rate_ = 0;                           // guarded by mu_
  std::map<std::string, std::string> pending_roots_;  // guarded by mu_
  double pending_deadline_ = 3600;                    // guarded by mu_
  std::string reading_path_;                          // guarded by mu_
  std::shared_ptr<IntegrityProgress> progress_ = std::make_shared<IntegrityProgress>();
  bool loaded_ = false;
  IntegrityStatus status_;
  mutable std::mutex mu_;  // guards snapshot_ and the pending settings
  std::shared_ptr<const IntegrityStatus> snapshot_;
  log::RateLimiter log_limit_{5, 60};
  std::atomic<bool> stopping_{false};
};

class IntegrityCollector final : public Collector {
 public:
  // `ledger` null: the collector has no targets (tools without a state database).
  IntegrityCollector(std::shared_ptr<const Clock> clock,
                     std::shared_ptr<VerificationLedger> ledger);
  ~IntegrityCollector() override;
  std::string_view name() const override { return "integrity"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  // A run works for one interval, plus the last file's read.
  Duration deadline() const override { return interval_ + read_deadline_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  // Logs the stuck read (once per stuck run) when a read is what holds it up.
  void on_deadline(const std::string& target, State& state) override;

 private:
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<IntegrityVerifier> verifier_;
  Duration read_deadline_ = std::chrono::hours(1);
  bool enabled_ = false;
  bool first_ = true;  // the first run only loads, so readiness does not wait for verification
  Duration interval_ = std::chrono::seconds(30);
};

}  // namespace ckptmon
