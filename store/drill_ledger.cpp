#include "store/drill_ledger.hpp"

#include <cmath>
#include <utility>

#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace ckptmon {
namespace {

constexpr const char* kColumns =
    "tier, job, finished_at, step, path, framework, failure, objective, locate_seconds, "
    "metadata_seconds, read_seconds, bytes, files, reader_ranks, writer_ranks, cold, planned";

DrillRecord row(const sql::Stmt& st) {
  DrillRecord r;
  r.tier = st.text(0);
  r.job = st.text(1);
  r.finished_at = st.real(2);
  r.step = st.int64(3);
  r.path = st.text(4);
  r.framework = st.text(5);
  r.failure = st.text(6);
  if (!st.is_null(7)) r.objective_seconds = st.real(7);
  r.locate_seconds = st.real(8);
  r.metadata_seconds = st.real(9);
  r.read_seconds = st.real(10);
  r.bytes = static_cast<std::uint64_t>(st.int64(11));
  r.files = static_cast<std::uint64_t>(st.int64(12));
  r.reader_ranks = static_cast<std::uint64_t>(st.int64(13));
  r.writer_ranks = static_cast<std::uint64_t>(st.int64(14));
  r.cold = st.int64(15) != 0;
  r.planned = st.int64(16) != 0;
  return r;
}

class StoreDrillLedger final : public DrillLedger {
 public:
  explicit StoreDrillLedger(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  std::vector<DrillRecord> load() override {
    return store_->call<std::vector<DrillRecord>>([](sql::Db& db) {
      std::vector<DrillRecord> out;
      // The newest row of each (tier, job): SQLite returns the bare columns
      // of the row that holds the max().
      auto st = db.prepare(std::string("SELECT ") + kColumns +
                           ", max(finished_at) FROM restore_drills GROUP BY tier, job");
      while (st.step()) out.push_back(row(st));
      return out;
    });
  }

  void record(const DrillRecord& r) override {
    store_->call<bool>(
        [&r](sql::Db& db) {
          sql::Transaction tx(db);
          auto ins =
              db.prepare(std::string("INSERT OR REPLACE INTO restore_drills(") + kColumns +
                         ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)");
          ins.bind(1, r.tier).bind(2, r.job).bind(3, r.finished_at).bind(4, r.step);
          ins.bind(5, r.path).bind(6, r.framework).bind(7, r.failure);
          if (r.objective_seconds) ins.bind(8, *r.objective_seconds);
          ins.bind(9, r.locate_seconds).bind(10, r.metadata_seconds).bind(11, r.read_seconds);
          ins.bind(12, static_cast<std::int64_t>(r.bytes));
          ins.bind(13, static_cast<std::int64_t>(r.files));
          ins.bind(14, static_cast<std::int64_t>(r.reader_ranks));
          ins.bind(15, static_cast<std::int64_t>(r.writer_ranks));
          ins.bind(16, std::int64_t{r.cold ? 1 : 0}).bind(17, std::int64_t{r.planned ? 1 : 0});
          ins.step();
          auto prune = db.prepare(
              "DELETE FROM restore_drills WHERE tier=?1 AND job=?2 AND finished_at < "
              "(SELECT finished_at FROM restore_drills WHERE tier=?1 AND job=?2 "
              "ORDER BY finished_at DESC LIMIT 1 OFFSET ?3)");
          prune.bind(1, r.tier).bind(2, r.job).bind(3, static_cast<std::int64_t>(kDrillsKept - 1));
          prune.step();
          tx.commit();
          return true;
        },
        Store::Access::kWrite);
  }

  std::vector<DrillRecord> since(double since, std::size_t limit) override {
    return store_->call<std::vector<DrillRecord>>([since, limit](sql::Db& db) {
      std::vector<DrillRecord> out;
      auto st = db.prepare(std::string("SELECT ") + kColumns +
                           " FROM restore_drills WHERE finished_at >= ?1 "
                           "ORDER BY finished_at, tier, job LIMIT ?2");
      st.bind(1, since).bind(2, static_cast<std::int64_t>(limit));
      while (st.step()) out.push_back(row(st));
      return out;
    });
  }

 private:
  std::shared_ptr<Store> store_;
};

}  // namespace

void create_drill_table(sql::Db& db) {
  db.exec(R"(CREATE TABLE IF NOT EXISTS restore_drills(
  tier TEXT NOT NULL, job TEXT NOT NULL, finished_at REAL NOT NULL, step INTEGER NOT NULL,
  path TEXT NOT NULL, framework TEXT NOT NULL, failure TEXT NOT NULL, objective REAL,
  locate_seconds REAL NOT NULL, metadata_seconds REAL NOT NULL, read_seconds REAL NOT NULL,
  bytes INTEGER NOT NULL, files INTEGER NOT NULL, reader_ranks INTEGER NOT NULL,
  writer_ranks INTEGER NOT NULL, cold INTEGER NOT NULL, planned INTEGER NOT NULL,
  PRIMARY KEY(tier, job, finished_at)) WITHOUT ROWID)");
}

std::optional<std::vector<DrillRecord>> load_drills(sql::Db& db, double since, double until) {
  if (!db.has_table("restore_drills")) return std::nullopt;
  std::vector<DrillRecord> out;
  auto st = db.prepare(std::string("SELECT ") + kColumns +
                       " FROM restore_drills WHERE finished_at >= ?1 AND finished_at <= ?2 "
                       "ORDER BY tier, job, finished_at");
  st.bind(1, since).bind(2, until);
  while (st.step()) out.push_back(row(st));
  return out;
}

std::shared_ptr<DrillLedger> make_drill_ledger(std::shared_ptr<Store> store) {
  if (!store) return nullptr;
  return std::make_shared<StoreDrillLedger>(std::move(store));
}

}  // namespace ckptmon
