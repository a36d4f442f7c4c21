// The state database's binary event rows (store/event_codec.hpp): their byte
// layout checked by hand, malformed rows refused whatever is wrong with
// them, a corrupt stored row counted and kept, and the migration from the
// JSON rows of schema 6.

#include "store/event_codec.hpp"

#include <gtest/gtest.h>

#include "store/bytes.hpp"
#include "store/event_tables.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

using testing::TempDir;

std::string hex(std::string_view b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : b) {
    const auto u = static_cast<unsigned char>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 15];
  }
  return out;
}

TEST(Bytes, VarintsZigzagAndDoublesAreLaidOutAsSpecified) {
  bytes::Writer w;
  w.u64(300);     // LEB128: ac 02
  w.i64(-1);      // zigzag 1: 01
  w.i64(2);       // zigzag 4: 04
  w.f64(1000.0);  // 0x408f400000000000, little-endian
  w.flag(true);   // 01
  w.str("ab");    // 02 61 62
  EXPECT_EQ(hex(w.take()),
            "ac020104"
            "00000000"
            "00408f40"
            "01"
            "026162");
}

TEST(Bytes, AReaderNeverReadsPastItsInput) {
  bytes::Reader cut(std::string_view("\xac", 1));  // a varint cut short
  EXPECT_EQ(cut.u64(), 0u);
  EXPECT_FALSE(cut.ok());
  bytes::Reader longer(
      std::string_view("\x05"
                       "abc",
                       4));  // a string longer than what is left
  EXPECT_EQ(longer.str(), "");
  EXPECT_FALSE(longer.ok());
  // A count of a million 8-byte items in a 3-byte input fails before any allocation.
  bytes::Writer w;
  w.u64(1'000'000);
  std::string big = w.take() + "xyz";
  bytes::Reader r(big);
  EXPECT_EQ(r.count(8), 0u);
  EXPECT_FALSE(r.ok());
  bytes::Reader flag(std::string_view("\x02", 1));
  flag.flag();
  EXPECT_FALSE(flag.ok());
}

EventStep sample_step() {
  EventStep s;
  s.start_ts = 1000.0;
  s.commit_ts = 1020.5;
  s.committed = true;
  s.shards = 2;
  s.last_rank = -1;
  s.pause_starts = {{-1, 1001.0}, {3, 1002.0}};
  s.failure_reason = "disk full";
  DrainProgress d;
  d.bytes = 7;
  d.ok = false;
  s.drains["a>b"] = d;
  s.pause_observed = true;
  return s;
}

TEST(EventCodec, AStepRowStartsWithItsFormatAndItsFieldsInOrder) {
  const std::string row = encode_event_row(sample_step());
  // 01 the format, 01 a step; start_ts 1000.0 (0x408f400000000000) and commit_ts
  // 1020.5 (0x408fe40000000000) little-endian; committed 01; commit_files 0,
  // commit_bytes 0, shards 2 as varints.
  ASSERT_GE(row.size(), 22u);
  EXPECT_EQ(hex(row.substr(0, 22)),
            "0101"
            "0000000000408f40"
            "0000000000e48f40"
            "01"
            "00"
            "00"
            "02");
  // It ends with duration_observed 00 and pause_observed 01.
  EXPECT_EQ(hex(row.substr(row.size() - 2)), "0001");
}

TEST(EventCodec, EveryCutAndEveryExtraByteIsRefused) {
  for (const std::string& row : {encode_event_row(sample_step()), encode_event_row(EventJob{}),
                                 encode_event_row(EventRestores{})}) {
    for (std::size_t cut = 0; cut < row.size(); ++cut) {
      const std::string_view part = std::string_view(row).substr(0, cut);
      EXPECT_FALSE(decode_event_step(part)) << cut;
      EXPECT_FALSE(decode_event_job(part)) << cut;
      EXPECT_FALSE(decode_event_restores(part)) << cut;
    }
    EXPECT_FALSE(decode_event_step(row + '\0'));
    EXPECT_FALSE(decode_event_job(row + '\0'));
    EXPECT_FALSE(decode_event_restores(row + '\0'));
  }
  // What schema 6 stored, read as a row of schema 7: refused (not half-read).
  EXPECT_FALSE(decode_event_step(R"({"start_ts":1000})"));
  const std::string ok = encode_event_row(sample_step());
  ASSERT_TRUE(decode_event_step(ok));
  std::string other_format = ok;
  other_format[0] = '\x02';
  EXPECT_FALSE(decode_event_step(other_format));
  std::string other_kind = ok;
  other_kind[1] = '\x02';  // says it is a job
  EXPECT_FALSE(decode_event_step(other_kind));
  EXPECT_FALSE(decode_event_job(other_kind));
  std::string bad_flag = ok;
  bad_flag[18] = '\x02';  // committed: neither 0 nor 1
  EXPECT_FALSE(decode_event_step(bad_flag));
}

