#include "serve/config_loader.hpp"

#include <future>
#include <memory>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loop_helpers.hpp"

namespace ckptmon {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

struct Outcome {
  std::optional<int> value;
  std::string error;
};

// Starts reader.load(read) on the loop and waits for its answer.
Outcome load_on(testing::LoopThread& loop, DeadlineReader<int>& reader, std::function<int()> read) {
  std::promise<Outcome> p;
  auto f = p.get_future();
  loop.run([&] {
    reader.load(std::move(read), [&p](std::optional<int> v, std::string e) {
      p.set_value(Outcome{v, std::move(e)});
    });
    return 0;
  });
  return f.get();
}

TEST(DeadlineReader, AReadInTimeAnswersWithItsValue) {
  testing::LoopThread loop;
  loop.start();
  DeadlineReader<int> reader(loop.io(), "the configuration", 1h);
  auto out = load_on(loop, reader, [] { return 7; });
  EXPECT_EQ(out.value, std::optional<int>(7));
  EXPECT_EQ(out.error, "");
  std::string error;
  EXPECT_EQ(reader.load_now([] { return 8; }, &error), std::optional<int>(8));
  loop.stop([&] { return 0; });
}

// A read stuck in the kernel (a FIFO opened without O_NONBLOCK, a hung
// mount): the caller hears of it at the deadline, the loop keeps running, and
// no second thread piles up behind the first until it returns.
TEST(DeadlineReader, AStuckReadIsAbandonedAtTheDeadlineAndBlocksNoOne) {
  testing::LoopThread loop;
  loop.start();
  auto gate = std::make_shared<testing::Gate>();
  auto reads = std::make_shared<std::atomic<int>>(0);
  auto stuck = [gate, reads] {
    ++*reads;
    gate->wait();
    return 1;
  };
  {
    DeadlineReader<int> reader(loop.io(), "the configuration", 0ms);
    auto out = load_on(loop, reader, stuck);
    EXPECT_FALSE(out.value);
    EXPECT_EQ(out.error,
              "reading the configuration did not finish within 0s (a FIFO or a hung mount?)");
    ASSERT_TRUE(gate->wait_entered(1));
    // The loop still answers.
    EXPECT_EQ(loop.run([] { return 42; }), 42);
    EXPECT_TRUE(loop.run([&] { return reader.busy(); }));
    out = load_on(loop, reader, stuck);
    EXPECT_FALSE(out.value);
    EXPECT_THAT(out.error, HasSubstr("an earlier read of the configuration has not returned"));
    std::string error;
    EXPECT_FALSE(reader.load_now(stuck, &error));
    EXPECT_THAT(error, HasSubstr("has not returned"));
    EXPECT_EQ(reads->load(), 1);

    gate->release();
    ASSERT_TRUE(loop.eventually([&] { return !reader.busy(); }));
  }
  // Blocking start-up read: the same deadline.
  auto gate2 = std::make_shared<testing::Gate>();
  {
    DeadlineReader<int> reader(loop.io(), "the configuration", 0ms);
    std::string error;
    EXPECT_FALSE(reader.load_now(
        [gate2] {
          gate2->wait();
          return 2;
        },
        &error));
    EXPECT_THAT(error, HasSubstr("did not finish within 0s"));
  }
  // The reader is gone; the thread it left returns without touching it.
  gate2->release();
  loop.stop([&] { return 0; });
}

}  // namespace
}  // namespace ckptmon
