#pragma once
// A value the loop's State shares with the snapshots published from it (and
// with whatever a snapshot's renderer cached): copying shares, reading is
// const, and edit() gives the one writer a private copy first whenever anyone
// else still holds the current one. So a snapshot never sees a later change,
// and publishing costs nothing for what did not change. Not thread-safe by
// itself: one thread edits (the loop); any thread may hold and read copies.

#include <atomic>
#include <memory>
#include <utility>

namespace ckptmon {

template <typename T>
class CopyOnWrite {
 public:
  CopyOnWrite() : p_(std::make_shared<T>()) {}
  explicit CopyOnWrite(T value) : p_(std::make_shared<T>(std::move(value))) {}

  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_.get(); }
  // The current value as a shared, immutable object: its address changes at
  // the first edit() after someone else took hold of it.
  std::shared_ptr<const T> shared() const { return p_; }

  // For changing the value: copies it first when it is shared.
  T& edit() {
    if (p_.use_count() != 1) {
      p_ = std::make_shared<T>(std::as_const(*p_));
    } else {
      // The last other holder may just have let go on another thread (its
      // release); see its reads before writing.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return *p_;
  }

 private:
  std::shared_ptr<T> p_;
};

}  // namespace ckptmon
