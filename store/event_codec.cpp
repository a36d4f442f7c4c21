#include "store/event_codec.hpp"

#include <array>
#include <utility>

#include "store/bytes.hpp"

namespace ckptmon {
namespace {

using bytes::Reader;
using bytes::Writer;

void put(Writer& w, const HistogramData& h) {
  w.u64(h.bounds.size());
  for (double b : h.bounds) w.f64(b);
  // bounds + 1 buckets: their count is implied.
  for (std::size_t i = 0; i <= h.bounds.size(); ++i) w.u64(i < h.buckets.size() ? h.buckets[i] : 0);
  w.f64(h.sum);
  w.u64(h.count);
}

HistogramData get_histogram(Reader& r) {
  const std::size_t n = r.count(8);
  std::vector<double> bounds;
  bounds.reserve(n);
  for (std::size_t i = 0; i < n && r.ok(); ++i) bounds.push_back(r.f64());
  HistogramData h(std::move(bounds));
  for (auto& b : h.buckets) b = r.u64();
  h.sum = r.f64();
  h.count = r.u64();
  return h;
}

template <typename K, typename V, typename PutK, typename PutV>
void put_map(Writer& w, const std::map<K, V>& m, PutK put_key, PutV put_value) {
  w.u64(m.size());
  for (const auto& [k, v] : m) {
    put_key(k);
    put_value(v);
  }
}

// Keys must come in ascending order, each once (as put_map writes them).
template <typename K, typename V, typename GetK, typename GetV>
std::map<K, V> get_map(Reader& r, std::size_t min_bytes, GetK get_key, GetV get_value) {
  std::map<K, V> m;
  const std::size_t n = r.count(min_bytes);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    K k = get_key();
    V v = get_value();
    if (!m.empty() && !(m.rbegin()->first < k)) return {};  // the caller's done() fails below
    m.emplace_hint(m.end(), std::move(k), std::move(v));
  }
  return m;
}

// What each row's second byte says it holds, so a row in the wrong table is
// refused too.
enum class Kind : std::uint8_t { kStep = 1, kJob = 2, kRestores = 3 };

void head(Writer& w, Kind k) {
  w.byte(kEventRowFormat);
  w.byte(static_cast<std::uint8_t>(k));
}

// Reads the format and kind bytes; false on others.
bool head_ok(Reader& r, Kind k) {
  const std::uint8_t format = r.byte();
  const std::uint8_t kind = r.byte();
  return r.ok() && format == kEventRowFormat && kind == static_cast<std::uint8_t>(k);
}

// The marks of a restore's phases, in the order a row keeps them.
template <typename P>
auto phase_marks(P& p) {
  return std::array{&p.start, &p.located, &p.read, &p.resharded, &p.done, &p.resumed};
}

// A row decodes when it was read to its end and is canonical.
template <typename T>
std::optional<T> finish(const Reader& r, T value, std::string_view row) {
  if (!r.done() || encode_event_row(value) != row) return std::nullopt;
  return value;
}

}  // namespace

std::string encode_event_row(const EventStep& s) {
  Writer w;
  head(w, Kind::kStep);
  w.f64(s.start_ts);
  w.f64(s.commit_ts);
  w.flag(s.committed);
  w.u64(s.commit_files);
  w.u64(s.commit_bytes);
  w.u64(s.shards);
  w.u64(s.shard_bytes);
  w.u64(s.checksummed_shards);
  w.f64(s.first_shard_start);
  w.f64(s.first_shard_end);
  w.f64(s.last_shard_end);
  w.i64(s.last_rank);
  for (const auto* m : {&s.pause_starts, &s.pause_ends}) {
    put_map(
        w, *m, [&](std::int64_t k) { w.i64(k); }, [&](double v) { w.f64(v); });
  }
  w.u64(s.pauses);
  w.f64(s.pause_max);
  w.f64(s.pause_first_start);
  w.f64(s.pause_last_end);
  w.flag(s.failed);
  w.f64(s.failed_ts);
  w.str(s.failure_reason);
  put_map(
      w, s.drains, [&](const std::string& k) { w.str(k); },
      [&](const DrainProgress& d) {
        w.f64(d.start_ts);
        w.f64(d.done_ts);
        w.u64(d.bytes);
        w.u64(d.shards);
        w.byte(d.ok ? (*d.ok ? 2 : 1) : 0);
      });
  w.u64(s.cleanups);
  w.u64(s.cleanup_bytes);
  w.f64(s.last_event_ts);
  w.flag(s.duration_observed);
  w.flag(s.pause_observed);
  return w.take();
}

