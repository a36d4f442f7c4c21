#pragma once
// Threads for blocking file-system work, so the event loop never waits on
// storage. Threads start on demand up to a cap. A thread stuck in the kernel
// (statfs on a hung NFS mount) cannot be interrupted, so at destruction such
// threads are detached rather than joined; their shared state outlives the
// pool. Thread-safe.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ckptmon {

class WorkerPool {
 public:
  explicit WorkerPool(std::size_t max_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; a thread runs it as soon as one is free. `task` must not throw.
  void post(std::function<void()> task);

  std::size_t threads() const;  // started so far
  std::size_t busy() const;     // running a task now
  std::size_t queued() const;

 private:
  struct Shared {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    std::size_t threads = 0;
    std::size_t idle = 0;
    std::size_t alive = 0;
    bool stopping = false;
    std::condition_variable exited;
  };
  static void worker_main(std::shared_ptr<Shared> s);

  std::size_t max_threads_;
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
};

}  // namespace ckptmon
