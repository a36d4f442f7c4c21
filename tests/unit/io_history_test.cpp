#include <gtest/gtest.h>

#include "model/io.hpp"

namespace ckptmon {
namespace {

IoHistory ring(std::initializer_list<std::pair<double, double>> written) {
  IoHistory h;
  for (auto [t, w] : written) {
    IoSample s;
    s.time = t;
    s.counters.written_bytes = w;
    s.counters.metadata_ops[static_cast<std::size_t>(MetaOp::kOpen)] = w / 100;
    h.add(s);
  }
  return h;
}

// Samples at 0, 10, 20, 30 s with 0, 100, 300, 600 bytes written.
TEST(IoHistory, RatesSpanTheSamplesThatBracketTheWindow) {
  const IoHistory h = ring({{0, 0}, {10, 100}, {20, 300}, {30, 600}});
  auto inside = h.rates(12, 18);  // 10 .. 20: 200 B over 10 s
  ASSERT_TRUE(inside);
  EXPECT_DOUBLE_EQ(inside->start, 10);
  EXPECT_DOUBLE_EQ(inside->end, 20);
  EXPECT_DOUBLE_EQ(inside->written_bytes_per_second, 20);
  EXPECT_DOUBLE_EQ(inside->metadata_ops_per_second, 0.2);
  auto exact = h.rates(10, 30);  // samples on both edges: 500 B over 20 s
  ASSERT_TRUE(exact);
  EXPECT_DOUBLE_EQ(exact->start, 10);
  EXPECT_DOUBLE_EQ(exact->end, 30);
  EXPECT_DOUBLE_EQ(exact->written_bytes_per_second, 25);
  auto point = h.rates(20, 20);  // one instant on a sample: no span, unknown
  EXPECT_FALSE(point);
  auto between = h.rates(21, 21);  // one instant between samples: 20 .. 30
  ASSERT_TRUE(between);
  EXPECT_DOUBLE_EQ(between->written_bytes_per_second, 30);
}

TEST(IoHistory, AWindowTheSamplesDoNotReachIsUnknown) {
  const IoHistory h = ring({{10, 100}, {20, 300}});
  EXPECT_FALSE(h.rates(5, 15));   // starts before the first sample
  EXPECT_FALSE(h.rates(15, 25));  // ends after the last
  EXPECT_FALSE(h.rates(18, 12));  // backwards
  EXPECT_FALSE(ring({{10, 1}}).rates(10, 10));
  EXPECT_FALSE(IoHistory{}.rates(0, 1));
}

TEST(IoHistory, ASampleOlderThanTheNewestIsDroppedAndTheRingIsBounded) {
  IoHistory h = ring({{10, 100}, {20, 300}});
  IoSample back;
  back.time = 15;
  h.add(back);
  ASSERT_EQ(h.samples.size(), 2u);
  h.capacity = 2;
  IoSample next;
  next.time = 30;
  next.counters.written_bytes = 400;
  h.add(next);
  ASSERT_EQ(h.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(h.samples.front().time, 20);
}

TEST(NetInterfaceIo, UtilisationUsesTheSameBracketAndTheBusierDirection) {
  NetInterfaceIo n;
  n.link_speed_bytes_per_second = 1000;
  n.history = {{0, 0, 0}, {10, 5000, 2000}, {20, 6000, 9000}};
  ASSERT_TRUE(n.utilisation(12, 18));  // 10 .. 20: rx 100 B/s, tx 700 B/s
  EXPECT_DOUBLE_EQ(*n.utilisation(12, 18), 0.7);
  EXPECT_FALSE(n.utilisation(-1, 5));
  n.link_speed_bytes_per_second.reset();
  EXPECT_FALSE(n.utilisation(12, 18));
}

}  // namespace
}  // namespace ckptmon
