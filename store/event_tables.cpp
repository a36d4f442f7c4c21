#include "store/event_tables.hpp"

#include <bit>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "store/event_codec.hpp"
#include "store/shard_pack.hpp"
#include "util/log.hpp"

namespace ckptmon::event_tables {
namespace {

// SQLite integers are signed 64-bit: inode numbers and hashes travel bit for bit.
std::int64_t to_db(std::uint64_t v) { return std::bit_cast<std::int64_t>(v); }
std::uint64_t from_db(std::int64_t v) { return std::bit_cast<std::uint64_t>(v); }

void add_total(sql::Stmt& st, std::string_view kind, std::string_view label, std::uint64_t v) {
  st.bind(1, kind).bind(2, label).bind(3, to_db(v));
  st.run();
}

}  // namespace

std::string key_list(const AggregateTable& t) {
  std::string out;
  for (const KeyColumn& k : t.keys) out += fmt::format("{}{}", out.empty() ? "" : ", ", k.name);
  return out;
}

std::string create_sql(const AggregateTable& t, std::string_view as, bool if_not_exists) {
  std::string columns;
  for (const KeyColumn& k : t.keys) {
    columns += fmt::format("{} {} NOT NULL, ", k.name, k.integer ? "INTEGER" : "TEXT");
  }
  return fmt::format("CREATE TABLE {}{}({}data BLOB NOT NULL, PRIMARY KEY({})) WITHOUT ROWID",
                     if_not_exists ? "IF NOT EXISTS " : "", as, columns, key_list(t));
}

Loaded load(sql::Db& db) {
  Loaded out;
  {
    auto st = db.prepare(
        "SELECT dev, ino, path, glob, fp_len, fp_hash, offset, line, skipping, check_len, "
        "check_hash, gone, last_seen FROM manifest_cursors");
    while (st.step()) {
      CursorRow c;
      c.dev = from_db(st.int64(0));
      c.ino = from_db(st.int64(1));
      c.path = st.text(2);
      c.glob = st.text(3);
      c.fp_len = static_cast<std::uint32_t>(st.int64(4));
      c.fp_hash = from_db(st.int64(5));
      c.parse.offset = from_db(st.int64(6));
      c.parse.line = from_db(st.int64(7));
      c.parse.skipping = st.int64(8) != 0;
      c.check_len = static_cast<std::uint32_t>(st.int64(9));
      c.check_hash = from_db(st.int64(10));
      c.gone = st.int64(11) != 0;
      c.last_seen = st.real(12);
      out.cursors.push_back(std::move(c));
    }
  }
  // A row that does not decode is counted and left where it is (the next
  // write of its key replaces it): unreadable is not deleted.
  auto unreadable = [&](std::size_t table, const std::string& key) {
    ++out.catalog.unreadable_rows[table];
    log::error("state database row does not decode as an event aggregate; skipped, kept",
               {{"db_table", std::string(kEventTables[table])}, {"key", key}});
  };
  {
    auto st = db.prepare("SELECT tier, job, step, data FROM event_steps");
    while (st.step()) {
      StepKey key{st.text(0), st.text(1), st.int64(2)};
      if (auto s = decode_event_step(st.blob(3))) {
        out.catalog.steps[std::move(key)] = std::move(*s);
      } else {
        unreadable(0, key.tier + "/" + key.job + "/" + std::to_string(key.step));
      }
    }
  }
  {
    auto st = db.prepare("SELECT tier, job, data FROM event_jobs");
    while (st.step()) {
      std::pair<std::string, std::string> key{st.text(0), st.text(1)};
      if (auto j = decode_event_job(st.blob(2))) {
        out.catalog.jobs[std::move(key)] = std::move(*j);
      } else {
        unreadable(1, key.first + "/" + key.second);
      }
    }
  }
  {
    auto st = db.prepare("SELECT job, data FROM event_restores");
    while (st.step()) {
      std::string job = st.text(0);
      if (auto r = decode_event_restores(st.blob(1))) {
        out.catalog.restores[std::move(job)] = std::move(*r);
      } else {
        unreadable(2, job);
      }
    }
  }
  {
    ManifestTotals& t = out.catalog.totals;
    auto st = db.prepare("SELECT kind, label, value FROM manifest_totals");
    while (st.step()) {
      const std::string kind = st.text(0);
      const std::string label = st.text(1);
      const std::uint64_t v = from_db(st.int64(2));
      if (kind == "lines") {
        for (std::size_t i = 0; i < t.lines.size(); ++i) {
          if (line_status_label(static_cast<LineStatus>(i)) == label) t.lines[i] = v;
        }
      } else if (kind == "errors") {
        for (RejectReason r : kAllRejectReasons) {
          if (reject_reason_label(r) == label) t.errors[static_cast<std::size_t>(r)] = v;
        }
      } else if (kind == "file_changes") {
        for (std::size_t i = 0; i < kFileChangeCount; ++i) {
          if (to_string(static_cast<FileChange>(i)) == label) t.file_changes[i] = v;
        }
      } else if (kind == "bytes") {
        t.bytes = v;
      } else if (kind == "stale_events") {
        t.stale_events = v;
      }
    }
  }
  return out;
}

void upsert_cursor(sql::Db& db, const CursorRow& c) {
  auto st = db.prepare(
      "INSERT INTO manifest_cursors(dev, ino, path, glob, fp_len, fp_hash, offset, line, "
      "skipping, check_len, check_hash, gone, last_seen) "
      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) ON CONFLICT(dev, ino) DO UPDATE SET "
      "path=excluded.path, glob=excluded.glob, fp_len=excluded.fp_len, "
      "fp_hash=excluded.fp_hash, offset=excluded.offset, line=excluded.line, "
      "skipping=excluded.skipping, check_len=excluded.check_len, "
      "check_hash=excluded.check_hash, gone=excluded.gone, last_seen=excluded.last_seen");
  st.bind(1, to_db(c.dev))
      .bind(2, to_db(c.ino))
      .bind(3, std::string_view(c.path))
      .bind(4, std::string_view(c.glob))
      .bind(5, static_cast<std::int64_t>(c.fp_len))
      .bind(6, to_db(c.fp_hash))
      .bind(7, to_db(c.parse.offset))
      .bind(8, to_db(c.parse.line))
      .bind(9, static_cast<std::int64_t>(c.parse.skipping ? 1 : 0))
      .bind(10, static_cast<std::int64_t>(c.check_len))
      .bind(11, to_db(c.check_hash))
      .bind(12, static_cast<std::int64_t>(c.gone ? 1 : 0))
      .bind(13, c.last_seen);
  st.run();
}

