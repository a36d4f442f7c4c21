#include "util/worker_pool.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

using namespace std::chrono_literals;

// A gate that tasks wait on until the test opens it. Shared so that a task
// still waiting after the pool is destroyed never touches freed memory.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;
  int passed = 0;
  int done = 0;  // bumped by tasks that want to say they finished

  void wait() {
    std::unique_lock lock(mu);
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    --waiting;
    ++passed;
    cv.notify_all();
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  // Waits (bounded, so a bug fails the test instead of hanging it) until
  // `pred` holds under the lock.
  template <typename Pred>
  bool wait_until(Pred pred, std::chrono::milliseconds cap = 10s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, cap, [&] { return pred(*this); });
  }
};

TEST(WorkerPool, RunsEveryTask) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> sum{0};
  {
    WorkerPool pool(3);
    for (int i = 1; i <= 20; ++i) {
      pool.post([i, &sum, gate] {
        sum += i;
        std::lock_guard lock(gate->mu);
        ++gate->passed;
        gate->cv.notify_all();
      });
    }
    ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 20; }));
    EXPECT_LE(pool.threads(), 3u);
    EXPECT_GE(pool.threads(), 1u);
  }
  EXPECT_EQ(sum.load(), 210);
}

TEST(WorkerPool, TasksRunOffTheCallingThread) {
  auto gate = std::make_shared<Gate>();
  std::thread::id ran_on;
  WorkerPool pool(1);
  pool.post([&ran_on, gate] {
    std::lock_guard lock(gate->mu);
    ran_on = std::this_thread::get_id();
    ++gate->passed;
    gate->cv.notify_all();
  });
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 1; }));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(WorkerPool, StartsNoThreadBeforeWorkArrives) {
  WorkerPool pool(4);
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_EQ(pool.busy(), 0u);
  EXPECT_EQ(pool.queued(), 0u);
}

TEST(WorkerPool, GrowsOnDemandUpToTheCapAndNoFurther) {
  auto gate = std::make_shared<Gate>();
  WorkerPool pool(3);
  pool.post([gate] { gate->wait(); });
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 1; }));
  EXPECT_EQ(pool.threads(), 1u);
  EXPECT_EQ(pool.busy(), 1u);

  pool.post([gate] { gate->wait(); });
  pool.post([gate] { gate->wait(); });
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 3; }));
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_EQ(pool.busy(), 3u);

  // Over the cap: queued, not run, no fourth thread.
  pool.post([gate] { gate->wait(); });
  pool.post([gate] { gate->wait(); });
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_EQ(pool.queued(), 2u);
  {
    std::lock_guard lock(gate->mu);
    EXPECT_EQ(gate->waiting, 3);
  }

  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 5; }));
  EXPECT_EQ(pool.threads(), 3u);
}

// Bounded wait (no timing asserted) until `pred` holds, for counts the pool
// changes on its own threads after a task has returned.
template <typename Pred>
bool eventually(Pred pred) {
  const auto cap = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > cap) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(WorkerPool, StuckTasksGetSpareThreadsUpToTheBoundThenShrinkBack) {
  auto gate = std::make_shared<Gate>();
  WorkerPool pool(2, 1);  // two threads, at most one spare
  const auto t1 = pool.post([gate] { gate->wait(); });
  const auto t2 = pool.post([gate] { gate->wait(); });
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 2; }));
  const auto t3 = pool.post([gate] { gate->wait(); });
  pool.post([gate] { gate->wait(); });
  EXPECT_EQ(pool.threads(), 2u);
  EXPECT_EQ(pool.queued(), 2u);
  EXPECT_FALSE(pool.starved());  // busy, not stuck: the queue only waits

  // A task still queued is not stuck: no spare for it.
  pool.mark_stuck(t3);
  EXPECT_EQ(pool.stuck(), 0u);
  EXPECT_EQ(pool.threads(), 2u);
  EXPECT_FALSE(pool.starved());

  // The first stuck task buys one spare, which takes queued work at once.
  pool.mark_stuck(t1);
  EXPECT_EQ(pool.stuck(), 1u);
  EXPECT_EQ(pool.threads(), 3u);
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 3; }));
  EXPECT_EQ(pool.queued(), 1u);

  // The bound holds: a second stuck task (and marking one twice) buys none.
  pool.mark_stuck(t2);
  pool.mark_stuck(t1);
  EXPECT_EQ(pool.stuck(), 2u);
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_EQ(pool.queued(), 1u);
  // The spare runs t3, which is not stuck: the last task waits on it.
  EXPECT_FALSE(pool.starved());
  // Once t3 is stuck too, every thread is held and no spare is left.
  pool.mark_stuck(t3);
  EXPECT_EQ(pool.stuck(), 3u);
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_TRUE(pool.starved());

  // Once the stuck tasks return, the pool shrinks back to its cap.
  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 4; }));
  ASSERT_TRUE(eventually([&] { return pool.threads() == 2u && pool.busy() == 0u; }));
  EXPECT_EQ(pool.stuck(), 0u);
  EXPECT_EQ(pool.queued(), 0u);
  EXPECT_FALSE(pool.starved());
}

