#pragma once
// Threads for blocking file-system work, so the event loop never waits on
// storage. Threads start on demand up to a cap. A thread stuck in the kernel
// (statfs on a hung NFS mount) cannot be interrupted, so at destruction such
// threads are detached rather than joined; their shared state outlives the
// pool. Thread-safe.
//
// Stuck work must not starve the rest: the caller marks a task that is past
// its deadline as stuck (mark_stuck), and for each stuck task the pool may
// start one spare thread above the cap, at most `max_spare` of them (by
// default as many as the cap, so never more than 2 x max_threads threads).
// When a stuck task returns, a thread above the cap that has nothing to do
// exits, so the pool shrinks back.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace ckptmon {

class WorkerPool {
 public:
  // `max_spare` < 0: as many spares as `max_threads`.
  explicit WorkerPool(std::size_t max_threads, long max_spare = -1);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; a thread runs it as soon as one is free. `task` must not
  // throw. Returns a ticket for mark_stuck (never 0).
  std::uint64_t post(std::function<void()> task);
  // The task behind `ticket` is running past its deadline: allow one spare
  // thread for it (up to the bound). Does nothing for a task that is not
  // running (still queued or already returned) or already marked.
  void mark_stuck(std::uint64_t ticket);

  std::size_t threads() const;  // started and not exited
  std::size_t busy() const;     // running a task now
  std::size_t stuck() const;    // running a task marked stuck
  std::size_t queued() const;
  // Queued work has no thread to run it, now or soon: every thread runs a
  // stuck task and the bound allows no spare. A queue behind busy threads
  // whose tasks are not (yet) stuck is not starved: it is only waiting.
  bool starved() const;
  std::size_t max_threads() const { return max_threads_; }
  std::size_t max_spare() const { return max_spare_; }

 private:
  struct Shared {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<std::pair<std::uint64_t, std::function<void()>>> queue;
    std::set<std::uint64_t> running;
    std::set<std::uint64_t> stuck;  // subset of running
    std::map<std::thread::id, std::thread> handles;
    std::size_t threads = 0;
    std::size_t idle = 0;
    std::size_t alive = 0;
    std::size_t max_threads = 1;
    std::size_t max_spare = 0;
    std::uint64_t next_ticket = 1;
    bool stopping = false;
    std::condition_variable exited;

    // Threads allowed now: the cap plus one spare per stuck task, bounded.
    std::size_t limit() const;
    // Starts a thread if queued work has no idle thread and the limit allows.
    // Called with `mu` held.
    void grow(const std::shared_ptr<Shared>& self);
  };
  static void worker_main(std::shared_ptr<Shared> s);

  std::size_t max_threads_;
  std::size_t max_spare_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace ckptmon
