#include "model/events.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace ckptmon {
namespace {

// Pending pause and restore halves kept per entry: a writer that never sends
// the other half must not grow them without bound.
constexpr std::size_t kMaxPending = 4096;

double earliest(double current, double ts) { return current == 0 ? ts : std::min(current, ts); }

template <typename Map>
void bound(Map& m) {
  while (m.size() > kMaxPending) m.erase(m.begin());
}

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

std::vector<double> duration_buckets() {
  return {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
}
std::vector<double> pause_buckets() {
  return {0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600};
}
std::vector<double> restore_buckets() {
  return {1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200};
}

std::optional<double> EventStep::duration() const {
  if (!committed || start_ts <= 0) return std::nullopt;
  return std::max(0.0, commit_ts - start_ts);
}

std::optional<double> EventStep::completion_skew() const {
  if (shards == 0) return std::nullopt;
  return std::max(0.0, last_shard_end - first_shard_end);
}

EventJob::EventJob() : duration(duration_buckets()), pause(pause_buckets()) {}
EventRestores::EventRestores() : duration(restore_buckets()) {}

std::string_view to_string(FileChange c) {
  switch (c) {
    case FileChange::kTruncated:
      return "truncated";
    case FileChange::kRotated:
      return "rotated";
    case FileChange::kDeleted:
      return "deleted";
    case FileChange::kReplaced:
      return "replaced";
  }
  return "unknown";
}

std::string_view to_string(IntegrityResult r) {
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

std::string_view to_string(PathRefusal r) {
  switch (r) {
    case PathRefusal::kOutsideTier:
      return "outside_tier";
    case PathRefusal::kDotDot:
      return "dotdot";
    case PathRefusal::kBadPath:
      return "bad_path";
    case PathRefusal::kSymlink:
      return "symlink";
    case PathRefusal::kEscape:
      return "escape";
    case PathRefusal::kUnconfiguredTier:
      return "unconfigured_tier";
  }
  return "bad_path";
}

std::optional<PathRefusal> path_refusal_from(std::string_view label) {
  for (std::size_t i = 0; i < kPathRefusalCount; ++i) {
    if (to_string(static_cast<PathRefusal>(i)) == label) return static_cast<PathRefusal>(i);
  }
  return std::nullopt;
}

const EventStep* EventCatalog::find(std::string_view tier, std::string_view job,
                                    std::int64_t step) const {
  auto it = steps.find(StepKeyLess::View{tier, job, step});
  return it == steps.end() ? nullptr : &it->second;
}

std::vector<std::pair<std::int64_t, std::uint64_t>> EventCatalog::slow_ranks(
    const std::string& tier, const std::string& job, std::size_t k) const {
  std::map<std::int64_t, std::uint64_t> counts;
  if (auto it = jobs.find({tier, job}); it != jobs.end()) counts = it->second.slow_ranks;
  auto lo =
      steps.lower_bound(StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::min()});
  for (auto it = lo; it != steps.end() && it->first.tier == tier && it->first.job == job; ++it) {
    if (it->second.last_rank >= 0) ++counts[it->second.last_rank];
  }
  std::vector<std::pair<std::int64_t, std::uint64_t>> out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

std::optional<bool> IntegrityStatus::verdict(const std::string& tier, const std::string& job,
                                             std::int64_t step, const std::string& path) const {
  const IntegrityCounts* by_step = nullptr;
  if (auto it = steps.find(StepKeyLess::View{tier, job, step}); it != steps.end()) {
    by_step = &it->second;
  }
  const IntegrityCounts* by_path = nullptr;
  if (auto it = checkpoints.find({tier, path}); it != checkpoints.end()) by_path = &it->second;
  if ((by_step != nullptr && by_step->failed()) || (by_path != nullptr && by_path->failed())) {
    return false;
  }
  if ((by_step != nullptr && (*by_step)[IntegrityResult::kOk] > 0) ||
      (by_path != nullptr && (*by_path)[IntegrityResult::kOk] > 0)) {
    return true;
  }
  return std::nullopt;
}

// --- aggregation -----------------------------------------------------------------

EventAggregator::EventAggregator(EventCatalog& cat, std::size_t steps_per_job)
    : cat_(cat), steps_per_job_(std::max<std::size_t>(steps_per_job, 1)) {}

void EventAggregator::clear() {
  touched_steps_.clear();
  touched_jobs_.clear();
  touched_restores_.clear();
  checks_.clear();
  last_pack_ = nullptr;
  last_step_ = nullptr;
  last_drain_ = nullptr;
  last_job_ = nullptr;
}

void EventAggregator::add(const LineResult& line, std::string_view tier) {
  ++cat_.totals.lines[static_cast<std::size_t>(line.status)];
  if (line.status == LineStatus::kRejected) {
    ++cat_.totals.errors[static_cast<std::size_t>(line.reason)];
    return;
  }
  if (line.status != LineStatus::kOk) return;
  const Event& e = line.event;
  apply(e, e.tier.empty() ? tier : std::string_view(e.tier));
}

EventJob& EventAggregator::job_for(std::string_view tier, std::string_view job) {
  if (last_job_ != nullptr && last_job_key_.second == job && last_job_key_.first == tier) {
    return *last_job_;
  }
  std::pair<std::string, std::string> key{std::string(tier), std::string(job)};
  auto it = cat_.jobs.try_emplace(key).first;
  touched_jobs_.insert(key);
  last_job_key_ = std::move(key);
  last_job_ = &it->second;
  return it->second;
}

EventRestores& EventAggregator::restores_for(std::string_view job) {
  auto it = cat_.restores.try_emplace(std::string(job)).first;
  touched_restores_.insert(it->first);
  return it->second;
}

EventStep* EventAggregator::step_for(std::string_view tier, std::string_view job, std::int64_t step,
                                     bool create) {
  if (last_step_ != nullptr && last_key_.step == step && last_key_.job == job &&
      last_key_.tier == tier) {
    return last_step_;
  }
  const StepKeyLess::View view{tier, job, step};
  auto it = cat_.steps.find(view);
  if (it == cat_.steps.end()) {
    if (!create) return nullptr;
    if (step <= job_for(tier, job).evicted_through) {
      ++cat_.totals.stale_events;
      return nullptr;
    }
    StepKey key{std::string(tier), std::string(job), step};
    cat_.steps.emplace(key, EventStep{});
    touched_steps_.insert(key);
    evict_beyond(tier, job);
    it = cat_.steps.find(view);
    if (it == cat_.steps.end()) {  // older than every kept step: folded in at once
      ++cat_.totals.stale_events;
      return nullptr;
    }
  } else {
    touched_steps_.insert(it->first);
  }
  last_key_ = it->first;
  last_step_ = &it->second;
  last_pack_ = nullptr;
  return last_step_;
}

void EventAggregator::evict_beyond(std::string_view tier, std::string_view job) {
  auto lo = cat_.steps.lower_bound(
      StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::min()});
  auto hi = cat_.steps.upper_bound(
      StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::max()});
  auto n = static_cast<std::size_t>(std::distance(lo, hi));
  if (n <= steps_per_job_) return;
  EventJob& j = job_for(tier, job);
  while (n > steps_per_job_) {
    if (lo->second.last_rank >= 0) ++j.slow_ranks[lo->second.last_rank];
    j.evicted_through = std::max(j.evicted_through, lo->first.step);
    touched_steps_.insert(lo->first);
    lo = cat_.steps.erase(lo);
    --n;
  }
  last_step_ = nullptr;  // may have pointed at an evicted entry
  last_drain_ = nullptr;
}

void EventAggregator::observe_duration(EventStep& s, EventJob& j) {
  auto d = s.duration();
  if (s.duration_observed || !d) return;
  j.duration.observe(*d);
  s.duration_observed = true;
}

void EventAggregator::pair_pause(EventStep& s, double start, double end, EventJob& j) {
  const double seconds = std::max(0.0, end - start);
  if (end >= start) {  // a pause that ends before it starts has no window
    s.pause_first_start = s.pause_first_start == 0 ? start : std::min(s.pause_first_start, start);
    s.pause_last_end = std::max(s.pause_last_end, end);
  }
  ++s.pauses;
  s.pause_max = std::max(s.pause_max, seconds);
  if (!s.pause_observed) {
    j.pause.observe(seconds);
    s.pause_observed = true;
  }
}

namespace {

std::string restore_key(const Event& e) {
  return std::to_string(e.step.value_or(-1)) + "/" + std::to_string(e.rank.value_or(-1));
}

}  // namespace

DrainProgress& EventAggregator::drain_for(EventStep& s, const Event& e) {
  if (e.from_tier.empty() && e.to_tier.empty() && s.drains.size() == 1) {
    return s.drains.begin()->second;
  }
  // Every shard_drained of a checkpoint names the same pair: skip building the key.
  if (last_drain_ != nullptr && last_drain_step_ == &s && last_drain_from_ == e.from_tier &&
      last_drain_to_ == e.to_tier) {
    return *last_drain_;
  }
  last_drain_ = &s.drains[e.from_tier + ">" + e.to_tier];
  last_drain_step_ = &s;
  last_drain_from_ = e.from_tier;
  last_drain_to_ = e.to_tier;
  return *last_drain_;
}

void EventAggregator::apply(const Event& e, std::string_view tier) {
  EventJob& j = job_for(tier, e.job);
  j.last_event_ts = std::max(j.last_event_ts, e.ts);
  switch (e.type) {
    case EventType::kRestoreStart: {
      EventRestores& r = restores_for(e.job);
      const std::string key = restore_key(e);
      if (auto it = r.pending_dones.find(key); it != r.pending_dones.end()) {
        const double d = std::max(0.0, it->second - e.ts);
        r.duration.observe(d);
        if (r.last && r.last->ts == it->second && r.last->step == e.step.value_or(-1)) {
          r.last->duration = d;
        }
        r.pending_dones.erase(it);
      } else {
        r.pending_starts[key] = e.ts;
        bound(r.pending_starts);
      }
      return;
    }
    case EventType::kRestoreDone: {
      EventRestores& r = restores_for(e.job);
      const std::string key = restore_key(e);
      RestoreRecord rec;
      rec.step = e.step.value_or(-1);
      rec.tier = std::string(tier);
      rec.ts = e.ts;
      rec.bytes = e.bytes.value_or(0);
      rec.ok = e.ok.value_or(false);
      ++r.restores;
      if (!rec.ok) ++r.failed;
      if (rec.ok) r.last_ok_ts = std::max(r.last_ok_ts, e.ts);
      if (auto it = r.pending_starts.find(key); it != r.pending_starts.end()) {
        const double d = std::max(0.0, e.ts - it->second);
        rec.duration = d;
        if (rec.ok) r.duration.observe(d);
        r.pending_starts.erase(it);
      } else if (rec.ok) {
        r.pending_dones[key] = e.ts;
        bound(r.pending_dones);
      }
      if (!r.last || e.ts >= r.last->ts) r.last = std::move(rec);
      return;
    }
    case EventType::kCleanup: {
      ++j.cleanups;
      j.cleanup_bytes += e.bytes.value_or(0);
      if (e.step) {
        if (EventStep* s = step_for(tier, e.job, *e.step, false)) {
          ++s->cleanups;
          s->cleanup_bytes += e.bytes.value_or(0);
          s->last_event_ts = std::max(s->last_event_ts, e.ts);
        }
      }
      return;
    }
    case EventType::kUnknown:
      return;
    default:
      break;
  }
  if (!e.step) return;  // the parser requires a step for every other type
  EventStep* sp = step_for(tier, e.job, *e.step, true);
  if (sp == nullptr) return;
  EventStep& s = *sp;
  s.last_event_ts = std::max(s.last_event_ts, e.ts);
  switch (e.type) {
    case EventType::kCheckpointStart:
      s.start_ts = earliest(s.start_ts, e.ts);
      observe_duration(s, j);
      break;
    case EventType::kShardWritten: {
      const std::int64_t rank = e.rank.value_or(-1);
      ++s.shards;
      s.shard_bytes += e.bytes.value_or(0);
      if (e.start_ts) s.first_shard_start = earliest(s.first_shard_start, *e.start_ts);
      s.first_shard_end = s.shards == 1 ? e.ts : std::min(s.first_shard_end, e.ts);
      if (s.shards == 1 || e.ts > s.last_shard_end ||
          (e.ts == s.last_shard_end && rank < s.last_rank)) {
        s.last_shard_end = e.ts;
        s.last_rank = rank;
      }
      if (!e.checksum.empty()) {
        ++s.checksummed_shards;
        if (last_pack_ == nullptr) last_pack_ = &checks_[last_key_];
        last_pack_->add(rank, e.bytes.value_or(0), e.checksum, e.path);
      }
      break;
    }
    case EventType::kCheckpointCommit:
      if (!s.committed || e.ts < s.commit_ts) {
        s.commit_ts = e.ts;
        s.commit_files = e.files.value_or(0);
        s.commit_bytes = e.bytes.value_or(0);
      }
      s.committed = true;
      observe_duration(s, j);
      break;
    case EventType::kCheckpointFailed:
      if (!s.failed) {
        s.failed = true;
        s.failed_ts = e.ts;
        s.failure_reason = e.reason;
        ++j.failures;
        j.recent_failures.push_back(EventFailure{*e.step, e.ts, e.reason});
        if (j.recent_failures.size() > kRecentFailures) {
          j.recent_failures.erase(j.recent_failures.begin());
        }
      }
      break;
    case EventType::kPauseStart: {
      const std::int64_t rank = e.rank.value_or(-1);
      if (auto it = s.pause_ends.find(rank); it != s.pause_ends.end()) {
        pair_pause(s, e.ts, it->second, j);
        s.pause_ends.erase(it);
      } else {
        auto [pit, inserted] = s.pause_starts.emplace(rank, e.ts);
        if (!inserted) pit->second = std::min(pit->second, e.ts);
        bound(s.pause_starts);
      }
      break;
    }
    case EventType::kPauseEnd: {
      const std::int64_t rank = e.rank.value_or(-1);
      if (auto it = s.pause_starts.find(rank); it != s.pause_starts.end()) {
        pair_pause(s, it->second, e.ts, j);
        s.pause_starts.erase(it);
      } else {
        auto [pit, inserted] = s.pause_ends.emplace(rank, e.ts);
        if (!inserted) pit->second = std::max(pit->second, e.ts);
        bound(s.pause_ends);
      }
      break;
    }
    case EventType::kDrainStart: {
      DrainProgress& d = drain_for(s, e);
      d.start_ts = earliest(d.start_ts, e.ts);
      break;
    }
    case EventType::kShardDrained: {
      DrainProgress& d = drain_for(s, e);
      d.bytes += e.bytes.value_or(0);
      ++d.shards;
      break;
    }
    case EventType::kDrainDone: {
      DrainProgress& d = drain_for(s, e);
      d.done_ts = std::max(d.done_ts, e.ts);
      if (e.ok) d.ok = *e.ok;
      break;
    }
    default:
      break;
  }
}

// --- shard packs -------------------------------------------------------------------

namespace {

// Writes `v` as LEB128 at `p`; returns the end.
char* put_varint(char* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

bool get_varint(std::string_view& in, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

void ShardPack::add(std::int64_t rank, std::uint64_t bytes, const Checksum& sum,
                    std::string_view path) {
  // This runs for every checksummed shard of a catch-up: one append per shard.
  const std::size_t limit = std::min(path.size(), last_path_.size());
  const auto common = static_cast<std::size_t>(
      std::mismatch(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(limit),
                    last_path_.begin())
          .first -
      path.begin());
  char head[3 * 10 + 1 + 32 + 2 * 10];
  char* p = head;
  // Zigzag, so rank -1 (none given) stays one byte.
  p = put_varint(p,
                 (static_cast<std::uint64_t>(rank) << 1) ^ static_cast<std::uint64_t>(rank >> 63));
  p = put_varint(p, bytes);
  *p++ = static_cast<char>(sum.algo);
  const std::size_t n = std::min<std::size_t>(sum.hex.size() / 2, 32);
  // The parser checked the digits and wrote them in lower case; a table
  // avoids a mispredicted branch per digit (digests are random).
  static constexpr auto kNibble = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 10; ++c)
      t[static_cast<std::size_t>('0' + c)] = static_cast<std::uint8_t>(c);
    for (int c = 0; c < 6; ++c) {
      t[static_cast<std::size_t>('a' + c)] = static_cast<std::uint8_t>(10 + c);
      t[static_cast<std::size_t>('A' + c)] = static_cast<std::uint8_t>(10 + c);
    }
    return t;
  }();
  const auto* h = reinterpret_cast<const unsigned char*>(sum.hex.data());
  for (std::size_t i = 0; i < n; ++i) {
    *p++ = static_cast<char>((kNibble[h[2 * i]] << 4) | kNibble[h[2 * i + 1]]);
  }
  p = put_varint(p, common);
  p = put_varint(p, path.size() - common);
  data_.append(head, static_cast<std::size_t>(p - head));
  data_.append(path.substr(common));
  last_path_.assign(path);
  ++count_;
}

bool ShardPack::unpack(std::string_view in, std::vector<ShardCheck>& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string last;
  while (!in.empty()) {
    ShardCheck s;
    std::uint64_t zz = 0;
    std::uint64_t common = 0;
    std::uint64_t suffix = 0;
    if (!get_varint(in, zz) || !get_varint(in, s.bytes) || in.empty()) return false;
    s.rank = static_cast<std::int64_t>(zz >> 1) ^ -static_cast<std::int64_t>(zz & 1);
    const auto algo = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    if (algo == 0 || algo > static_cast<unsigned char>(ChecksumAlgo::kXxh64)) return false;
    s.checksum.algo = static_cast<ChecksumAlgo>(algo);
    const std::size_t n = checksum_hex_length(s.checksum.algo) / 2;
    if (in.size() < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(in[i]);
      s.checksum.hex += kDigits[b >> 4];
      s.checksum.hex += kDigits[b & 15];
    }
    in.remove_prefix(n);
    if (!get_varint(in, common) || !get_varint(in, suffix) || common > last.size() ||
        suffix > in.size()) {
      return false;
    }
    s.path = last.substr(0, common);
    s.path.append(in.substr(0, suffix));
    in.remove_prefix(suffix);
    last = s.path;
    out.push_back(std::move(s));
  }
  return true;
}

// --- JSON --------------------------------------------------------------------------

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
