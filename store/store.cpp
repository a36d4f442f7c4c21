#include "store/store.hpp"

#include <array>
#include <ctime>
#include <filesystem>
#include <future>

#include "store/drill_ledger.hpp"
#include "store/event_tables.hpp"
#include "store/history.hpp"
#include "store/legacy_event_rows.hpp"
#include "util/log.hpp"

namespace ckptmon {
namespace {

constexpr int kSchemaVersion = 9;

void migrate(sql::Db& db) {
  const int v = db.user_version();
  if (v > kSchemaVersion) {
    throw sql::Error("state database schema " + std::to_string(v) +
                     " is newer than this ckptmon understands (" + std::to_string(kSchemaVersion) +
                     ")");
  }
  if (v < 1) {
    sql::Transaction tx(db);
    db.exec(R"(CREATE TABLE IF NOT EXISTS checkpoints(
  tier TEXT NOT NULL, path TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT NULL,
  framework TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL,
  files INTEGER NOT NULL, bytes INTEGER NOT NULL, allocated_bytes INTEGER NOT NULL,
  first_write REAL NOT NULL, last_write REAL NOT NULL, marker_time REAL NOT NULL,
  c_model INTEGER NOT NULL, c_optimizer INTEGER NOT NULL, c_rng INTEGER NOT NULL,
  c_scheduler INTEGER NOT NULL, c_metadata INTEGER NOT NULL, c_other INTEGER NOT NULL,
  expected_files INTEGER NOT NULL, save_start REAL NOT NULL, save_end REAL NOT NULL,
  dir_mtime REAL NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
  skew_observed INTEGER NOT NULL, deleted_at REAL,
  PRIMARY KEY(tier, path)) WITHOUT ROWID)");
    db.set_user_version(1);
    tx.commit();
  }
  // Checked by table as well as by version: a database that reached a later
  // version from a build without these tables must still get them.
  if (v < 2 || !db.has_table("manifest_cursors")) {
    // Event logs (collectors/manifest_tail.cpp, store/event_tables.cpp): the
    // read position of every log, committed in the same transaction as the
    // aggregates and totals derived from the lines up to it; and the
    // integrity verifier's queue and results (collectors/integrity.cpp).
    sql::Transaction tx(db);
    db.exec(R"(CREATE TABLE IF NOT EXISTS manifest_cursors(
  dev INTEGER NOT NULL, ino INTEGER NOT NULL, path TEXT NOT NULL, glob TEXT NOT NULL,
  fp_len INTEGER NOT NULL, fp_hash INTEGER NOT NULL,
  offset INTEGER NOT NULL, line INTEGER NOT NULL, skipping INTEGER NOT NULL,
  check_len INTEGER NOT NULL, check_hash INTEGER NOT NULL,
  gone INTEGER NOT NULL, last_seen REAL NOT NULL,
  PRIMARY KEY(dev, ino)) WITHOUT ROWID)");
    db.exec(R"(CREATE TABLE IF NOT EXISTS manifest_totals(
  kind TEXT NOT NULL, label TEXT NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY(kind, label)) WITHOUT ROWID)");
    for (const auto* t :
         {&event_tables::kStepsTable, &event_tables::kJobsTable, &event_tables::kRestoresTable}) {
      db.exec(event_tables::create_sql(*t, t->name, /*if_not_exists=*/true));
    }
    db.exec(R"(CREATE TABLE IF NOT EXISTS integrity_queue(
  id INTEGER PRIMARY KEY AUTOINCREMENT, tier TEXT NOT NULL, job TEXT NOT NULL,
  step INTEGER NOT NULL, next_index INTEGER NOT NULL, count INTEGER NOT NULL,
  shards BLOB NOT NULL))");
    db.exec(R"(CREATE TABLE IF NOT EXISTS integrity_steps(
  tier TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT NULL,
  ok INTEGER NOT NULL, mismatch INTEGER NOT NULL, missing INTEGER NOT NULL, error INTEGER NOT NULL,
  PRIMARY KEY(tier, job, step)) WITHOUT ROWID)");
    db.exec(R"(CREATE TABLE IF NOT EXISTS integrity_checkpoints(
  tier TEXT NOT NULL, path TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT NULL,
  next_index INTEGER NOT NULL, done INTEGER NOT NULL,
  ok INTEGER NOT NULL, mismatch INTEGER NOT NULL, missing INTEGER NOT NULL, error INTEGER NOT NULL,
  PRIMARY KEY(tier, path)) WITHOUT ROWID)");
    db.exec(R"(CREATE TABLE IF NOT EXISTS integrity_totals(
  tier TEXT NOT NULL, result TEXT NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY(tier, result)) WITHOUT ROWID)");
    if (v < 2) db.set_user_version(2);
    tx.commit();
  }
  // Version 3: tier samples and the alert history (store/history.hpp).
  if (v < 3) {
    sql::Transaction tx(db);
    create_history_schema(db);
    db.set_user_version(3);
    tx.commit();
  }
  // Version 4: two more checkpoint components (model/checkpoint.hpp).
  if (v < 4) {
    sql::Transaction tx(db);
    db.exec("ALTER TABLE checkpoints ADD COLUMN c_scaler INTEGER NOT NULL DEFAULT 0");
    db.exec("ALTER TABLE checkpoints ADD COLUMN c_dataloader INTEGER NOT NULL DEFAULT 0");
    db.set_user_version(4);
    tx.commit();
  }
  // Version 5: the hourly peaks of each drain's backlog and the GPU cost of
  // each checkpoint (store/history.hpp).
  if (v < 5) {
    sql::Transaction tx(db);
    create_schema5_tables(db);
    db.set_user_version(5);
    tx.commit();
  }
  // Version 6: the rules' per-tier figures (cleanup backlog and its oldest
  // age, partial bytes, required capacity) with each tier sample, so reports
  // over a past period read them as they were (store/history.hpp).
  if (v < 6) {
    sql::Transaction tx(db);
    add_schema6_columns(db);
    db.set_user_version(6);
    tx.commit();
  }
  // Version 7: event aggregates as binary rows (store/event_codec.hpp), not
  // JSON; every row re-encoded in this one transaction, so a crash leaves
  // the database at 6 with its JSON rows, or at 7 with none.
  if (v < 7) {
    sql::Transaction tx(db);
    legacy::reencode_event_rows(db);  // logs each row it keeps unread
    db.set_user_version(7);
    tx.commit();
  }
  // Version 8: what each checkpoint's own metadata gave (model/checkpoint.hpp
  // Checkpoint::metadata). Rows from before read "": components from names.
  if (v < 8) {
    sql::Transaction tx(db);
    if (!has_column(db, "checkpoints", "metadata")) {
      db.exec("ALTER TABLE checkpoints ADD COLUMN metadata TEXT NOT NULL DEFAULT ''");
    }
    db.set_user_version(8);
    tx.commit();
  }
  // Version 9: the scheduled restore drills (store/drill_ledger.hpp).
  if (v < 9 || !db.has_table("restore_drills")) {
    sql::Transaction tx(db);
    create_drill_table(db);
    if (v < 9) db.set_user_version(9);
    tx.commit();
  }
}

