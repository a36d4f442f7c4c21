#pragma once
// The verification ledger (collectors/verification_ledger.hpp) kept in the
// state database (store/event_tables.hpp); every call runs on the store's
// thread and waits for it.

#include <memory>

#include "collectors/verification_ledger.hpp"

namespace ckptmon {

class Store;

std::shared_ptr<VerificationLedger> make_verification_ledger(std::shared_ptr<Store> store);

}  // namespace ckptmon
