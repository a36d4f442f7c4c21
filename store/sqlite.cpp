#include "store/sqlite.hpp"

#include "util/text.hpp"

namespace ckptmon::sql {

Db::Db(const std::string& path, Mode mode) {
  int flags = SQLITE_OPEN_READONLY;
  std::string name = path;
  if (mode == Mode::kReadWrite) flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (mode == Mode::kImmutable) {
    flags |= SQLITE_OPEN_URI;
    // RFC 3986: all but unreserved bytes and '/' escaped, so '?', '#' and '%'
    // in a directory name stay part of the path.
    name = "file:" + url_encode(path, "/") + "?immutable=1";
  }
  if (sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
}

Db::~Db() { sqlite3_close(db_); }

void Db::set_deadline(std::chrono::steady_clock::time_point deadline) {
  deadline_ = deadline;
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    return;
  }
  // Every few thousand virtual machine instructions: a clock read is cheap
  // next to them.
  sqlite3_progress_handler(
      db_, 4096,
      [](void* self) -> int {
        return std::chrono::steady_clock::now() >= static_cast<Db*>(self)->deadline_ ? 1 : 0;
      },
      this);
}

void Db::exec(std::string_view sql) {
  char* err = nullptr;
  const std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    throw Error(msg);
  }
}

Stmt Db::prepare(std::string_view sql) { return Stmt(db_, sql); }

int Db::user_version() {
  Stmt s(db_, "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.int64(0)) : 0;
}

bool Db::has_table(std::string_view name) {
  auto st = prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1");
  st.bind(1, name);
  return st.step();
}

void Db::set_user_version(int v) { exec("PRAGMA user_version = " + std::to_string(v)); }

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &st_, nullptr) !=
      SQLITE_OK) {
    throw Error(std::string(sqlite3_errmsg(db)) + " in: " + std::string(sql));
  }
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_blob(int i, std::string_view bytes) {
  sqlite3_bind_blob64(st_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}
bool Stmt::step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw Error(sqlite3_errmsg(db_));
}

void Stmt::run() {
  while (step()) {
  }
  reset();
}

void Stmt::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(st_, col);
  return p != nullptr ? std::string(reinterpret_cast<const char*>(p),
                                    static_cast<std::size_t>(sqlite3_column_bytes(st_, col)))
                      : std::string();
}

std::string Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(st_, col);
  return p != nullptr ? std::string(static_cast<const char*>(p),
                                    static_cast<std::size_t>(sqlite3_column_bytes(st_, col)))
                      : std::string();
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (const Error&) {
      // Nothing to roll back (the transaction already failed); keep going.
    }
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace ckptmon::sql