void delete_cursor(sql::Db& db, FileId id) {
  auto del = db.prepare("DELETE FROM manifest_cursors WHERE dev=?1 AND ino=?2");
  del.bind(1, static_cast<std::int64_t>(id.dev)).bind(2, static_cast<std::int64_t>(id.ino));
  del.run();
}

std::int64_t delete_cursors_before(sql::Db& db, double cutoff) {
  auto st = db.prepare("DELETE FROM manifest_cursors WHERE last_seen < ?1");
  st.bind(1, cutoff);
  st.run();
  return db.changes();
}

void save_batch(sql::Db& db, const EventCatalog& cat, const EventAggregator& agg) {
  if (!agg.touched_steps().empty()) {
    auto up = db.prepare(
        "INSERT INTO event_steps(tier, job, step, data) VALUES(?1,?2,?3,?4) "
        "ON CONFLICT(tier, job, step) DO UPDATE SET data=excluded.data");
    auto del = db.prepare("DELETE FROM event_steps WHERE tier=?1 AND job=?2 AND step=?3");
    for (const StepKey& k : agg.touched_steps()) {
      auto it = cat.steps.find(k);
      sql::Stmt& st = it == cat.steps.end() ? del : up;
      st.bind(1, std::string_view(k.tier)).bind(2, std::string_view(k.job)).bind(3, k.step);
      if (it != cat.steps.end()) st.bind_blob(4, encode_event_row(it->second));
      st.run();
    }
  }
  if (!agg.touched_jobs().empty()) {
    auto up = db.prepare(
        "INSERT INTO event_jobs(tier, job, data) VALUES(?1,?2,?3) "
        "ON CONFLICT(tier, job) DO UPDATE SET data=excluded.data");
    for (const auto& k : agg.touched_jobs()) {
      auto it = cat.jobs.find(k);
      if (it == cat.jobs.end()) continue;
      up.bind(1, std::string_view(k.first))
          .bind(2, std::string_view(k.second))
          .bind_blob(3, encode_event_row(it->second));
      up.run();
    }
  }
  if (!agg.touched_restores().empty()) {
    auto up = db.prepare(
        "INSERT INTO event_restores(job, data) VALUES(?1,?2) "
        "ON CONFLICT(job) DO UPDATE SET data=excluded.data");
    for (const auto& job : agg.touched_restores()) {
      auto it = cat.restores.find(job);
      if (it == cat.restores.end()) continue;
      up.bind(1, std::string_view(job)).bind_blob(2, encode_event_row(it->second));
      up.run();
    }
  }
  if (!agg.checks().empty()) {
    auto ins = db.prepare(
        "INSERT INTO integrity_queue(tier, job, step, next_index, count, shards) "
        "VALUES(?1,?2,?3,0,?4,?5)");
    for (const auto& [k, shards] : agg.checks()) {
      ShardPack pack;
      pack.add(shards);
      ins.bind(1, std::string_view(k.tier))
          .bind(2, std::string_view(k.job))
          .bind(3, k.step)
          .bind(4, static_cast<std::int64_t>(pack.count()))
          .bind_blob(5, pack.data());
      ins.run();
    }
  }
  const ManifestTotals& t = cat.totals;
  auto tot = db.prepare(
      "INSERT INTO manifest_totals(kind, label, value) VALUES(?1,?2,?3) "
      "ON CONFLICT(kind, label) DO UPDATE SET value=excluded.value");
  for (std::size_t i = 0; i < t.lines.size(); ++i) {
    add_total(tot, "lines", line_status_label(static_cast<LineStatus>(i)), t.lines[i]);
  }
  for (RejectReason r : kAllRejectReasons) {
    add_total(tot, "errors", reject_reason_label(r), t.errors[static_cast<std::size_t>(r)]);
  }
  for (std::size_t i = 0; i < kFileChangeCount; ++i) {
    add_total(tot, "file_changes", to_string(static_cast<FileChange>(i)), t.file_changes[i]);
  }
  add_total(tot, "bytes", "", t.bytes);
  add_total(tot, "stale_events", "", t.stale_events);
}