std::optional<EventStep> decode_event_step(std::string_view row) {
  Reader r(row);
  if (!head_ok(r, Kind::kStep)) return std::nullopt;
  EventStep s;
  s.start_ts = r.f64();
  s.commit_ts = r.f64();
  s.committed = r.flag();
  s.commit_files = r.u64();
  s.commit_bytes = r.u64();
  s.shards = r.u64();
  s.shard_bytes = r.u64();
  s.checksummed_shards = r.u64();
  s.first_shard_start = r.f64();
  s.first_shard_end = r.f64();
  s.last_shard_end = r.f64();
  s.last_rank = r.i64();
  for (auto* m : {&s.pause_starts, &s.pause_ends}) {
    *m = get_map<std::int64_t, double>(
        r, 9, [&] { return r.i64(); }, [&] { return r.f64(); });
  }
  s.pauses = r.u64();
  s.pause_max = r.f64();
  s.pause_first_start = r.f64();
  s.pause_last_end = r.f64();
  s.failed = r.flag();
  s.failed_ts = r.f64();
  s.failure_reason = r.str();
  s.drains = get_map<std::string, DrainProgress>(
      r, 20, [&] { return r.str(); },
      [&] {
        DrainProgress d;
        d.start_ts = r.f64();
        d.done_ts = r.f64();
        d.bytes = r.u64();
        d.shards = r.u64();
        const std::uint8_t ok = r.byte();
        if (ok == 1 || ok == 2) d.ok = ok == 2;
        return d;
      });
  s.cleanups = r.u64();
  s.cleanup_bytes = r.u64();
  s.last_event_ts = r.f64();
  s.duration_observed = r.flag();
  s.pause_observed = r.flag();
  return finish(r, std::move(s), row);
}

std::string encode_event_row(const EventJob& job) {
  Writer w;
  head(w, Kind::kJob);
  put(w, job.duration);
  put(w, job.pause);
  w.u64(job.failures);
  w.u64(job.recent_failures.size());
  for (const auto& f : job.recent_failures) {
    w.i64(f.step);
    w.f64(f.ts);
    w.str(f.reason);
  }
  put_map(
      w, job.slow_ranks, [&](std::int64_t k) { w.i64(k); }, [&](std::uint64_t v) { w.u64(v); });
  w.i64(job.evicted_through);
  w.u64(job.cleanups);
  w.u64(job.cleanup_bytes);
  w.f64(job.last_event_ts);
  return w.take();
}

std::optional<EventJob> decode_event_job(std::string_view row) {
  Reader r(row);
  if (!head_ok(r, Kind::kJob)) return std::nullopt;
  EventJob job;
  job.duration = get_histogram(r);
  job.pause = get_histogram(r);
  job.failures = r.u64();
  const std::size_t n = r.count(10);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    EventFailure f;
    f.step = r.i64();
    f.ts = r.f64();
    f.reason = r.str();
    job.recent_failures.push_back(std::move(f));
  }
  job.slow_ranks = get_map<std::int64_t, std::uint64_t>(
      r, 2, [&] { return r.i64(); }, [&] { return r.u64(); });
  job.evicted_through = r.i64();
  job.cleanups = r.u64();
  job.cleanup_bytes = r.u64();
  job.last_event_ts = r.f64();
  return finish(r, std::move(job), row);
}

std::string encode_event_row(const EventRestores& rs) {
  Writer w;
  head(w, Kind::kRestores);
  put(w, rs.duration);
  w.u64(rs.restores);
  w.u64(rs.failed);
  w.f64(rs.last_ok_ts);
  w.flag(rs.last.has_value());
  if (rs.last) {
    w.i64(rs.last->step);
    w.str(rs.last->tier);
    w.f64(rs.last->ts);
    w.u64(rs.last->bytes);
    w.flag(rs.last->ok);
    w.flag(rs.last->duration.has_value());
    if (rs.last->duration) w.f64(*rs.last->duration);
  }
  for (const auto* m : {&rs.pending_starts, &rs.pending_dones}) {
    put_map(
        w, *m, [&](const std::string& k) { w.str(k); }, [&](double v) { w.f64(v); });
  }
  // The phases are a trailer, written only when there are some: a row from
  // before they existed is the same row without it, and still canonical.
  if (rs.phases) {
    const RestorePhases& p = *rs.phases;
    w.i64(p.step);
    for (const auto* m : phase_marks(p)) {
      w.flag(m->has_value());
      if (*m) w.f64(**m);
    }
    w.u64(p.ranks_read);
  }
  return w.take();
}

std::optional<EventRestores> decode_event_restores(std::string_view row) {
  Reader r(row);
  if (!head_ok(r, Kind::kRestores)) return std::nullopt;
  EventRestores rs;
  rs.duration = get_histogram(r);
  rs.restores = r.u64();
  rs.failed = r.u64();
  rs.last_ok_ts = r.f64();
  if (r.flag()) {
    RestoreRecord rec;
    rec.step = r.i64();
    rec.tier = r.str();
    rec.ts = r.f64();
    rec.bytes = r.u64();
    rec.ok = r.flag();
    if (r.flag()) rec.duration = r.f64();
    rs.last = std::move(rec);
  }
  for (auto* m : {&rs.pending_starts, &rs.pending_dones}) {
    *m = get_map<std::string, double>(
        r, 9, [&] { return r.str(); }, [&] { return r.f64(); });
  }
  if (r.ok() && !r.done()) {
    RestorePhases p;
    p.step = r.i64();
    for (auto* m : phase_marks(p)) {
      if (r.flag()) *m = r.f64();
    }
    p.ranks_read = r.u64();
    rs.phases = p;
  }
  return finish(r, std::move(rs), row);
}

}  // namespace ckptmon
