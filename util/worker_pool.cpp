#include "util/worker_pool.hpp"

#include <algorithm>
#include <chrono>

namespace ckptmon {

WorkerPool::WorkerPool(std::size_t max_threads, long max_spare)
    : max_threads_(max_threads == 0 ? 1 : max_threads),
      max_spare_(max_spare < 0 ? max_threads_ : static_cast<std::size_t>(max_spare)),
      shared_(std::make_shared<Shared>()) {
  shared_->max_threads = max_threads_;
  shared_->max_spare = max_spare_;
}

WorkerPool::~WorkerPool() {
  std::map<std::thread::id, std::thread> handles;
  {
    std::unique_lock lock(shared_->mu);
    shared_->stopping = true;
    shared_->queue.clear();
    shared_->cv.notify_all();
    // Idle threads leave at once; give busy ones a moment to finish normally.
    shared_->exited.wait_for(lock, std::chrono::milliseconds(200),
                             [&] { return shared_->alive == 0; });
    handles.swap(shared_->handles);
  }
  for (auto& [_, t] : handles) {
    // A thread still inside a blocking call holds its own reference to
    // `shared_` and exits by itself once the kernel returns.
    if (t.joinable()) t.detach();
  }
}

std::size_t WorkerPool::Shared::limit() const {
  return max_threads + std::min(stuck.size(), max_spare);
}

void WorkerPool::Shared::grow(const std::shared_ptr<Shared>& self) {
  if (idle < queue.size() && threads < limit()) {
    ++threads;
    ++alive;
    std::thread t(&WorkerPool::worker_main, self);
    const auto id = t.get_id();
    handles.emplace(id, std::move(t));
  } else {
    cv.notify_one();
  }
}

std::uint64_t WorkerPool::post(std::function<void()> task) {
  std::lock_guard lock(shared_->mu);
  if (shared_->stopping) return 0;
  const std::uint64_t ticket = shared_->next_ticket++;
  shared_->queue.emplace_back(ticket, std::move(task));
  shared_->grow(shared_);
  return ticket;
}

void WorkerPool::mark_stuck(std::uint64_t ticket) {
  std::lock_guard lock(shared_->mu);
  if (shared_->stopping || !shared_->running.contains(ticket)) return;
  if (!shared_->stuck.insert(ticket).second) return;
  if (!shared_->queue.empty()) shared_->grow(shared_);
}

void WorkerPool::worker_main(std::shared_ptr<Shared> s) {
  std::unique_lock lock(s->mu);
  while (true) {
    ++s->idle;
    s->cv.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
    --s->idle;
    if (s->stopping) break;
    auto [ticket, task] = std::move(s->queue.front());
    s->queue.pop_front();
    s->running.insert(ticket);
    lock.unlock();
    task();
    task = nullptr;  // release captures before taking the lock again
    lock.lock();
    s->running.erase(ticket);
    s->stuck.erase(ticket);
    // Above the limit (a spare whose stuck task returned, or a stuck thread
    // whose spare took over): leave unless the queue needs this thread.
    if (s->threads > s->limit() && s->queue.size() <= s->idle) {
      --s->threads;
      auto it = s->handles.find(std::this_thread::get_id());
      if (it != s->handles.end()) {
        it->second.detach();
        s->handles.erase(it);
      }
      break;
    }
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

std::size_t WorkerPool::stuck() const {
  std::lock_guard lock(shared_->mu);
  return shared_->stuck.size();
}

bool WorkerPool::starved() const {
  std::lock_guard lock(shared_->mu);
  const Shared& s = *shared_;
  return !s.queue.empty() && s.stuck.size() >= s.threads && s.threads >= s.limit();
}

std::size_t WorkerPool::queued() const {
  std::lock_guard lock(shared_->mu);
  return shared_->queue.size();
}

}  // namespace ckptmon