TEST(WorkerPool, TheDefaultSpareBoundIsTheCap) {
  auto gate = std::make_shared<Gate>();
  WorkerPool pool(2);
  EXPECT_EQ(pool.max_spare(), 2u);
  std::vector<std::uint64_t> tickets;
  for (int i = 0; i < 6; ++i) tickets.push_back(pool.post([gate] { gate->wait(); }));
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 2; }));
  // Mark whatever runs as stuck, round after round: never more than 2 + 2.
  for (int round = 0; round < 3; ++round) {
    for (auto t : tickets) pool.mark_stuck(t);
  }
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 4; }));
  EXPECT_EQ(pool.threads(), 4u);
  EXPECT_EQ(pool.queued(), 2u);
  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 6; }));
  ASSERT_TRUE(eventually([&] { return pool.threads() == 2u; }));
}

TEST(WorkerPool, ReusesAnIdleThreadInsteadOfStartingAnother) {
  auto gate = std::make_shared<Gate>();
  WorkerPool pool(8);
  for (int i = 0; i < 5; ++i) {
    pool.post([gate] {
      std::lock_guard lock(gate->mu);
      ++gate->passed;
      gate->cv.notify_all();
    });
    // Each task finishes before the next is posted, so one thread suffices.
    ASSERT_TRUE(gate->wait_until([i](Gate& g) { return g.passed == i + 1; }));
    // The thread becomes idle only after the task returns; wait for that too.
    const auto cap = std::chrono::steady_clock::now() + 10s;
    while (pool.busy() != 0 && std::chrono::steady_clock::now() < cap) std::this_thread::yield();
    ASSERT_EQ(pool.busy(), 0u);
  }
  EXPECT_EQ(pool.threads(), 1u);
}

TEST(WorkerPool, ZeroCapMeansOneThread) {
  auto gate = std::make_shared<Gate>();
  WorkerPool pool(0);
  pool.post([gate] { gate->wait(); });
  pool.post([gate] { gate->wait(); });
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 1; }));
  EXPECT_EQ(pool.threads(), 1u);
  EXPECT_EQ(pool.queued(), 1u);
  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 2; }));
}

TEST(WorkerPool, DestructorDoesNotWaitForABlockedTask) {
  auto gate = std::make_shared<Gate>();
  auto first_resumed = std::make_shared<std::atomic<bool>>(false);
  auto queued_ran = std::make_shared<std::atomic<bool>>(false);
  {
    WorkerPool pool(2);
    pool.post([gate, first_resumed] {
      gate->wait();
      first_resumed->store(true);
      std::lock_guard lock(gate->mu);
      ++gate->done;
      gate->cv.notify_all();
    });
    // Queued behind the cap? No: a second thread takes it. This one is
    // blocked too, and a third is queued and must never run.
    pool.post([gate] { gate->wait(); });
    pool.post([queued_ran] { queued_ran->store(true); });
    ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 2; }));
    EXPECT_EQ(pool.queued(), 1u);
    // Leaving the scope must return although both threads are stuck: if it
    // joined them, the test would hang here (and time out in ctest).
  }
  // The queued task was destroyed with the queue: nothing else holds its
  // captures, so no thread can run it once the gate opens.
  EXPECT_EQ(queued_ran.use_count(), 1);
  EXPECT_FALSE(first_resumed->load());
  {
    std::lock_guard lock(gate->mu);
    EXPECT_EQ(gate->waiting, 2);
  }
  // Unblock the detached threads: they finish their task against the shared
  // state they still hold and exit without touching the destroyed pool.
  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 2 && g.done == 1; }));
  EXPECT_TRUE(first_resumed->load());  // the first task resumed after the gate
  EXPECT_FALSE(queued_ran->load());
}

TEST(WorkerPool, QueuedWorkIsDroppedAtDestruction) {
  auto gate = std::make_shared<Gate>();
  auto dropped_ran = std::make_shared<std::atomic<bool>>(false);
  {
    WorkerPool pool(1);
    pool.post([gate] { gate->wait(); });
    pool.post([dropped_ran] { dropped_ran->store(true); });
    ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.waiting == 1; }));
    EXPECT_EQ(pool.queued(), 1u);
  }
  // The queued task was destroyed with the queue: nothing else holds its
  // captures, so it can never run.
  EXPECT_EQ(dropped_ran.use_count(), 1);
  gate->release();
  ASSERT_TRUE(gate->wait_until([](Gate& g) { return g.passed == 1; }));
  EXPECT_FALSE(dropped_ran->load());
}

}  // namespace
}  // namespace ckptmon