// Column order shared by the SELECT in load_catalog() and the upsert.
constexpr std::array<const char*, 29> kColumns{
    "tier",         "path",           "job",           "step",     "framework",
    "state",        "reason",         "files",         "bytes",    "allocated_bytes",
    "first_write",  "last_write",     "marker_time",   "c_model",  "c_optimizer",
    "c_rng",        "c_scheduler",    "c_metadata",    "c_other",  "c_scaler",
    "c_dataloader", "expected_files", "save_start",    "save_end", "dir_mtime",
    "first_seen",   "last_seen",      "skew_observed", "metadata"};

std::string column_list() {
  std::string out;
  for (const char* c : kColumns) out += (out.empty() ? "" : ", ") + std::string(c);
  return out;
}

// Insert or, for a known (tier, path), overwrite every other column; a path
// that comes back after being deleted is present again.
std::string upsert_sql() {
  std::string sql = "INSERT INTO checkpoints(" + column_list() + ", deleted_at) VALUES(";
  for (std::size_t i = 1; i <= kColumns.size(); ++i) sql += "?" + std::to_string(i) + ",";
  sql += "NULL) ON CONFLICT(tier, path) DO UPDATE SET deleted_at=NULL";
  for (std::size_t i = 2; i < kColumns.size(); ++i) {
    sql += ", " + std::string(kColumns[i]) + "=excluded." + kColumns[i];
  }
  return sql;
}

