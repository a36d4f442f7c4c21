#include "store/verification_ledger.hpp"

#include <functional>
#include <utility>

#include "store/event_tables.hpp"
#include "store/store.hpp"

namespace ckptmon {
namespace {

class StoreVerificationLedger final : public VerificationLedger {
 public:
  explicit StoreVerificationLedger(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  IntegrityStatus load() override {
    // Prunes before it loads: a write.
    return store_->call<IntegrityStatus>(
        [](sql::Db& db) {
          event_tables::prune_integrity(db);
          return event_tables::load_integrity(db);
        },
        Store::Access::kWrite);
  }

  std::uint64_t queued_shards() override {
    return store_->call<std::uint64_t>([](sql::Db& db) { return event_tables::queued_shards(db); });
  }

  std::vector<QueuedShards> queue(std::size_t limit) override {
    return store_->call<std::vector<QueuedShards>>(
        [limit](sql::Db& db) { return event_tables::load_queue(db, limit); });
  }

  void drop(const QueuedShards& q) override {
    write([&](sql::Db& db) { event_tables::drop_queued(db, q.id); });
  }

  void record_shard(const QueuedShards& q, std::size_t index, IntegrityResult r) override {
    write([&](sql::Db& db) { event_tables::record_shard(db, q, index, r); });
  }

  void record_refused(const QueuedShards& q, std::size_t index, PathRefusal why) override {
    write([&](sql::Db& db) { event_tables::record_refused(db, q, index, why); });
  }

  std::vector<ManifestCandidate> manifest_candidates(const std::string& framework,
                                                     std::size_t limit) override {
    return store_->call<std::vector<ManifestCandidate>>(
        [&](sql::Db& db) { return event_tables::manifest_candidates(db, framework, limit); });
  }

  void record_manifest(const ManifestCandidate& c, std::size_t next_index, bool done,
                       std::optional<IntegrityResult> r,
                       std::optional<PathRefusal> refused) override {
    write([&](sql::Db& db) {
      event_tables::record_manifest(db, c, next_index, done, r);
      if (refused) event_tables::count_refused(db, c.tier, *refused);
    });
  }

 private:
  // One transaction on the store thread, waited for, counted as a write.
  void write(const std::function<void(sql::Db&)>& fn) {
    store_->call<bool>(
        [&](sql::Db& db) {
          sql::Transaction tx(db);
          fn(db);
          tx.commit();
          return true;
        },
        Store::Access::kWrite);
  }

  std::shared_ptr<Store> store_;
};

}  // namespace

std::shared_ptr<VerificationLedger> make_verification_ledger(std::shared_ptr<Store> store) {
  if (!store) return nullptr;
  return std::make_shared<StoreVerificationLedger>(std::move(store));
}

}  // namespace ckptmon
