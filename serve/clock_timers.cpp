#include "serve/clock_timers.hpp"

#include <boost/asio/post.hpp>

namespace ckptmon {

ClockTimers::ClockTimers(boost::asio::io_context& io, std::shared_ptr<const Clock> clock)
    : clock_(std::move(clock)), wake_(io), guard_(std::make_shared<Guard>()) {
  guard_->self = this;
  guard_->io = &io;
  auto listener = std::make_shared<const ClockListener>([guard = std::weak_ptr<Guard>(guard_)] {
    if (auto g = guard.lock()) post_fire(g);
  });
  if (clock_->listen(listener)) listener_ = std::move(listener);
}

ClockTimers::~ClockTimers() {
  {
    std::lock_guard lock(guard_->mu);
    guard_->self = nullptr;
    guard_->io = nullptr;
  }
  listener_.reset();
  wake_.cancel();
}

void ClockTimers::post_fire(const std::shared_ptr<Guard>& guard) {
  std::lock_guard lock(guard->mu);
  if (guard->io == nullptr) return;
  boost::asio::post(*guard->io, [guard] {
    // Gone meanwhile (destroyed on this, the loop, thread): nothing to fire.
    if (guard->self != nullptr) guard->self->fire_due();
  });
}

ClockTimers::Id ClockTimers::after(double seconds, std::function<void()> fn) {
  const Id id = next_id_++;
  const double at = clock_->monotonic() + seconds;
  queue_.emplace(std::pair{at, id}, std::move(fn));
  when_.emplace(id, at);
  if (seconds <= 0 && listener_) {
    post_fire(guard_);  // due already: a manual clock will not move for it
  } else {
    rearm();
  }
  return id;
}

void ClockTimers::cancel(Id id) {
  auto it = when_.find(id);
  if (it == when_.end()) return;
  queue_.erase(std::pair{it->second, id});
  when_.erase(it);
  rearm();
}

void ClockTimers::fire_due() {
  if (firing_) return;  // a callback that ran the loop: the outer call goes on
  firing_ = true;
  // One at a time: a callback may set or cancel timers.
  while (!queue_.empty()) {
    auto first = queue_.begin();
    if (first->first.first > clock_->monotonic()) break;
    std::function<void()> fn = std::move(first->second);
    when_.erase(first->first.second);
    queue_.erase(first);
    fn();
  }
  firing_ = false;
  rearm();
}

void ClockTimers::rearm() {
  if (listener_ || firing_) return;  // a manual clock wakes us when it moves
  if (queue_.empty()) {
    wake_.cancel();
    return;
  }
  const double wait = queue_.begin()->first.first - clock_->monotonic();
  wake_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(wait > 0 ? wait : 0)));
  wake_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) fire_due();  // cancelled (also at destruction): `this` is not touched
  });
}

}  // namespace ckptmon