TEST(EventCodec, KeysOutOfOrderAndPaddedVarintsAreRefused) {
  // A job row whose slow_ranks lists rank 5 before rank 2.
  EventJob job;
  job.slow_ranks = {{2, 1}, {5, 1}};
  std::string row = encode_event_row(job);
  // The map sits before evicted_through (-1: 01), cleanups, cleanup_bytes
  // (00 00) and last_event_ts (8 bytes): count 02, then 04 01 (rank 2), 0a 01 (rank 5).
  const std::size_t at = row.size() - 8 - 3 - 5;
  ASSERT_EQ(hex(row.substr(at, 5)), "0204010a01");
  ASSERT_TRUE(decode_event_job(row));
  std::string swapped = row;
  swapped.replace(at, 5, std::string("\x02\x0a\x01\x04\x01", 5));
  EXPECT_FALSE(decode_event_job(swapped));
  // cleanups 0 written as 80 00 (two bytes for one value): not canonical.
  std::string padded = row;
  padded.replace(row.size() - 8 - 2, 1, std::string("\x80\x00", 2));
  EXPECT_FALSE(decode_event_job(padded));
}

// --- in the state database ---------------------------------------------------------

std::unique_ptr<Store> open_store(const TempDir& dir) {
  std::string error;
  auto s = Store::open(dir.str() + "/state", &error);
  EXPECT_TRUE(s) << error;
  return s;
}

TEST(EventCodec, ACorruptStoredRowIsCountedKeptAndTheOthersLoad) {
  TempDir dir;
  auto store = open_store(dir);
  ASSERT_TRUE(store);
  store->call<int>([](sql::Db& db) {
    auto st = db.prepare("INSERT INTO event_steps(tier, job, step, data) VALUES(?1,?2,?3,?4)");
    st.bind(1, std::string_view("rapid"))
        .bind(2, std::string_view("llama"))
        .bind(3, std::int64_t{1});
    st.bind_blob(4, encode_event_row(sample_step()));
    st.run();
    const std::string corrupt = encode_event_row(sample_step()).substr(0, 12);
    st.bind(1, std::string_view("rapid"))
        .bind(2, std::string_view("llama"))
        .bind(3, std::int64_t{2});
    st.bind_blob(4, corrupt);
    st.run();
    auto jobs = db.prepare("INSERT INTO event_jobs(tier, job, data) VALUES('rapid','llama',?1)");
    jobs.bind_blob(1, std::string_view("\x01\xff", 2));
    jobs.run();
    return 0;
  });
  const JournalState loaded =
      store->call<JournalState>([](sql::Db& db) { return event_tables::load(db); });
  ASSERT_EQ(loaded.catalog.steps.size(), 1u);
  EXPECT_EQ(loaded.catalog.steps.begin()->first.step, 1);
  EXPECT_EQ(loaded.catalog.steps.begin()->second.commit_ts, 1020.5);
  EXPECT_EQ(loaded.catalog.unreadable_rows[0], 1u);  // event_steps
  EXPECT_EQ(loaded.catalog.unreadable_rows[1], 1u);  // event_jobs
  EXPECT_EQ(loaded.catalog.unreadable_rows[2], 0u);
  EXPECT_TRUE(loaded.catalog.jobs.empty());
  // Unreadable is not deleted: both rows are still there.
  EXPECT_EQ(store->call<std::int64_t>([](sql::Db& db) {
    auto st = db.prepare("SELECT count(*) FROM event_steps");
    return st.step() ? st.int64(0) : -1;
  }),
            2);
}

