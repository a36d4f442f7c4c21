#include "collectors/integrity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/layouts/layout.hpp"
#include "collectors/tree_walk.hpp"
#include "store/event_tables.hpp"
#include "store/store.hpp"
#include "util/digest.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kReadBytes = 1024 * 1024;
constexpr const char* kManifestFramework = "megatron_torch_dist";
constexpr const char* kManifestName = "integrity.json";
constexpr double kManifestGraceSeconds = 600;

}  // namespace

// --- ByteRateLimiter ---------------------------------------------------------------

ByteRateLimiter::ByteRateLimiter(double bytes_per_second, std::shared_ptr<const Clock> clock,
                                 Sleep sleep)
    : rate_(std::max(bytes_per_second, 1.0)), clock_(std::move(clock)), sleep_(std::move(sleep)) {
  last_ = clock_->now();
}

void ByteRateLimiter::set_rate(double bytes_per_second) {
  refill();
  rate_ = std::max(bytes_per_second, 1.0);
}

void ByteRateLimiter::refill() {
  const double now = clock_->now();
  if (now > last_) tokens_ = std::min(rate_, tokens_ + (now - last_) * rate_);
  last_ = now;
}

void ByteRateLimiter::acquire(std::uint64_t bytes) {
  refill();
  tokens_ -= static_cast<double>(bytes);
  if (tokens_ < 0) {
    const double wait = -tokens_ / rate_;
    slept_ += wait;
    sleep_(wait);
    refill();
  }
}

// --- one file ----------------------------------------------------------------------

IntegrityResult verify_file(const std::string& path, const Checksum& want, ByteRateLimiter& limiter,
                            std::vector<char>& buf, std::uint64_t* bytes_read,
                            std::string* detail) {
  auto digest = Digest::make(want.algo);
  if (!digest) {
    *detail = "no checksum algorithm";
    return IntegrityResult::kError;
  }
  // O_NONBLOCK: a FIFO put where a shard was must not hang the verifier.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    *detail = std::strerror(err);
    return err == ENOENT || err == ENOTDIR ? IntegrityResult::kMissing : IntegrityResult::kError;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *detail = "not a regular file";
    return IntegrityResult::kError;
  }
  if (buf.size() < kReadBytes) buf.resize(kReadBytes);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      *detail = std::strerror(errno);
      ::close(fd);
      return IntegrityResult::kError;
    }
    if (n == 0) break;
    limiter.acquire(static_cast<std::uint64_t>(n));
    digest->update(buf.data(), static_cast<std::size_t>(n));
    *bytes_read += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  const std::string got = digest->hex();
  if (got == want.hex) return IntegrityResult::kOk;  // both lower case (parse_checksum)
  *detail = "expected " + want.to_string() + ", got " + got;
  return IntegrityResult::kMismatch;
}

// --- the verifier ------------------------------------------------------------------

IntegrityVerifier::IntegrityVerifier(std::shared_ptr<Store> store,
                                     std::shared_ptr<const Clock> clock,
                                     ByteRateLimiter::Sleep sleep)
    : store_(std::move(store)),
      clock_(clock),
      limiter_(50.0 * 1024 * 1024, clock, std::move(sleep)) {}

void IntegrityVerifier::configure(double bytes_per_second,
                                  std::map<std::string, std::string> tier_roots) {
  std::lock_guard lock(mu_);
  pending_rate_ = bytes_per_second;
  pending_roots_ = std::move(tier_roots);
}

std::string IntegrityVerifier::resolve(const std::string& tier, const std::string& path) const {
  if (!path.empty() && path.front() == '/') return path;
  auto it = tier_roots_.find(tier);
  if (it == tier_roots_.end()) return {};
  return it->second + "/" + path;
}

void IntegrityVerifier::publish() {
  ++status_.version;
  auto snap = std::make_shared<const IntegrityStatus>(status_);
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snap);
}

std::shared_ptr<const IntegrityStatus> IntegrityVerifier::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