// "" when PRAGMA quick_check finds the database sound, else what it found
// first. Throws sql::Error when the file cannot be read as a database at all.
std::string quick_check(sql::Db& db) {
  auto st = db.prepare("PRAGMA quick_check");
  std::string first;
  std::size_t rows = 0;
  while (st.step()) {
    if (rows++ == 0) first = st.text(0);
  }
  if (rows == 1 && first == "ok") return "";
  return rows > 1 ? first + " (and " + std::to_string(rows - 1) + " more)" : first;
}

bool is_corruption(int code) { return code == SQLITE_CORRUPT || code == SQLITE_NOTADB; }

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

// Renames `path` and its -wal and -shm to path.corrupt-<stamp>[...]; returns
// the new name of the main file, or "" with `error` set.
std::string move_aside(const std::string& path, std::string* error) {
  namespace fs = std::filesystem;
  std::string base = path + ".corrupt-" + utc_stamp();
  std::error_code ec;
  for (int n = 1; fs::exists(base, ec) && n < 100; ++n) {
    base = path + ".corrupt-" + utc_stamp() + "." + std::to_string(n);
  }
  for (const char* suffix : {"-wal", "-shm", ""}) {
    const std::string from = path + suffix;
    if (!fs::exists(from, ec)) continue;
    fs::rename(from, base + suffix, ec);
    if (ec) {
      *error = "cannot move the corrupt state database " + from + " aside: " + ec.message();
      return "";
    }
  }
  return base;
}

}  // namespace

std::unique_ptr<Store> Store::open(const std::string& state_dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    *error = "cannot create state_dir " + state_dir + ": " + ec.message();
    return nullptr;
  }
  const std::string path = (std::filesystem::path(state_dir) / "ckptmon.db").string();
  std::string moved;
  std::string problem;
  try {
    if (std::filesystem::exists(path, ec)) {
      // Checked on a read-only connection: closing it neither checkpoints a
      // WAL into a broken file nor deletes the WAL, so what goes aside is
      // what was found.
      sql::Db check(path, true);
      try {
        problem = quick_check(check);
      } catch (const sql::Error& e) {
        if (!is_corruption(check.error_code())) throw;
        problem = e.what();
      }
    }
    if (!problem.empty()) {
      moved = move_aside(path, error);
      if (moved.empty()) return nullptr;
      log::error(
          "state database is corrupt; moved aside, starting a new one and rebuilding it "
          "from a rescan and the event logs from their start",
          {{"db", path}, {"moved_to", moved}, {"quick_check", problem}});
    }
    auto db = std::make_unique<sql::Db>(path);
    db->exec("PRAGMA journal_mode=WAL");
    db->exec("PRAGMA synchronous=NORMAL");
    migrate(*db);
    auto store = std::unique_ptr<Store>(new Store(path, std::move(db)));
    if (!moved.empty()) {
      store->rebuilt_ = 1;
      store->moved_aside_ = moved;
    }
    return store;
  } catch (const sql::Error& e) {
    *error = "state database " + path + ": " + e.what();
    return nullptr;
  }
}

std::string Store::last_error() const {
  std::lock_guard lock(error_mu_);
  return last_error_;
}

Store::Store(std::string path, std::unique_ptr<sql::Db> db)
    : path_(std::move(path)), db_(std::move(db)) {
  thread_ = std::thread([this] { run(); });
}

