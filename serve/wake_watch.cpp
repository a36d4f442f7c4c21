#include "serve/wake_watch.hpp"

#include <unistd.h>

#include <cerrno>

#include "util/log.hpp"

namespace ckptmon {

WakeWatch::WakeWatch(boost::asio::io_context& io, std::shared_ptr<Collector> collector,
                     CollectorRunner& runner, const State& state, std::chrono::milliseconds delay)
    : collector_(std::move(collector)),
      runner_(runner),
      state_(state),
      delay_(delay),
      sd_(io),
      timer_(io) {}

WakeWatch::~WakeWatch() {
  *alive_ = false;
  stop();
}

bool WakeWatch::start() {
  const int fd = collector_->wake_fd();
  if (fd < 0) return false;
  // The descriptor belongs to the collector; asio closes its own copy.
  const int copy = ::dup(fd);
  if (copy < 0) return false;
  boost::system::error_code ec;
  sd_.assign(copy, ec);
  if (ec) {
    ::close(copy);
    return false;
  }
  wait();
  return true;
}

void WakeWatch::stop() {
  boost::system::error_code ec;
  timer_.cancel();
  sd_.cancel(ec);
  sd_.close(ec);
}

void WakeWatch::wait() {
  sd_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                 [this, alive = alive_](const boost::system::error_code& ec) {
                   if (ec || !*alive) return;
                   std::set<std::string> targets = collector_->on_wake();
                   if (targets.empty()) {
                     pending_all_ = true;
                   } else {
                     pending_.insert(targets.begin(), targets.end());
                   }
                   if (!timer_armed_) {
                     timer_armed_ = true;
                     timer_.expires_after(delay_);
                     timer_.async_wait([this, alive](const boost::system::error_code& tec) {
                       if (tec || !*alive) return;
                       timer_armed_ = false;
                       fire();
                     });
                   }
                   wait();
                 });
}

bool WakeWatch::busy(const std::string& target) const {
  auto it = state_.collectors.find(std::string(collector_->name()));
  if (it == state_.collectors.end()) return false;
  auto t = it->second.targets.find(target);
  return t != it->second.targets.end() && t->second.in_flight;
}

void WakeWatch::fire() {
  if (pending_all_) {
    for (const auto& t : collector_->targets()) pending_.insert(t);
    pending_all_ = false;
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (busy(*it)) {
      ++it;  // kept: poke() runs it once the run in flight has reported
      continue;
    }
    runner_.run_target(collector_->name(), *it);
    it = pending_.erase(it);  // run, or no longer a target
  }
}

void WakeWatch::poke() {
  if (!pending_.empty() && !timer_armed_) fire();
}

}  // namespace ckptmon