// A database written by schema 6 (JSON rows, data TEXT), opened by this
// build: every row re-encoded, the values the JSON held, a row that was not
// JSON kept as it was and counted when loaded.
TEST(EventCodec, SchemaSixJsonRowsAreMigratedAndAnUnreadableOneIsKept) {
  TempDir dir;
  {
    auto store = open_store(dir);
    ASSERT_TRUE(store);
    store->call<int>([](sql::Db& db) {
      db.exec("DROP TABLE event_steps");
      db.exec("DROP TABLE event_jobs");
      db.exec("DROP TABLE event_restores");
      db.exec(
          "CREATE TABLE event_steps(tier TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT "
          "NULL, data TEXT NOT NULL, PRIMARY KEY(tier, job, step)) WITHOUT ROWID");
      db.exec(
          "CREATE TABLE event_jobs(tier TEXT NOT NULL, job TEXT NOT NULL, data TEXT NOT NULL, "
          "PRIMARY KEY(tier, job)) WITHOUT ROWID");
      db.exec(
          "CREATE TABLE event_restores(job TEXT NOT NULL PRIMARY KEY, data TEXT NOT NULL) "
          "WITHOUT ROWID");
      // As schema 6's encoder wrote them (store/event_codec.cpp at 6), by hand.
      db.exec(
          R"(INSERT INTO event_steps VALUES('rapid','llama',10,'{"start_ts":1000.0,"commit_ts":1020.0,"committed":true,"shards":4,"last_rank":3,"pause_starts":[[2,1001.5]],"pause_ends":[],"drains":{"rapid>cold":{"start_ts":1030.0,"done_ts":0.0,"bytes":9,"shards":1,"ok":null}},"failure_reason":"","duration_observed":true}'))");
      db.exec("INSERT INTO event_steps VALUES('rapid','llama',11,'not json at all')");
      db.exec(
          R"(INSERT INTO event_jobs VALUES('rapid','llama','{"duration":{"bounds":[1.0,10.0],"buckets":[0,1,0],"sum":5.0,"count":1},"failures":2,"recent_failures":[{"step":7,"ts":900.0,"reason":"oom"}],"slow_ranks":[[3,4]],"evicted_through":6}'))");
      db.exec(
          R"(INSERT INTO event_restores VALUES('llama','{"restores":1,"failed":0,"last_ok_ts":1200.0,"last":{"step":10,"tier":"rapid","ts":1200.0,"bytes":8,"ok":true,"duration":3.0},"pending_starts":{"10/0":1197.0}}'))");
      db.set_user_version(6);
      return 0;
    });
  }
  auto store = open_store(dir);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->call<int>([](sql::Db& db) { return db.user_version(); }), 9);
  EXPECT_NE(store
                ->call<std::string>([](sql::Db& db) {
                  auto st = db.prepare("SELECT sql FROM sqlite_master WHERE name='event_steps'");
                  return st.step() ? st.text(0) : std::string();
                })
                .find("data BLOB"),
            std::string::npos);
  const JournalState loaded =
      store->call<JournalState>([](sql::Db& db) { return event_tables::load(db); });
  const EventCatalog& c = loaded.catalog;
  ASSERT_EQ(c.steps.size(), 1u);
  const EventStep& s = c.steps.at(StepKey{"rapid", "llama", 10});
  EXPECT_EQ(s.start_ts, 1000.0);
  EXPECT_EQ(s.commit_ts, 1020.0);
  EXPECT_TRUE(s.committed);
  EXPECT_EQ(s.shards, 4u);
  EXPECT_EQ(s.last_rank, 3);
  EXPECT_EQ(s.pause_starts.at(2), 1001.5);
  EXPECT_EQ(s.drains.at("rapid>cold").bytes, 9u);
  EXPECT_FALSE(s.drains.at("rapid>cold").ok.has_value());
  EXPECT_TRUE(s.duration_observed);
  EXPECT_EQ(c.unreadable_rows[0], 1u);  // 'not json at all', kept
  const EventJob& j = c.jobs.at({"rapid", "llama"});
  EXPECT_EQ(j.duration.bounds, (std::vector<double>{1.0, 10.0}));
  EXPECT_EQ(j.duration.buckets, (std::vector<std::uint64_t>{0, 1, 0}));
  EXPECT_EQ(j.failures, 2u);
  EXPECT_EQ(j.recent_failures.at(0).reason, "oom");
  EXPECT_EQ(j.slow_ranks.at(3), 4u);
  EXPECT_EQ(j.evicted_through, 6);
  EXPECT_EQ(j.pause.bounds, pause_buckets());  // absent: the default buckets
  const EventRestores& r = c.restores.at("llama");
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->duration, 3.0);
  EXPECT_EQ(r.pending_starts.at("10/0"), 1197.0);
  EXPECT_EQ(store->call<std::string>([](sql::Db& db) {
    auto st = db.prepare("SELECT data FROM event_steps WHERE step=11");
    return st.step() ? st.blob(0) : std::string();
  }),
            "not json at all");
}

}  // namespace
}  // namespace ckptmon
