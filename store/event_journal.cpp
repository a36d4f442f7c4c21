#include "store/event_journal.hpp"

#include <utility>

#include "store/event_tables.hpp"
#include "store/store.hpp"

namespace ckptmon {
namespace {

class DbWriter final : public EventJournal::Writer {
 public:
  explicit DbWriter(sql::Db& db) : db_(db) {}

  JournalState load() override { return event_tables::load(db_); }

  void commit_batch(std::optional<FileId> replaced, const CursorRow& to, const EventCatalog& cat,
                    const EventAggregator& agg) override {
    sql::Transaction tx(db_);
    if (replaced) event_tables::delete_cursor(db_, *replaced);
    event_tables::upsert_cursor(db_, to);
    event_tables::save_batch(db_, cat, agg);
    tx.commit();
  }

  void forget_before(double cutoff) override { event_tables::delete_cursors_before(db_, cutoff); }

  void fold_steps(std::span<const StepKey> folded, const EventCatalog& cat) override {
    sql::Transaction tx(db_);
    event_tables::save_folded(db_, folded, cat);
    tx.commit();
  }

 private:
  sql::Db& db_;
};

class StoreEventJournal final : public EventJournal {
 public:
  explicit StoreEventJournal(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  void post(std::function<void(Writer&)> task) override {
    store_->post([task = std::move(task)](sql::Db& db) {
      DbWriter w(db);
      task(w);
    });
  }

 private:
  std::shared_ptr<Store> store_;
};

}  // namespace

std::shared_ptr<EventJournal> make_event_journal(std::shared_ptr<Store> store) {
  if (!store) return nullptr;
  return std::make_shared<StoreEventJournal>(std::move(store));
}

}  // namespace ckptmon
