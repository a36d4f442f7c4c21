#include "store/event_codec.hpp"

#include <nlohmann/json.hpp>

namespace ckptmon {
namespace {

nlohmann::json hist_json(const HistogramData& h) {
  return {{"bounds", h.bounds}, {"buckets", h.buckets}, {"sum", h.sum}, {"count", h.count}};
}

HistogramData hist_from(const nlohmann::json& j, std::vector<double> fallback) {
  if (!j.is_object()) return HistogramData(std::move(fallback));
  HistogramData h(j.value("bounds", fallback));
  auto buckets = j.value("buckets", std::vector<std::uint64_t>{});
  if (buckets.size() == h.buckets.size()) h.buckets = std::move(buckets);
  h.sum = j.value("sum", 0.0);
  h.count = j.value("count", std::uint64_t{0});
  return h;
}

// JSON object keys are strings; rank maps are stored as [[rank, value], ...].
template <typename V>
nlohmann::json pairs_json(const std::map<std::int64_t, V>& m) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [k, v] : m) a.push_back({k, v});
  return a;
}

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

nlohmann::json to_json(const EventStep& s) {
  nlohmann::json j;
  j["start_ts"] = s.start_ts;
  j["commit_ts"] = s.commit_ts;
  j["committed"] = s.committed;
  j["commit_files"] = s.commit_files;
  j["commit_bytes"] = s.commit_bytes;
  j["shards"] = s.shards;
  j["shard_bytes"] = s.shard_bytes;
  j["checksummed_shards"] = s.checksummed_shards;
  j["first_shard_start"] = s.first_shard_start;
  j["first_shard_end"] = s.first_shard_end;
  j["last_shard_end"] = s.last_shard_end;
  j["last_rank"] = s.last_rank;
  j["pause_starts"] = pairs_json(s.pause_starts);
  j["pause_ends"] = pairs_json(s.pause_ends);
  j["pauses"] = s.pauses;
  j["pause_max"] = s.pause_max;
  j["pause_first_start"] = s.pause_first_start;
  j["pause_last_end"] = s.pause_last_end;
  j["failed"] = s.failed;
  j["failed_ts"] = s.failed_ts;
  j["failure_reason"] = s.failure_reason;
  nlohmann::json drains = nlohmann::json::object();
  for (const auto& [k, d] : s.drains) {
    nlohmann::json o{
        {"start_ts", d.start_ts}, {"done_ts", d.done_ts}, {"bytes", d.bytes}, {"shards", d.shards}};
    o["ok"] = d.ok ? nlohmann::json(*d.ok) : nlohmann::json();
    drains[k] = std::move(o);
  }
  j["drains"] = std::move(drains);
  j["cleanups"] = s.cleanups;
  j["cleanup_bytes"] = s.cleanup_bytes;
  j["last_event_ts"] = s.last_event_ts;
  j["duration_observed"] = s.duration_observed;
  j["pause_observed"] = s.pause_observed;
  return j;
}

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

nlohmann::json to_json(const EventJob& job) {
  nlohmann::json j;
  j["duration"] = hist_json(job.duration);
  j["pause"] = hist_json(job.pause);
  j["failures"] = job.failures;
  nlohmann::json f = nlohmann::json::array();
  for (const auto& x : job.recent_failures) {
    f.push_back({{"step", x.step}, {"ts", x.ts}, {"reason", x.reason}});
  }
  j["recent_failures"] = std::move(f);
  j["slow_ranks"] = pairs_json(job.slow_ranks);
  j["evicted_through"] = job.evicted_through;
  j["cleanups"] = job.cleanups;
  j["cleanup_bytes"] = job.cleanup_bytes;
  j["last_event_ts"] = job.last_event_ts;
  return j;
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

nlohmann::json to_json(const EventRestores& r) {
  nlohmann::json j;
  j["duration"] = hist_json(r.duration);
  j["restores"] = r.restores;
  j["failed"] = r.failed;
  j["last_ok_ts"] = r.last_ok_ts;
  if (r.last) {
    nlohmann::json l{{"step", r.last->step},
                     {"tier", r.last->tier},
                     {"ts", r.last->ts},
                     {"bytes", r.last->bytes},
                     {"ok", r.last->ok}};
    l["duration"] = r.last->duration ? nlohmann::json(*r.last->duration) : nlohmann::json();
    j["last"] = std::move(l);
  }
  j["pending_starts"] = r.pending_starts;
  j["pending_dones"] = r.pending_dones;
  return j;
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

}  // namespace ckptmon
