#pragma once
// Time as the daemon sees it: injected everywhere a decision depends on "now",
// so rules, the tailer and collectors are testable without sleeping.
//
// Two readings: wall time for the timestamps the daemon reports (metrics,
// API, alert times, the history) and compares with file times; a monotonic
// reading for the durations it measures itself (how long an alert has been
// active, how long a checkpoint has waited to drain, a collector job's
// deadline, a walk's stall timeout). A wall clock stepped back by NTP or an
// operator moves the first, never the second.
//
// Waiting: code that waits for a monotonic reading (serve/clock_timers.hpp,
// a walk's stall timeout) waits on real time for a real clock and, for a
// clock that moves only when told (FakeClock), wakes when it is moved, so
// tests move time instead of sleeping.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace ckptmon {

// Called after a clock that moves only when told has moved.
using ClockListener = std::function<void()>;

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in unix seconds.
  virtual double now() const = 0;
  // Seconds from an arbitrary origin; never goes back.
  virtual double monotonic() const = 0;
  // A clock that moves only when told calls `fn` after every move, on the
  // thread that moved it, for as long as `fn` lives (drop the shared_ptr to
  // stop), and returns true. A real clock returns false: its time passes on
  // its own, so waiting for it means waiting on real time.
  // By value: the FakeClock override keeps it (a sink parameter).
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual bool listen(std::weak_ptr<const ClockListener> fn) const {
    (void)fn;
    return false;
  }
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

// The process's real clock, for code that is given none.
inline const Clock& system_clock() {
  static const SystemClock kClock;
  return kClock;
}

// A clock the test moves by hand. Time passing moves both readings; a jump
// of the wall clock (jump_wall, or set/advance backwards) moves only the
// wall reading. The monotonic reading starts equal to the wall one. Every
// move calls the listeners (listen()), so timers and waits on this clock
// follow it. Thread-safe.
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
    moved();
  }
  void advance(double seconds) { set(now_.load() + seconds); }
  // The wall clock is stepped by `seconds` (negative: back); no time passes.
  void jump_wall(double seconds) {
    now_.store(now_.load() + seconds);
    moved();
  }
  bool listen(std::weak_ptr<const ClockListener> fn) const override {
    std::lock_guard lock(mu_);
    listeners_.push_back(std::move(fn));
    return true;
  }

 private:
  void moved() const {
    std::vector<std::shared_ptr<const ClockListener>> live;
    {
      std::lock_guard lock(mu_);
      std::erase_if(listeners_, [](const auto& w) { return w.expired(); });
      for (const auto& w : listeners_) {
        if (auto fn = w.lock()) live.push_back(std::move(fn));
      }
    }
    for (const auto& fn : live) (*fn)();  // outside the lock: a listener may listen()
  }

  std::atomic<double> now_;
  std::atomic<double> mono_;
  mutable std::mutex mu_;
  mutable std::vector<std::weak_ptr<const ClockListener>> listeners_;
};

}  // namespace ckptmon
