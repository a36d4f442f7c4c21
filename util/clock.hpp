#pragma once
// Time as the daemon sees it: injected everywhere a decision depends on "now",
// so rules, the tailer and collectors are testable without sleeping.

#include <atomic>
#include <chrono>

namespace ckptmon {

// Wall-clock time in unix seconds. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;
};

// The real wall clock.
class SystemClock final : public Clock {
 public:
  double now() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock the test moves by hand. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start = 1'700'000'000.0) : now_(start) {}
  double now() const override { return now_.load(); }
  void set(double t) { now_.store(t); }
  void advance(double seconds) { now_.store(now_.load() + seconds); }

 private:
  std::atomic<double> now_;
};

}  // namespace ckptmon