void save_folded(sql::Db& db, std::span<const StepKey> folded, const EventCatalog& cat) {
  auto del = db.prepare("DELETE FROM event_steps WHERE tier=?1 AND job=?2 AND step=?3");
  auto up = db.prepare(
      "INSERT INTO event_jobs(tier, job, data) VALUES(?1,?2,?3) "
      "ON CONFLICT(tier, job) DO UPDATE SET data=excluded.data");
  std::set<std::pair<std::string, std::string>> jobs;
  for (const StepKey& k : folded) {
    del.bind(1, std::string_view(k.tier)).bind(2, std::string_view(k.job)).bind(3, k.step);
    del.run();
    jobs.emplace(k.tier, k.job);
  }
  for (const auto& k : jobs) {
    up.bind(1, std::string_view(k.first))
        .bind(2, std::string_view(k.second))
        .bind_blob(3, encode_event_row(cat.jobs.at(k)));
    up.run();
  }
}

// --- integrity ---------------------------------------------------------------------

std::vector<QueuedShards> load_queue(sql::Db& db, std::size_t limit) {
  std::vector<QueuedShards> out;
  auto st = db.prepare(
      "SELECT id, tier, job, step, next_index, shards FROM integrity_queue ORDER BY id LIMIT ?1");
  st.bind(1, static_cast<std::int64_t>(limit));
  while (st.step()) {
    QueuedShards q;
    q.id = st.int64(0);
    q.tier = st.text(1);
    q.job = st.text(2);
    q.step = st.int64(3);
    q.next_index = static_cast<std::size_t>(st.int64(4));
    if (!ShardPack::unpack(st.blob(5), q.shards)) {
      log::error("integrity queue entry unreadable; dropped", {{"id", q.id}});
      q.shards.clear();
      q.next_index = 0;
    }
    for (auto& s : q.shards) {
      s.tier = q.tier;
      s.job = q.job;
      s.step = q.step;
    }
    out.push_back(std::move(q));
  }
  return out;
}