Store::~Store() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Store::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() && stopping_) break;
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      task.fn(*db_);
      if (task.access == Access::kWrite) count_write(nullptr);
    } catch (const std::exception& e) {
      if (task.access == Access::kWrite) {
        count_write(&e);
      } else {
        log::error("state database read failed", {{"db", path_}, {"err", e.what()}});
      }
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void Store::count_write(const std::exception* failure) {
  if (failure == nullptr) {
    consecutive_errors_ = 0;
    return;
  }
  ++errors_;
  ++consecutive_errors_;
  {
    std::lock_guard elock(error_mu_);
    last_error_ = failure->what();
  }
  log::error("state database write failed", {{"db", path_}, {"err", failure->what()}});
}

void Store::post(std::function<void(sql::Db&)> fn, Access access) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Task{std::move(fn), access});
  }
  cv_.notify_one();
}

void Store::flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

std::map<std::string, std::vector<Checkpoint>> Store::load_catalog() {
  return call<std::map<std::string, std::vector<Checkpoint>>>(
      [](sql::Db& db) { return read_catalog(db); });
}

namespace {

// One row of the SELECT of column_list().
Checkpoint checkpoint_from_row(sql::Stmt& st) {
  Checkpoint c;
  int i = 0;
  c.tier = st.text(i++);
  c.path = st.text(i++);
  c.job = st.text(i++);
  c.step = st.int64(i++);
  c.framework = st.text(i++);
  c.state = ckpt_state_from(st.text(i++)).value_or(CkptState::kPartial);
  c.reason = st.text(i++);
  c.files = static_cast<std::uint64_t>(st.int64(i++));
  c.bytes = static_cast<std::uint64_t>(st.int64(i++));
  c.allocated_bytes = static_cast<std::uint64_t>(st.int64(i++));
  c.first_write = st.real(i++);
  c.last_write = st.real(i++);
  c.marker_time = st.real(i++);
  for (auto& b : c.component_bytes) b = static_cast<std::uint64_t>(st.int64(i++));
  c.expected_files = static_cast<std::uint64_t>(st.int64(i++));
  c.save_start = st.real(i++);
  c.save_end = st.real(i++);
  c.dir_mtime = st.real(i++);
  c.first_seen = st.real(i++);
  c.last_seen = st.real(i++);
  c.skew_observed = st.int64(i++) != 0;
  c.metadata = st.text(i++);
  return c;
}

}  // namespace

std::map<std::string, std::vector<Checkpoint>> read_catalog(sql::Db& db) {
  std::map<std::string, std::vector<Checkpoint>> out;
  auto st = db.prepare("SELECT " + column_list() +
                       " FROM checkpoints WHERE deleted_at IS NULL ORDER BY tier, job, path");
  while (st.step()) {
    Checkpoint c = checkpoint_from_row(st);
    out[c.tier].push_back(std::move(c));
  }
  return out;
}

std::vector<Checkpoint> read_committed_history(sql::Db& db, double since, double until) {
  std::vector<Checkpoint> out;
  // Rows stay after a checkpoint is deleted (deleted_at set): they are the
  // history. Committed at the marker's time, else at the last shard's.
  auto st = db.prepare("SELECT " + column_list() +
                       " FROM checkpoints WHERE state='committed' AND "
                       "(CASE WHEN marker_time > 0 THEN marker_time ELSE last_write END) "
                       "BETWEEN ?1 AND ?2 ORDER BY tier, job, "
                       "(CASE WHEN marker_time > 0 THEN marker_time ELSE last_write END), path");
  st.bind(1, since).bind(2, until);
  while (st.step()) out.push_back(checkpoint_from_row(st));
  return out;
}

