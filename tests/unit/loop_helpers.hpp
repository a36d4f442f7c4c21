#pragma once
// Test helpers for code that lives on an io_context thread: run a function
// there and wait for it, poll a condition there (bounded, nothing timed), and
// a gate a worker job can block on until the test opens it.

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace ckptmon::testing {

// Runs `fn` on the thread running `io` and returns its result.
template <typename Fn>
auto run_on(boost::asio::io_context& io, Fn fn) {
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto fut = task.get_future();
  boost::asio::post(io, [&task] { task(); });
  return fut.get();
}

// Polls `pred` on the loop until it holds. The cap only turns a bug into a
// failure instead of a hang; nothing is asserted about how long it took.
template <typename Pred>
bool eventually_on(boost::asio::io_context& io, Pred pred) {
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!run_on(io, pred)) {
    if (std::chrono::steady_clock::now() > cap) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// An io_context run by a thread of its own, for loop-only objects under test.
class LoopThread {
 public:
  LoopThread() = default;
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;
  ~LoopThread() {
    stop([] {});
  }

  boost::asio::io_context& io() { return io_; }
  void start() {
    thread_ = std::thread([this] { io_.run(); });
  }
  template <typename Fn>
  auto run(Fn fn) {
    return run_on(io_, std::move(fn));
  }
  template <typename Pred>
  bool eventually(Pred pred) {
    return eventually_on(io_, std::move(pred));
  }
  // Runs `last` on the loop (closing what lives there), then stops it.
  template <typename Fn>
  void stop(Fn last) {
    if (!thread_.joinable()) return;
    run(std::move(last));
    guard_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
      boost::asio::make_work_guard(io_);
  std::thread thread_;
};

// Lets a job block until the test opens it. Shared with the job so that a job
// still blocked when the test's objects are gone never touches freed memory.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;

  void wait() {
    std::unique_lock lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  void close() {
    std::lock_guard lock(mu);
    open = false;
  }
  int entered_count() {
    std::lock_guard lock(mu);
    return entered;
  }
  bool wait_entered(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered >= n; });
  }
};

}  // namespace ckptmon::testing