std::uint64_t queued_shards(sql::Db& db) {
  auto st = db.prepare("SELECT COALESCE(SUM(count - next_index), 0) FROM integrity_queue");
  return st.step() ? static_cast<std::uint64_t>(std::max<std::int64_t>(st.int64(0), 0)) : 0;
}

void drop_queued(sql::Db& db, std::int64_t id) {
  auto del = db.prepare("DELETE FROM integrity_queue WHERE id=?1");
  del.bind(1, id);
  del.run();
}

namespace {

void add_result(sql::Db& db, const std::string& tier, IntegrityResult r) {
  auto st = db.prepare(
      "INSERT INTO integrity_totals(tier, result, value) VALUES(?1,?2,1) "
      "ON CONFLICT(tier, result) DO UPDATE SET value=value+1");
  st.bind(1, std::string_view(tier)).bind(2, to_string(r));
  st.run();
}

const char* result_column(IntegrityResult r) {
  switch (r) {
    case IntegrityResult::kOk:
      return "ok";
    case IntegrityResult::kMismatch:
      return "mismatch";
    case IntegrityResult::kMissing:
      return "missing";
    case IntegrityResult::kError:
      return "error";
  }
  return "error";
}

}  // namespace

namespace {

// Refusals share integrity_totals with the results, as "refused:<reason>".
constexpr std::string_view kRefusedPrefix = "refused:";

void advance_queue(sql::Db& db, const QueuedShards& q, std::size_t index) {
  if (index + 1 >= q.shards.size()) {
    auto del = db.prepare("DELETE FROM integrity_queue WHERE id=?1");
    del.bind(1, q.id);
    del.run();
  } else {
    auto up = db.prepare("UPDATE integrity_queue SET next_index=?1 WHERE id=?2");
    up.bind(1, static_cast<std::int64_t>(index + 1)).bind(2, q.id);
    up.run();
  }
}

}  // namespace

void count_refused(sql::Db& db, const std::string& tier, PathRefusal why) {
  auto st = db.prepare(
      "INSERT INTO integrity_totals(tier, result, value) VALUES(?1,?2,1) "
      "ON CONFLICT(tier, result) DO UPDATE SET value=value+1");
  st.bind(1, std::string_view(tier))
      .bind(2, std::string(kRefusedPrefix) + std::string(to_string(why)));
  st.run();
}

void record_refused(sql::Db& db, const QueuedShards& q, std::size_t index, PathRefusal why) {
  advance_queue(db, q, index);
  count_refused(db, q.tier, why);
}

void record_shard(sql::Db& db, const QueuedShards& q, std::size_t index, IntegrityResult r) {
  advance_queue(db, q, index);
  const std::string col = result_column(r);
  auto st = db.prepare(
      "INSERT INTO integrity_steps(tier, job, step, ok, mismatch, missing, error) "
      "VALUES(?1,?2,?3,0,0,0,0) ON CONFLICT(tier, job, step) DO NOTHING");
  st.bind(1, std::string_view(q.tier)).bind(2, std::string_view(q.job)).bind(3, q.step);
  st.run();
  auto inc = db.prepare("UPDATE integrity_steps SET " + col + "=" + col +
                        "+1 WHERE tier=?1 AND job=?2 AND step=?3");
  inc.bind(1, std::string_view(q.tier)).bind(2, std::string_view(q.job)).bind(3, q.step);
  inc.run();
  add_result(db, q.tier, r);
}

std::vector<ManifestCandidate> manifest_candidates(sql::Db& db, const std::string& framework,
                                                   std::size_t limit) {
  std::vector<ManifestCandidate> out;
  auto st = db.prepare(
      "SELECT c.tier, c.path, c.job, c.step, COALESCE(i.next_index, 0), c.first_seen "
      "FROM checkpoints c "
      "LEFT JOIN integrity_checkpoints i ON i.tier=c.tier AND i.path=c.path "
      "WHERE c.framework=?1 AND c.state='committed' AND c.deleted_at IS NULL "
      "AND COALESCE(i.done, 0)=0 ORDER BY c.last_seen DESC LIMIT ?2");
  st.bind(1, std::string_view(framework)).bind(2, static_cast<std::int64_t>(limit));
  while (st.step()) {
    ManifestCandidate c;
    c.tier = st.text(0);
    c.path = st.text(1);
    c.job = st.text(2);
    c.step = st.int64(3);
    c.next_index = static_cast<std::size_t>(st.int64(4));
    c.first_seen = st.real(5);
    out.push_back(std::move(c));
  }
  return out;
}