std::unique_ptr<sql::Db> open_state_readonly(const std::string& state_dir, std::string* error) {
  const std::string path = (std::filesystem::path(state_dir) / "ckptmon.db").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    *error = path + ": no ckptmon state database here (is --state-dir the daemon's state_dir?)";
    return nullptr;
  }
  try {
    // Without a -wal beside it the file holds every committed change (the
    // daemon stopped and checkpointed, or this is a copy): read it as it is,
    // creating nothing, so a directory the reader cannot write works and one
    // it can (root's, say) does not get a -wal and a -shm of the reader's
    // left in it. With a -wal, a daemon is (or was) writing: a WAL reader,
    // which uses the -shm there (read-only when it cannot write it). A
    // daemon that starts while this reads writes its WAL, not this file,
    // until a checkpoint (1000 pages): a report is short.
    const bool wal = std::filesystem::exists(path + "-wal", ec);
    auto db =
        std::make_unique<sql::Db>(path, wal ? sql::Db::Mode::kReadOnly : sql::Db::Mode::kImmutable);
    int v = 0;
    try {
      v = db->user_version();
    } catch (const sql::Error& e) {
      *error = path + ": not a ckptmon state database (" + e.what() + ")";
      return nullptr;
    }
    if (v > kSchemaVersion) {
      *error = path + ": state database schema " + std::to_string(v) +
               " is newer than this ckptmon understands (" + std::to_string(kSchemaVersion) +
               "); use the ckptmon that wrote it";
      return nullptr;
    }
    for (const char* t : {"checkpoints", "tier_samples", "tier_job_samples", "alert_transitions"}) {
      if (!db->has_table(t)) {
        *error = path + ": not a ckptmon state database at schema " +
                 std::to_string(kSchemaVersion) + " (no table " + t + ")";
        return nullptr;
      }
    }
    return db;
  } catch (const sql::Error& e) {
    *error = path + ": " + e.what();
    return nullptr;
  }
}

void Store::save_catalog(std::string tier, std::vector<Checkpoint> changed,
                         std::vector<std::string> removed, double now) {
  post([this, tier = std::move(tier), changed = std::move(changed), removed = std::move(removed),
        now](sql::Db& db) {
    sql::Transaction tx(db);
    auto up = db.prepare(upsert_sql());
    for (const auto& c : changed) {
      int i = 0;
      up.bind(++i, std::string_view(c.tier));
      up.bind(++i, std::string_view(c.path));
      up.bind(++i, std::string_view(c.job));
      up.bind(++i, static_cast<std::int64_t>(c.step));
      up.bind(++i, std::string_view(c.framework));
      up.bind(++i, to_string(c.state));
      up.bind(++i, std::string_view(c.reason));
      up.bind(++i, static_cast<std::int64_t>(c.files));
      up.bind(++i, static_cast<std::int64_t>(c.bytes));
      up.bind(++i, static_cast<std::int64_t>(c.allocated_bytes));
      up.bind(++i, c.first_write);
      up.bind(++i, c.last_write);
      up.bind(++i, c.marker_time);
      for (auto b : c.component_bytes) up.bind(++i, static_cast<std::int64_t>(b));
      up.bind(++i, static_cast<std::int64_t>(c.expected_files));
      up.bind(++i, c.save_start);
      up.bind(++i, c.save_end);
      up.bind(++i, c.dir_mtime);
      up.bind(++i, c.first_seen);
      up.bind(++i, c.last_seen);
      up.bind(++i, static_cast<std::int64_t>(c.skew_observed ? 1 : 0));
      up.bind(++i, std::string_view(c.metadata));
      up.run();
    }
    auto del = db.prepare(
        "UPDATE checkpoints SET deleted_at=?1 WHERE tier=?2 AND path=?3 AND deleted_at IS NULL");
    for (const auto& p : removed) {
      del.bind(1, now).bind(2, std::string_view(tier)).bind(3, std::string_view(p));
      del.run();
    }
    tx.commit();
    ++transactions_;
  });
}

std::map<std::string, double> Store::deleted(const std::string& tier) {
  return call<std::map<std::string, double>>([tier](sql::Db& db) {
    std::map<std::string, double> out;
    auto st = db.prepare(
        "SELECT path, deleted_at FROM checkpoints WHERE tier=?1 AND deleted_at IS NOT NULL");
    st.bind(1, std::string_view(tier));
    while (st.step()) out[st.text(0)] = st.real(1);
    return out;
  });
}

}  // namespace ckptmon
