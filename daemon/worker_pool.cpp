#include "daemon/worker_pool.hpp"

#include <chrono>

namespace ckptmon {

WorkerPool::WorkerPool(std::size_t max_threads)
    : max_threads_(max_threads == 0 ? 1 : max_threads), shared_(std::make_shared<Shared>()) {}

WorkerPool::~WorkerPool() {
  {
    std::unique_lock lock(shared_->mu);
    shared_->stopping = true;
    shared_->queue.clear();
    shared_->cv.notify_all();
    // Idle threads leave at once; give busy ones a moment to finish normally.
    shared_->exited.wait_for(lock, std::chrono::milliseconds(200),
                             [&] { return shared_->alive == 0; });
  }
  for (auto& t : threads_) {
    // A thread still inside a blocking call holds its own reference to
    // `shared_` and exits by itself once the kernel returns.
    if (t.joinable()) t.detach();
  }
}

void WorkerPool::post(std::function<void()> task) {
  std::lock_guard lock(shared_->mu);
  if (shared_->stopping) return;
  shared_->queue.push_back(std::move(task));
  if (shared_->idle < shared_->queue.size() && shared_->threads < max_threads_) {
    ++shared_->threads;
    ++shared_->alive;
    threads_.emplace_back(&WorkerPool::worker_main, shared_);
  } else {
    shared_->cv.notify_one();
  }
}

void WorkerPool::worker_main(std::shared_ptr<Shared> s) {
  std::unique_lock lock(s->mu);
  while (true) {
    ++s->idle;
    s->cv.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
    --s->idle;
    if (s->stopping) break;
    auto task = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // release captures before taking the lock again
    lock.lock();
  }
  --s->alive;
  s->exited.notify_all();
}

std::size_t WorkerPool::threads() const {
  std::lock_guard lock(shared_->mu);
  return shared_->threads;
}

std::size_t WorkerPool::busy() const {
  std::lock_guard lock(shared_->mu);
  return shared_->alive - shared_->idle;
}

std::size_t WorkerPool::queued() const {
  std::lock_guard lock(shared_->mu);
  return shared_->queue.size();
}

}  // namespace ckptmon