void record_manifest(sql::Db& db, const ManifestCandidate& c, std::size_t next_index, bool done,
                     std::optional<IntegrityResult> r) {
  auto st = db.prepare(
      "INSERT INTO integrity_checkpoints(tier, path, job, step, next_index, done, ok, mismatch, "
      "missing, error) VALUES(?1,?2,?3,?4,?5,?6,0,0,0,0) ON CONFLICT(tier, path) DO UPDATE SET "
      "next_index=excluded.next_index, done=excluded.done");
  st.bind(1, std::string_view(c.tier))
      .bind(2, std::string_view(c.path))
      .bind(3, std::string_view(c.job))
      .bind(4, c.step)
      .bind(5, static_cast<std::int64_t>(next_index))
      .bind(6, static_cast<std::int64_t>(done ? 1 : 0));
  st.run();
  if (!r) return;
  const std::string col = result_column(*r);
  auto inc = db.prepare("UPDATE integrity_checkpoints SET " + col + "=" + col +
                        "+1 WHERE tier=?1 AND path=?2");
  inc.bind(1, std::string_view(c.tier)).bind(2, std::string_view(c.path));
  inc.run();
  add_result(db, c.tier, *r);
}

void prune_integrity(sql::Db& db) {
  db.exec(
      "DELETE FROM integrity_checkpoints WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
      "c.tier=integrity_checkpoints.tier AND c.path=integrity_checkpoints.path AND "
      "c.deleted_at IS NULL)");
  db.exec(
      "DELETE FROM integrity_steps WHERE (SELECT COUNT(*) FROM integrity_steps s WHERE "
      "s.tier=integrity_steps.tier AND s.job=integrity_steps.job AND "
      "s.step > integrity_steps.step) >= " +
      std::to_string(kEventStepsPerJob));
}

IntegrityStatus load_integrity(sql::Db& db) {
  IntegrityStatus out;
  auto result_of = [](const std::string& s) -> std::optional<IntegrityResult> {
    for (std::size_t i = 0; i < kIntegrityResultCount; ++i) {
      if (to_string(static_cast<IntegrityResult>(i)) == s) return static_cast<IntegrityResult>(i);
    }
    return std::nullopt;
  };
  {
    auto st = db.prepare("SELECT tier, result, value FROM integrity_totals");
    while (st.step()) {
      const std::string result = st.text(1);
      if (auto r = result_of(result)) {
        out.totals[st.text(0)][*r] = from_db(st.int64(2));
      } else if (result.starts_with(kRefusedPrefix)) {
        if (auto why = path_refusal_from(std::string_view(result).substr(kRefusedPrefix.size()))) {
          out.refused[st.text(0)][static_cast<std::size_t>(*why)] = from_db(st.int64(2));
        }
      }
    }
  }
  auto counts = [](sql::Stmt& st, int first) {
    IntegrityCounts c;
    for (std::size_t i = 0; i < kIntegrityResultCount; ++i) {
      c.by_result[i] = from_db(st.int64(first + static_cast<int>(i)));
    }
    return c;
  };
  {
    auto st =
        db.prepare("SELECT tier, job, step, ok, mismatch, missing, error FROM integrity_steps");
    while (st.step()) {
      out.steps[StepKey{st.text(0), st.text(1), st.int64(2)}] = counts(st, 3);
    }
  }
  {
    auto st =
        db.prepare("SELECT tier, path, ok, mismatch, missing, error FROM integrity_checkpoints");
    while (st.step()) out.checkpoints[{st.text(0), st.text(1)}] = counts(st, 2);
  }
  out.pending_shards = queued_shards(db);
  return out;
}

}  // namespace ckptmon::event_tables
