#pragma once
// The event journal (collectors/event_journal.hpp) kept in the state
// database: tasks run on the store's thread, each batch in one SQLite
// transaction with the log's read position (store/event_tables.hpp).

#include <memory>

#include "collectors/event_journal.hpp"

namespace ckptmon {

class Store;

std::shared_ptr<EventJournal> make_event_journal(std::shared_ptr<Store> store);

}  // namespace ckptmon
