#pragma once
// Time as the daemon sees it: injected everywhere a decision depends on "now",
// so rules, the tailer and collectors are testable without sleeping.
//
// Two readings: wall time for the timestamps the daemon reports (metrics,
// API, alert times, the history) and compares with file times; a monotonic
// reading for the durations it measures itself (how long an alert has been
// active, how long a checkpoint has waited to drain). A wall clock stepped
// back by NTP or an operator moves the first, never the second.

#include <atomic>
#include <chrono>

namespace ckptmon {

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in unix seconds.
  virtual double now() const = 0;
  // Seconds from an arbitrary origin; never goes back.
  virtual double monotonic() const = 0;
};

// The real clocks: system_clock and steady_clock (CLOCK_MONOTONIC).
class SystemClock final : public Clock {
 public:
  double now() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  double monotonic() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock the test moves by hand. Time passing moves both readings; a jump
// of the wall clock (jump_wall, or set/advance backwards) moves only the
// wall reading. The monotonic reading starts equal to the wall one.
// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start = 1'700'000'000.0) : now_(start), mono_(start) {}
  double now() const override { return now_.load(); }
  double monotonic() const override { return mono_.load(); }
  // Sets the wall clock; the monotonic one moves forward by as much when
  // `t` is later than now, and stays when it is earlier.
  void set(double t) {
    const double delta = t - now_.load();
    now_.store(t);
    if (delta > 0) mono_.store(mono_.load() + delta);
  }
  void advance(double seconds) { set(now_.load() + seconds); }
  // The wall clock is stepped by `seconds` (negative: back); no time passes.
  void jump_wall(double seconds) { now_.store(now_.load() + seconds); }

 private:
  std::atomic<double> now_;
  std::atomic<double> mono_;
};

}  // namespace ckptmon
