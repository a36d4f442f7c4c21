#pragma once
// The daemon's state file (SQLite, WAL) under state_dir: the checkpoint
// catalog today, offsets and history as they land. The store is the only
// writer; its writes run on its own thread so the event loop never waits for
// a disk sync. Thread-safe.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/checkpoint.hpp"
#include "store/sqlite.hpp"

namespace ckptmon {

class Store {
 public:
  // Opens (creating the directory and the schema as needed) state_dir/ckptmon.db.
  // Runs PRAGMA quick_check first: a corrupt database (and its -wal and -shm)
  // is renamed to ckptmon.db.corrupt-<UTC timestamp>[-wal|-shm] and a new one
  // created, which the collectors fill again (rebuilt() says so). Returns
  // nullptr with `error` set when none of that is possible.
  static std::unique_ptr<Store> open(const std::string& state_dir, std::string* error);
  ~Store();  // finishes queued writes, then closes
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Present (not deleted) checkpoints by tier. Blocking; call at start.
  std::map<std::string, std::vector<Checkpoint>> load_catalog();

  // Queues one transaction: upsert `changed`, mark `removed` paths deleted at `now`.
  void save_catalog(std::string tier, std::vector<Checkpoint> changed,
                    std::vector<std::string> removed, double now);

  // What a task does to the database, for the write-failure count: only a
  // write that succeeds ends a run of failed ones, and only a write that
  // fails adds to it. A read (or a setting of the connection) that succeeds
  // says nothing about whether the disk takes writes. A task posted as a
  // read that writes inside reports each of its writes with count_write()
  // (the event journal's writer does).
  enum class Access { kRead, kWrite };

  // Runs `fn` on the store thread with the connection (queued, in order).
  void post(std::function<void(sql::Db&)> fn, Access access = Access::kWrite);
  // Blocks until every queued write is done (tests, shutdown, one-shot tools).
  void flush();
  // Runs `fn` on the store thread and waits for its result (rethrowing what it
  // threw). For worker threads and start-up only: never call it on the event loop.
  template <typename T>
  T call(std::function<T(sql::Db&)> fn, Access access = Access::kRead);
  // On the store thread only, inside a task: one write that task made
  // succeeded (failure == nullptr) or failed with *failure.
  void count_write(const std::exception* failure);

  // Writes that failed (reads that fail are their caller's error, not these).
  std::uint64_t errors() const { return errors_.load(); }
  // Writes that failed in a row since the last write that succeeded.
  std::uint64_t consecutive_errors() const { return consecutive_errors_.load(); }
  // The last kFailingAfter writes or more all failed: the state is not being
  // kept (disk full, I/O errors, a database gone bad while running).
  static constexpr std::uint64_t kFailingAfter = 3;
  bool write_failing() const { return consecutive_errors() >= kFailingAfter; }
  std::string last_error() const;
  // 1 when open() found the database corrupt and started a new one, else 0.
  std::uint64_t rebuilt() const { return rebuilt_; }
  // Where the corrupt database was moved; empty unless rebuilt().
  const std::string& moved_aside() const { return moved_aside_; }
  std::uint64_t transactions() const { return transactions_.load(); }
  const std::string& path() const { return path_; }

  // Deleted checkpoints recorded for `tier` (path -> deleted_at); for the API
  // and tests ("deleted" versus "never seen").
  std::map<std::string, double> deleted(const std::string& tier);

 private:
  Store(std::string path, std::unique_ptr<sql::Db> db);
  void run();

  std::string path_;
  std::unique_ptr<sql::Db> db_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  struct Task {
    std::function<void(sql::Db&)> fn;
    Access access;
  };
  std::deque<Task> queue_;
  bool stopping_ = false;
  bool busy_ = false;
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> consecutive_errors_{0};
  mutable std::mutex error_mu_;
  std::string last_error_;
  std::uint64_t rebuilt_ = 0;
  std::string moved_aside_;
  std::atomic<std::uint64_t> transactions_{0};
  std::thread thread_;
};

// For `ckptmon plan` and `ckptmon report --state-dir`: opens
// state_dir/ckptmon.db read-only, beside a daemon that may be writing it (a
// WAL reader; no lock of the daemon's is needed or taken), or, with no -wal
// beside it, as an immutable file: nothing is written or created in
// state_dir, which need not be writable. Returns nullptr
// with `error` naming the file when it is missing, is not a ckptmon state
// database, or has a schema newer than this binary's.
std::unique_ptr<sql::Db> open_state_readonly(const std::string& state_dir, std::string* error);

// Present checkpoints by tier, as Store::load_catalog gives them.
std::map<std::string, std::vector<Checkpoint>> read_catalog(sql::Db& db);

// Every checkpoint committed between since and until (the commit marker's
// time, else the last shard's), deleted ones included: the catalog keeps a
// row per checkpoint after it goes (deleted_at), so this is the history of
// sizes, components, save durations and completion skew. By tier, job, then
// commit time. For `ckptmon report`.
std::vector<Checkpoint> read_committed_history(sql::Db& db, double since, double until);

template <typename T>
T Store::call(std::function<T(sql::Db&)> fn, Access access) {
  auto promise = std::make_shared<std::promise<T>>();
  auto fut = promise->get_future();
  // Posted as a read: a write is counted here, before the caller can see
  // its outcome; a failed read is the caller's.
  post(
      [this, fn = std::move(fn), promise, access](sql::Db& db) {
        try {
          T value = fn(db);
          if (access == Access::kWrite) count_write(nullptr);
          promise->set_value(std::move(value));
        } catch (const std::exception& e) {
          if (access == Access::kWrite) count_write(&e);
          promise->set_exception(std::current_exception());
        } catch (...) {
          if (access == Access::kWrite) {
            const std::runtime_error unknown("unknown exception");
            count_write(&unknown);
          }
          promise->set_exception(std::current_exception());
        }
      },
      Access::kRead);
  return fut.get();
}

}  // namespace ckptmon
