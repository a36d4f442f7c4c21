#pragma once
// Template definitions of DeadlineReader (config_loader.hpp).

#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "util/duration.hpp"

namespace ckptmon {

template <typename T>
struct DeadlineReader<T>::Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool returned = false;
  std::optional<T> value;
  // Cleared when the reader goes away or stops waiting: the thread then
  // only stores its result.
  boost::asio::io_context* io = nullptr;
  std::function<void()> on_return;  // runs on the loop when the read returns
};

template <typename T>
bool DeadlineReader<T>::busy() const {
  if (!current_) return false;
  std::lock_guard lock(current_->mu);
  return !current_->returned;
}

template <typename T>
std::string DeadlineReader<T>::timeout_message() const {
  return "reading " + what_ + " did not finish within " +
         format_duration(Duration(deadline_.count())) + " (a FIFO or a hung mount?)";
}

template <typename T>
void DeadlineReader<T>::detach() {
  if (!current_) return;
  std::lock_guard lock(current_->mu);
  current_->io = nullptr;
  current_->on_return = nullptr;
}

template <typename T>
std::optional<T> DeadlineReader<T>::load_now(Read read, std::string* error) {
  if (busy()) {
    *error = "an earlier read of " + what_ + " has not returned yet (hung mount?)";
    return std::nullopt;
  }
  detach();
  auto shared = std::make_shared<Shared>();
  current_ = shared;
  std::thread([shared, read = std::move(read)] {
    std::optional<T> v = read();
    std::lock_guard lock(shared->mu);
    shared->value = std::move(v);
    shared->returned = true;
    shared->cv.notify_all();
  }).detach();
  std::unique_lock lock(shared->mu);
  if (!shared->cv.wait_for(lock, deadline_, [&] { return shared->returned; })) {
    *error = timeout_message();
    return std::nullopt;
  }
  return std::move(shared->value);
}

template <typename T>
void DeadlineReader<T>::load(Read read, Done done) {
  if (busy()) {
    boost::asio::post(io_, [done = std::move(done), w = what_] {
      done(std::nullopt, "an earlier read of " + w + " has not returned yet (hung mount?)");
    });
    return;
  }
  detach();
  auto shared = std::make_shared<Shared>();
  current_ = shared;
  auto timer = std::make_shared<boost::asio::steady_timer>(io_, deadline_);
  auto answered = std::make_shared<bool>(false);
  auto done_ptr = std::make_shared<Done>(std::move(done));
  shared->io = &io_;
  // Holds `shared` until the thread hands it to the loop (or detach() drops it).
  shared->on_return = [s = shared, timer, answered, done_ptr] {
    if (*answered) return;
    *answered = true;
    timer->cancel();
    std::optional<T> v;
    {
      std::lock_guard lock(s->mu);
      v = std::move(s->value);
    }
    (*done_ptr)(std::move(v), std::string());
  };
  timer->async_wait(
      [timer, answered, done_ptr, msg = timeout_message()](const boost::system::error_code& ec) {
        if (ec || *answered) return;
        *answered = true;
        (*done_ptr)(std::nullopt, msg);
      });
  std::thread([shared, read = std::move(read)] {
    std::optional<T> v = read();
    std::lock_guard lock(shared->mu);
    shared->value = std::move(v);
    shared->returned = true;
    auto cb = std::move(shared->on_return);
    shared->on_return = nullptr;
    if (shared->io != nullptr && cb) boost::asio::post(*shared->io, std::move(cb));
  }).detach();
}

}  // namespace ckptmon
