#include "store/legacy_event_rows.hpp"

#include <array>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/event_codec.hpp"
#include "store/event_tables.hpp"
#include "store/sqlite.hpp"
#include "util/log.hpp"

namespace ckptmon::legacy {
namespace {

HistogramData hist_from(const nlohmann::json& j, std::vector<double> fallback) {
  if (!j.is_object()) return HistogramData(std::move(fallback));
  HistogramData h(j.value("bounds", fallback));
  auto buckets = j.value("buckets", std::vector<std::uint64_t>{});
  if (buckets.size() == h.buckets.size()) h.buckets = std::move(buckets);
  h.sum = j.value("sum", 0.0);
  h.count = j.value("count", std::uint64_t{0});
  return h;
}

// JSON object keys are strings; rank maps were stored as [[rank, value], ...].
template <typename V>
std::map<std::int64_t, V> pairs_from(const nlohmann::json& j) {
  std::map<std::int64_t, V> m;
  if (!j.is_array()) return m;
  for (const auto& p : j) {
    if (p.is_array() && p.size() == 2) m[p[0].get<std::int64_t>()] = p[1].get<V>();
  }
  return m;
}

}  // namespace

EventStep event_step_from_json(const nlohmann::json& j) {
  EventStep s;
  s.start_ts = j.value("start_ts", 0.0);
  s.commit_ts = j.value("commit_ts", 0.0);
  s.committed = j.value("committed", false);
  s.commit_files = j.value("commit_files", std::uint64_t{0});
  s.commit_bytes = j.value("commit_bytes", std::uint64_t{0});
  s.shards = j.value("shards", std::uint64_t{0});
  s.shard_bytes = j.value("shard_bytes", std::uint64_t{0});
  s.checksummed_shards = j.value("checksummed_shards", std::uint64_t{0});
  s.first_shard_start = j.value("first_shard_start", 0.0);
  s.first_shard_end = j.value("first_shard_end", 0.0);
  s.last_shard_end = j.value("last_shard_end", 0.0);
  s.last_rank = j.value("last_rank", std::int64_t{-1});
  if (auto it = j.find("pause_starts"); it != j.end()) s.pause_starts = pairs_from<double>(*it);
  if (auto it = j.find("pause_ends"); it != j.end()) s.pause_ends = pairs_from<double>(*it);
  s.pauses = j.value("pauses", std::uint64_t{0});
  s.pause_max = j.value("pause_max", 0.0);
  s.pause_first_start = j.value("pause_first_start", 0.0);
  s.pause_last_end = j.value("pause_last_end", 0.0);
  s.failed = j.value("failed", false);
  s.failed_ts = j.value("failed_ts", 0.0);
  s.failure_reason = j.value("failure_reason", std::string());
  if (auto it = j.find("drains"); it != j.end() && it->is_object()) {
    for (auto d = it->begin(); d != it->end(); ++d) {
      DrainProgress p;
      p.start_ts = d->value("start_ts", 0.0);
      p.done_ts = d->value("done_ts", 0.0);
      p.bytes = d->value("bytes", std::uint64_t{0});
      p.shards = d->value("shards", std::uint64_t{0});
      if (auto ok = d->find("ok"); ok != d->end() && ok->is_boolean()) p.ok = ok->get<bool>();
      s.drains[d.key()] = p;
    }
  }
  s.cleanups = j.value("cleanups", std::uint64_t{0});
  s.cleanup_bytes = j.value("cleanup_bytes", std::uint64_t{0});
  s.last_event_ts = j.value("last_event_ts", 0.0);
  s.duration_observed = j.value("duration_observed", false);
  s.pause_observed = j.value("pause_observed", false);
  return s;
}

EventJob event_job_from_json(const nlohmann::json& j) {
  EventJob job;
  job.duration = hist_from(j.value("duration", nlohmann::json()), duration_buckets());
  job.pause = hist_from(j.value("pause", nlohmann::json()), pause_buckets());
  job.failures = j.value("failures", std::uint64_t{0});
  if (auto it = j.find("recent_failures"); it != j.end() && it->is_array()) {
    for (const auto& x : *it) {
      job.recent_failures.push_back(EventFailure{
          x.value("step", std::int64_t{0}), x.value("ts", 0.0), x.value("reason", std::string())});
    }
  }
  if (auto it = j.find("slow_ranks"); it != j.end()) {
    job.slow_ranks = pairs_from<std::uint64_t>(*it);
  }
  job.evicted_through = j.value("evicted_through", std::int64_t{-1});
  job.cleanups = j.value("cleanups", std::uint64_t{0});
  job.cleanup_bytes = j.value("cleanup_bytes", std::uint64_t{0});
  job.last_event_ts = j.value("last_event_ts", 0.0);
  return job;
}

EventRestores event_restores_from_json(const nlohmann::json& j) {
  EventRestores r;
  r.duration = hist_from(j.value("duration", nlohmann::json()), restore_buckets());
  r.restores = j.value("restores", std::uint64_t{0});
  r.failed = j.value("failed", std::uint64_t{0});
  r.last_ok_ts = j.value("last_ok_ts", 0.0);
  if (auto it = j.find("last"); it != j.end() && it->is_object()) {
    RestoreRecord rec;
    rec.step = it->value("step", std::int64_t{0});
    rec.tier = it->value("tier", std::string());
    rec.ts = it->value("ts", 0.0);
    rec.bytes = it->value("bytes", std::uint64_t{0});
    rec.ok = it->value("ok", false);
    if (auto d = it->find("duration"); d != it->end() && d->is_number())
      rec.duration = d->get<double>();
    r.last = std::move(rec);
  }
  r.pending_starts = j.value("pending_starts", std::map<std::string, double>{});
  r.pending_dones = j.value("pending_dones", std::map<std::string, double>{});
  return r;
}

namespace {

template <typename T, T (*FromJson)(const nlohmann::json&)>
std::string reencode(const nlohmann::json& j) {
  return encode_event_row(FromJson(j));
}

struct Rebuild {
  const event_tables::AggregateTable* table;
  std::string (*reencode)(const nlohmann::json&);
};

constexpr std::array<Rebuild, 3> kRebuilds{{
    {&event_tables::kStepsTable, &reencode<EventStep, &event_step_from_json>},
    {&event_tables::kJobsTable, &reencode<EventJob, &event_job_from_json>},
    {&event_tables::kRestoresTable, &reencode<EventRestores, &event_restores_from_json>},
}};

}  // namespace

std::uint64_t reencode_event_rows(sql::Db& db) {
  std::uint64_t kept = 0;
  for (const Rebuild& r : kRebuilds) {
    const event_tables::AggregateTable& t = *r.table;
    const std::string name = t.name;
    const std::string next = name + "_v7";
    const std::size_t n = t.keys.size();
    const std::string keys = event_tables::key_list(t);
    db.exec(fmt::format("DROP TABLE IF EXISTS {}", next));
    db.exec(event_tables::create_sql(t, next, /*if_not_exists=*/false));
    std::string marks;
    for (std::size_t i = 1; i <= n + 1; ++i) marks += fmt::format("{}?{}", i > 1 ? "," : "", i);
    auto ins = db.prepare(fmt::format("INSERT INTO {}({}, data) VALUES({})", next, keys, marks));
    auto sel = db.prepare(fmt::format("SELECT {}, data FROM {}", keys, name));
    while (sel.step()) {
      std::string key;
      for (std::size_t i = 0; i < n; ++i) {
        const int col = static_cast<int>(i);
        if (t.keys[i].integer) {
          ins.bind(col + 1, sel.int64(col));
          key += (i ? "/" : "") + std::to_string(sel.int64(col));
        } else {
          const std::string v = sel.text(col);
          ins.bind(col + 1, std::string_view(v));
          key += (i ? "/" : "") + v;
        }
      }
      const std::string data = sel.blob(static_cast<int>(n));
      std::string row;
      std::string why = "not a JSON object";
      const auto j = nlohmann::json::parse(data, nullptr, false);
      if (!j.is_discarded() && j.is_object()) {
        try {
          row = r.reencode(j);
        } catch (const nlohmann::json::exception& e) {
          why = e.what();
        }
      }
      if (row.empty()) {
        ++kept;
        log::error("state database row is not the JSON of an event aggregate; kept as it was",
                   {{"db_table", name}, {"key", key}, {"err", why}});
        row = data;
      }
      ins.bind_blob(static_cast<int>(n) + 1, row);
      ins.run();
    }
    db.exec(fmt::format("DROP TABLE {}", name));
    db.exec(fmt::format("ALTER TABLE {} RENAME TO {}", next, name));
  }
  return kept;
}

}  // namespace ckptmon::legacy
