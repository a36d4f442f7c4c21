#pragma once
// Runs a collector's targets early when its wake descriptor
// (Collector::wake_fd, inotify) becomes readable: the collector reads it on
// the loop thread (Collector::on_wake, non-blocking, never touching storage)
// and says which targets changed; bursts are coalesced for `delay`, and a
// target still in flight is never overlapped: its wake is kept and honoured
// by poke() once that run has reported. Loop thread only.

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "collectors/collector.hpp"
#include "model/state.hpp"
#include "serve/collector_runner.hpp"

namespace ckptmon {

class WakeWatch {
 public:
  WakeWatch(boost::asio::io_context& io, std::shared_ptr<Collector> collector,
            CollectorRunner& runner, const State& state,
            std::chrono::milliseconds delay = std::chrono::milliseconds(20));
  ~WakeWatch();
  WakeWatch(const WakeWatch&) = delete;
  WakeWatch& operator=(const WakeWatch&) = delete;

  // Starts waiting; false (and nothing happens) when the collector has no
  // descriptor or it cannot be watched.
  bool start();
  void stop();
  // Call after a collector reported: runs again if a wake arrived meanwhile.
  void poke();

 private:
  void wait();
  void fire();
  bool busy(const std::string& target) const;

  std::shared_ptr<Collector> collector_;
  CollectorRunner& runner_;
  const State& state_;
  std::chrono::milliseconds delay_;
  boost::asio::posix::stream_descriptor sd_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool timer_armed_ = false;
  bool pending_all_ = false;       // a wake for every target
  std::set<std::string> pending_;  // targets woken and not run yet
};

}  // namespace ckptmon
