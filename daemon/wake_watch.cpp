#include "daemon/wake_watch.hpp"

#include <unistd.h>

#include <array>
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
                   // Drain it: the events themselves do not matter, only that files changed.
                   std::array<char, 16384> buf;
                   while (::read(sd_.native_handle(), buf.data(), buf.size()) > 0) {
                   }
                   ++wakes_;
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

bool WakeWatch::busy() const {
  auto it = state_.collectors.find(std::string(collector_->name()));
  if (it == state_.collectors.end()) return false;
  for (const auto& [_, t] : it->second.targets) {
    if (t.in_flight) return true;
  }
  return false;
}

void WakeWatch::fire() {
  if (busy()) {
    pending_ = true;
    return;
  }
  pending_ = false;
  ++runs_;
  runner_.run(collector_->name());
}

void WakeWatch::poke() {
  if (pending_ && !timer_armed_ && !busy()) fire();
}

}  // namespace ckptmon
