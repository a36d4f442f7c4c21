#include "store/event_journal.hpp"

#include <utility>

#include "store/event_tables.hpp"
#include "store/store.hpp"

namespace ckptmon {
namespace {

// Counts each of its writes with the store as one write (the tasks that use
// it are posted as reads: the tailer catches a failed commit into its
// caller's promise, and loads are reads), so a journal task that swallows a
// failed commit never passes for a write that succeeded.
class DbWriter final : public EventJournal::Writer {
 public:
  DbWriter(Store& store, sql::Db& db) : store_(store), db_(db) {}

  JournalState load() override { return event_tables::load(db_); }

  void commit_batch(std::optional<FileId> replaced, const CursorRow& to, const EventCatalog& cat,
                    const EventAggregator& agg) override {
    write([&] {
      sql::Transaction tx(db_);
      if (replaced) event_tables::delete_cursor(db_, *replaced);
      event_tables::upsert_cursor(db_, to);
      event_tables::save_batch(db_, cat, agg);
      tx.commit();
    });
  }

  void forget_before(double cutoff) override {
    write([&] { event_tables::delete_cursors_before(db_, cutoff); });
  }

  void fold_steps(std::span<const StepKey> folded, const EventCatalog& cat) override {
    write([&] {
      sql::Transaction tx(db_);
      event_tables::save_folded(db_, folded, cat);
      tx.commit();
    });
  }

 private:
  template <typename F>
  void write(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      store_.count_write(&e);
      throw;
    }
    store_.count_write(nullptr);
  }

  Store& store_;
  sql::Db& db_;
};

class StoreEventJournal final : public EventJournal {
 public:
  explicit StoreEventJournal(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  void post(std::function<void(Writer&)> task) override {
    store_->post(
        [store = store_.get(), task = std::move(task)](sql::Db& db) {
          DbWriter w(*store, db);
          task(w);
        },
        Store::Access::kRead);
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
