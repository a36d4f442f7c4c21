#pragma once
// Thin RAII wrappers over the SQLite C API: a connection and prepared
// statements, errors as exceptions carrying SQLite's message (caught at the
// store's edge). Not thread-safe: one connection per thread.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ckptmon::sql {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Stmt;

class Db {
 public:
  // How a connection opens its file.
  enum class Mode {
    kReadWrite,  // opens or creates
    // An existing file, never written: no journal, no lock beyond SQLite's
    // shared reader lock (a WAL reader beside the writer). Beware: a WAL
    // database without its -wal file gets a -wal and a -shm created beside
    // it, and left there; kImmutable is for that case.
    kReadOnly,
    // An existing file read as it is (SQLite's immutable=1): no lock, no -wal
    // or -shm read or created, so it works where nothing can be written.
    // Only right while no WAL holds changes the file lacks, and nothing
    // writes the file meanwhile.
    kImmutable,
  };
  // Throws Error.
  explicit Db(const std::string& path, bool read_only = false)
      : Db(path, read_only ? Mode::kReadOnly : Mode::kReadWrite) {}
  Db(const std::string& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(std::string_view sql);  // statements without results
  Stmt prepare(std::string_view sql);
  std::int64_t changes() const { return sqlite3_changes64(db_); }
  // The primary result code of the last call that failed (SQLITE_CORRUPT, ...).
  int error_code() const { return sqlite3_errcode(db_) & 0xff; }
  int user_version();
  void set_user_version(int v);
  // Whether the schema has a table of that name.
  bool has_table(std::string_view name);
  // Statements still running at `deadline` stop with SQLITE_INTERRUPT (their
  // step() throws; error_code() says SQLITE_INTERRUPT): a query an outsider
  // asked for cannot hold a connection for long. time_point::max(): none.
  void set_deadline(std::chrono::steady_clock::time_point deadline);

 private:
  sqlite3* db_ = nullptr;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
};

class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(Stmt&& o) noexcept : db_(o.db_), st_(o.st_) { o.st_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binding is 1-based like SQLite's.
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_blob(int i, std::string_view bytes);
  // Steps once: true while a row is available.
  bool step();
  // Runs to completion (INSERT/UPDATE/DELETE) and resets for reuse.
  void run();
  void reset();

  std::int64_t int64(int col) const { return sqlite3_column_int64(st_, col); }
  double real(int col) const { return sqlite3_column_double(st_, col); }
  std::string text(int col) const;
  std::string blob(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  int columns() const { return sqlite3_column_count(st_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace ckptmon::sql