IntegrityVerifier::Pass IntegrityVerifier::run(double budget_seconds) {
  const double started = clock_->now();
  Pass pass;
  {
    // Settings change on the loop thread, possibly while a run is going on.
    std::lock_guard lock(mu_);
    if (pending_rate_ > 0) limiter_.set_rate(pending_rate_);
    tier_roots_ = pending_roots_;
  }
  if (!loaded_) {
    status_ = store_->call<IntegrityStatus>([](sql::Db& db) {
      event_tables::prune_integrity(db);
      return event_tables::load_integrity(db);
    });
    loaded_ = true;
    publish();
  }
  auto out_of_time = [&] { return stopping_ || clock_->now() - started >= budget_seconds; };
  auto note = [&](const std::string& tier, IntegrityResult r, const std::string& path,
                  const std::string& detail) {
    ++status_.totals[tier][r];
    ++pass.files;
    if (r == IntegrityResult::kOk) return;
    if (auto dropped = log_limit_.allow(std::string(to_string(r)), clock_->now())) {
      log::warn("checkpoint file failed verification", {{"tier", tier},
                                                        {"file", path},
                                                        {"result", to_string(r)},
                                                        {"detail", detail},
                                                        {"suppressed", *dropped}});
    }
  };

  // Shards announced with checksums, oldest first.
  while (!out_of_time()) {
    auto queue = store_->call<std::vector<event_tables::QueuedShards>>(
        [](sql::Db& db) { return event_tables::load_queue(db, 16); });
    if (queue.empty()) break;
    for (const auto& q : queue) {
      if (q.next_index >= q.shards.size()) {  // unreadable or finished entry: drop it
        store_->call<bool>([&](sql::Db& db) {
          auto del = db.prepare("DELETE FROM integrity_queue WHERE id=?1");
          del.bind(1, q.id);
          del.run();
          return true;
        });
        continue;
      }
      for (std::size_t i = q.next_index; i < q.shards.size(); ++i) {
        if (out_of_time()) {
          pass.finished = false;
          break;
        }
        const auto& s = q.shards[i];
        const std::string path = resolve(q.tier, s.path);
        std::string detail;
        IntegrityResult r = IntegrityResult::kError;
        if (path.empty()) {
          detail = "relative path on an unconfigured tier";
        } else {
          r = verify_file(path, s.checksum, limiter_, buf_, &pass.bytes, &detail);
        }
        store_->call<bool>([&](sql::Db& db) {
          sql::Transaction tx(db);
          event_tables::record_shard(db, q, i, r);
          tx.commit();
          return true;
        });
        ++status_.steps[StepKey{q.tier, q.job, q.step}][r];
        if (status_.pending_shards > 0) --status_.pending_shards;
        note(q.tier, r, path.empty() ? s.path : path, detail);
      }
      if (!pass.finished) break;
    }
    if (!pass.finished) break;
  }

  // Megatron torch_dist checkpoints with an integrity.json (sha256 per file).
  // One batch per run: a checkpoint seen too recently to judge is left for later.
  std::vector<event_tables::ManifestCandidate> candidates;
  if (pass.finished && !out_of_time()) {
    candidates = store_->call<std::vector<event_tables::ManifestCandidate>>(
        [](sql::Db& db) { return event_tables::manifest_candidates(db, kManifestFramework, 256); });
  }
  for (const auto& c : candidates) {
    if (!pass.finished || out_of_time()) {
      pass.finished = false;
      break;
    }
    const std::string dir = resolve(c.tier, c.path);
    std::vector<std::pair<std::string, Checksum>> files;
    bool manifest_present = false;
    std::string text;
    if (!dir.empty() &&
        read_small_file(AT_FDCWD, dir + "/" + kManifestName, kMaxManifestBytes, text)) {
      auto j = nlohmann::json::parse(text, nullptr, false);
      // Unreadable, not JSON or without a files object: not there (yet), like
      // a manifest still being written.
      if (j.is_object() && j.contains("files") && j["files"].is_object()) {
        manifest_present = true;
        const std::string algo = j.contains("algorithm") && j["algorithm"].is_string()
                                     ? j["algorithm"].get<std::string>()
                                     : std::string("sha256");
        for (auto it = j["files"].begin(); it != j["files"].end(); ++it) {
          if (!it.value().is_string()) continue;
          std::string digest = it.value().get<std::string>();
          if (digest.find(':') == std::string::npos) digest = algo + ":" + digest;
          if (auto sum = parse_checksum(digest)) files.emplace_back(it.key(), *sum);
        }
      }
    }
    // Megatron writes integrity.json after metadata.json: give a checkpoint
    // that has none yet a while before deciding it never will.
    if (!manifest_present && clock_->now() - c.first_seen < kManifestGraceSeconds) continue;
    if (c.next_index >= files.size()) {
      store_->call<bool>([&](sql::Db& db) {
        event_tables::record_manifest(db, c, c.next_index, true, std::nullopt);
        return true;
      });
      continue;
    }
    for (std::size_t i = c.next_index; i < files.size(); ++i) {
      if (out_of_time()) {
        pass.finished = false;
        break;
      }
      const std::string path = dir + "/" + files[i].first;
      std::string detail;
      const IntegrityResult r =
          verify_file(path, files[i].second, limiter_, buf_, &pass.bytes, &detail);
      const bool done = i + 1 == files.size();
      store_->call<bool>([&](sql::Db& db) {
        sql::Transaction tx(db);
        event_tables::record_manifest(db, c, i + 1, done, r);
        tx.commit();
        return true;
      });
      ++status_.checkpoints[{c.tier, c.path}][r];
      note(c.tier, r, path, detail);
    }
  }
  status_.pending_shards =
      store_->call<std::uint64_t>([](sql::Db& db) { return event_tables::queued_shards(db); });
  publish();
  return pass;
}

// --- the collector -----------------------------------------------------------------

IntegrityCollector::IntegrityCollector(std::shared_ptr<const Clock> clock,
                                       std::shared_ptr<Store> store) {
  if (store) {
    verifier_ =
        std::make_shared<IntegrityVerifier>(std::move(store), std::move(clock), [](double seconds) {
          std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        });
  }
}

IntegrityCollector::~IntegrityCollector() {
  if (verifier_) verifier_->stop();
}

void IntegrityCollector::configure(const Config& cfg) {
  enabled_ = cfg.integrity.enabled && verifier_ != nullptr;
  interval_ = cfg.integrity.interval;
  if (!verifier_) return;
  std::map<std::string, std::string> roots;
  for (const auto& t : cfg.tiers) roots[t.name] = t.path;
  verifier_->configure(static_cast<double>(cfg.integrity.bytes_per_second), std::move(roots));
}

std::vector<std::string> IntegrityCollector::targets() const {
  if (!enabled_) return {};
  return {"verifier"};
}

Job IntegrityCollector::prepare(const std::string& /*target*/) {
  auto verifier = verifier_;
  // A run lasts about one interval, so the next one finds it done; the first
  // only loads what earlier runs found.
  const double budget = first_ ? 0.0 : to_seconds(interval_);
  first_ = false;
  return [verifier, budget]() -> Update {
    verifier->run(budget);
    auto snap = verifier->snapshot();
    return [snap](State& state) {
      if (snap && (!state.integrity || snap->version > state.integrity->version)) {
        state.integrity = snap;
      }
    };
  };
}

}  // namespace ckptmon
