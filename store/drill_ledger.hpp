#pragma once
// The drill ledger (collectors/drill_ledger.hpp) kept in the state database,
// table restore_drills (schema version 9); every call runs on the store's
// thread and waits for it.

#include <memory>
#include <optional>
#include <vector>

#include "collectors/drill_ledger.hpp"

namespace ckptmon {

class Store;
namespace sql {
class Db;
}

std::shared_ptr<DrillLedger> make_drill_ledger(std::shared_ptr<Store> store);

// The table, for the schema migration (store/store.cpp).
void create_drill_table(sql::Db& db);

// The drills that finished in [since, until], by tier, job and time, for
// `ckptmon report`; nullopt when the database has no drill table (older than
// schema 9). Throws sql::Error.
std::optional<std::vector<DrillRecord>> load_drills(sql::Db& db, double since, double until);

}  // namespace ckptmon
