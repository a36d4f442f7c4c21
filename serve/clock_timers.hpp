#pragma once
// Timers on the loop thread that follow a Clock's monotonic reading: a timer
// set for 20 s fires once the clock has moved 20 s on. With the real clock
// it waits on an asio steady_timer (steady_clock is the real monotonic
// reading); with a clock that moves only when told (FakeClock) it never
// waits on real time and fires when a move makes it due, so tests advance
// the clock instead of sleeping. Loop thread only; the clock may be moved
// from any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "util/clock.hpp"
#include "util/duration.hpp"

namespace ckptmon {

class ClockTimers {
 public:
  using Id = std::uint64_t;  // 0 is never a timer

  ClockTimers(boost::asio::io_context& io, std::shared_ptr<const Clock> clock);
  // Pending timers are dropped, never called.
  ~ClockTimers();
  ClockTimers(const ClockTimers&) = delete;
  ClockTimers& operator=(const ClockTimers&) = delete;

  // Calls `fn` on the loop thread once clock.monotonic() reaches now + `after`
  // (a zero or negative `after`: at the next turn of the loop).
  Id after(double seconds, std::function<void()> fn);
  Id after(Duration d, std::function<void()> fn) { return after(to_seconds(d), std::move(fn)); }
  // Forgets a timer; nothing for one that fired or was cancelled.
  void cancel(Id id);
  std::size_t pending() const { return queue_.size(); }
  const Clock& clock() const { return *clock_; }

 private:
  struct Guard {
    std::mutex mu;
    ClockTimers* self = nullptr;
    boost::asio::io_context* io = nullptr;
  };
  void fire_due();
  void rearm();
  static void post_fire(const std::shared_ptr<Guard>& guard);

  std::shared_ptr<const Clock> clock_;
  boost::asio::steady_timer wake_;
  std::shared_ptr<Guard> guard_;
  std::shared_ptr<const ClockListener> listener_;  // set for a clock that moves when told
  std::map<std::pair<double, Id>, std::function<void()>> queue_;
  std::map<Id, double> when_;
  Id next_id_ = 1;
  bool firing_ = false;
};

}  // namespace ckptmon
