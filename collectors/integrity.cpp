#include "collectors/integrity.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/layouts/layout.hpp"
#include "collectors/tree_walk.hpp"
#include "util/digest.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kReadBytes = std::size_t{1024} * 1024;
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

// --- paths under a tier ----------------------------------------------------------

namespace {

// The components of `p`, without empty ones and `.`; false on a `..`.
bool components(std::string_view p, std::vector<std::string_view>& out) {
  out.clear();
  while (!p.empty()) {
    const auto slash = p.find('/');
    const std::string_view c = p.substr(0, slash);
    p = slash == std::string_view::npos ? std::string_view() : p.substr(slash + 1);
    if (c.empty() || c == ".") continue;
    if (c == "..") return false;
    out.push_back(c);
  }
  return true;
}

// openat2(2) is in the kernel since 5.6; glibc 2.36 has no wrapper. ENOSYS
// (older kernel) and EPERM (a seccomp filter) mean it is not there: walk.
std::atomic<bool> g_openat2_missing{false};

int try_openat2(int dirfd, const char* rel, int flags, int* err) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  // EAGAIN: a rename raced the lookup; a few tries, then it is an error.
  for (int tries = 0;; ++tries) {
    const long fd = ::syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EINTR || (errno == EAGAIN && tries < 8)) continue;
    *err = errno;
    return -1;
  }
#else
  (void)dirfd;
  (void)rel;
  (void)flags;
  *err = ENOSYS;
  return -1;
#endif
}

bool is_symlink_at(int dirfd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

int walk_beneath(int root_fd, const std::string& rel, int flags,
                 std::optional<PathRefusal>* refused, int* err) {
  std::vector<std::string_view> parts;
  if (!components(rel, parts)) {
    *refused = PathRefusal::kDotDot;
    return -1;
  }
  if (parts.empty()) {
    *refused = PathRefusal::kBadPath;
    return -1;
  }
  int dir = root_fd;
  auto close_dir = [&] {
    if (dir != root_fd) ::close(dir);
  };
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name(parts[i]);
    const bool last = i + 1 == parts.size();
    const int f = last ? flags : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = -1;
    do {
      fd = ::openat(dir, name.c_str(), f);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      const int e = errno;
      if ((e == ELOOP || e == ENOTDIR) && is_symlink_at(dir, name)) {
        *refused = PathRefusal::kSymlink;
      } else {
        *err = e;
      }
      close_dir();
      return -1;
    }
    close_dir();
    dir = fd;
  }
  return dir;
}

}  // namespace

TierPath tier_relative_path(std::string_view root, std::string_view path) {
  TierPath out;
  if (path.empty() || path.find('\0') != std::string_view::npos) {
    out.refused = PathRefusal::kBadPath;
    return out;
  }
  std::vector<std::string_view> parts;
  if (!components(path, parts)) {
    out.refused = PathRefusal::kDotDot;
    return out;
  }
  std::size_t skip = 0;
  if (path.front() == '/') {
    std::vector<std::string_view> root_parts;
    // A root with `..` in it cannot be compared lexically: nothing is under it.
    if (root.empty() || root.front() != '/' || !components(root, root_parts) ||
        root_parts.size() > parts.size() ||
        !std::equal(root_parts.begin(), root_parts.end(), parts.begin())) {
      out.refused = PathRefusal::kOutsideTier;
      return out;
    }
    skip = root_parts.size();
  }
  for (std::size_t i = skip; i < parts.size(); ++i) {
    if (!out.rel.empty()) out.rel += '/';
    out.rel.append(parts[i]);
  }
  if (out.rel.empty()) out.refused = PathRefusal::kBadPath;  // the tier root itself
  return out;
}

int open_beneath(int root_fd, const std::string& rel, int flags,
                 std::optional<PathRefusal>* refused, int* err, BeneathMode mode) {
  *refused = std::nullopt;
  *err = 0;
  flags |= O_NOFOLLOW | O_CLOEXEC;
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string::npos) {
    *refused = PathRefusal::kBadPath;
    return -1;
  }
  if (mode == BeneathMode::kAuto && !g_openat2_missing.load(std::memory_order_relaxed)) {
    int e = 0;
    const int fd = try_openat2(root_fd, rel.c_str(), flags, &e);
    if (fd >= 0) return fd;
    switch (e) {
      case ELOOP:  // a symlink on the way, or the file itself (RESOLVE_NO_SYMLINKS, O_NOFOLLOW)
        *refused = PathRefusal::kSymlink;
        return -1;
      case EXDEV:  // `..` or an absolute jump out of root_fd
        *refused = PathRefusal::kEscape;
        return -1;
      case ENOSYS:
      case EPERM:
      case E2BIG:
        g_openat2_missing.store(true, std::memory_order_relaxed);
        break;  // walk below
      default:
        *err = e;
        return -1;
    }
  }
  return walk_beneath(root_fd, rel, flags, refused, err);
}

// --- one file ----------------------------------------------------------------------

IntegrityResult verify_fd(int fd, const Checksum& want, ByteRateLimiter& limiter,
                          std::vector<char>& buf, std::uint64_t* bytes_read, std::string* detail,
                          IntegrityProgress* progress, const Clock* clock, const ReadFn& read) {
  auto digest = Digest::make(want.algo);
  if (!digest) {
    *detail = "no checksum algorithm";
    return IntegrityResult::kError;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *detail = "not a regular file";
    return IntegrityResult::kError;
  }
  if (buf.size() < kReadBytes) buf.resize(kReadBytes);
  while (true) {
    const ssize_t n = read ? read(fd, buf.data(), buf.size()) : ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      *detail = errno_text(errno);
      return IntegrityResult::kError;
    }
    if (n == 0) break;
    // Waiting for the read budget is not a stuck read.
    if (progress != nullptr) progress->reading = false;
    limiter.acquire(static_cast<std::uint64_t>(n));
    if (progress != nullptr) {
      progress->last_progress = clock->now();
      progress->reading = true;
    }
    digest->update(buf.data(), static_cast<std::size_t>(n));
    *bytes_read += static_cast<std::uint64_t>(n);
  }
  const std::string got = digest->hex();
  if (got == want.hex) return IntegrityResult::kOk;  // both lower case (parse_checksum)
  *detail = "expected " + want.to_string() + ", got " + got;
  return IntegrityResult::kMismatch;
}

IntegrityResult verify_file(const std::string& path, const Checksum& want, ByteRateLimiter& limiter,
                            std::vector<char>& buf, std::uint64_t* bytes_read,
                            std::string* detail) {
  // O_NONBLOCK: a FIFO put where a shard was must not hang the verifier.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    *detail = errno_text(err);
    return err == ENOENT || err == ENOTDIR ? IntegrityResult::kMissing : IntegrityResult::kError;
  }
  const IntegrityResult r = verify_fd(fd, want, limiter, buf, bytes_read, detail, nullptr, nullptr);
  ::close(fd);
  return r;
}

// --- the verifier ------------------------------------------------------------------

IntegrityVerifier::IntegrityVerifier(std::shared_ptr<VerificationLedger> ledger,
                                     std::shared_ptr<const Clock> clock,
                                     ByteRateLimiter::Sleep sleep)
    : ledger_(std::move(ledger)),
      clock_(std::move(clock)),  // declared before limiter_, which shares it
      limiter_(50.0 * 1024 * 1024, clock_, std::move(sleep)) {}

void IntegrityVerifier::configure(double bytes_per_second,
                                  std::map<std::string, std::string> tier_roots,
                                  double read_deadline_seconds) {
  std::lock_guard lock(mu_);
  pending_rate_ = bytes_per_second;
  pending_roots_ = std::move(tier_roots);
  pending_deadline_ = read_deadline_seconds;
  progress_->read_deadline = read_deadline_seconds;
}

std::string IntegrityVerifier::reading_path() const {
  std::lock_guard lock(mu_);
  return reading_path_;
}

int IntegrityVerifier::tier_fd(const std::string& tier, std::string* detail) {
  if (auto it = tier_fds_.find(tier); it != tier_fds_.end()) return it->second;
  auto root = tier_roots_.find(tier);
  if (root == tier_roots_.end()) return -1;
  const int fd = ::open(root->second.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *detail = "tier root " + root->second + ": " + errno_text(errno);
    return -1;  // not remembered: the next file tries again
  }
  tier_fds_[tier] = fd;
  return fd;
}

void IntegrityVerifier::close_tier_fds() {
  for (const auto& [tier, fd] : tier_fds_) ::close(fd);
  tier_fds_.clear();
}

std::optional<IntegrityResult> IntegrityVerifier::check(const std::string& tier,
                                                        const std::string& path,
                                                        const Checksum& want, std::uint64_t* bytes,
                                                        std::string* detail, PathRefusal* refused) {
  auto root = tier_roots_.find(tier);
  if (root == tier_roots_.end()) {
    *refused = PathRefusal::kUnconfiguredTier;
    return std::nullopt;
  }
  const TierPath tp = tier_relative_path(root->second, path);
  if (tp.refused) {
    *refused = *tp.refused;
    return std::nullopt;
  }
  {
    std::lock_guard lock(mu_);
    reading_path_ = root->second + "/" + tp.rel;
  }
  progress_->last_progress = clock_->now();
  progress_->reading = true;
  struct Done {
    IntegrityVerifier* v;
    ~Done() {
      v->progress_->reading = false;
      std::lock_guard lock(v->mu_);
      v->reading_path_.clear();
    }
  } done{this};
  const int root_fd = tier_fd(tier, detail);
  if (root_fd < 0) return IntegrityResult::kError;  // unknown, not missing: the tier may be down
  std::optional<PathRefusal> why;
  int err = 0;
  // O_NONBLOCK: a FIFO put where a shard was must not hang the verifier.
  const int fd = open_beneath(root_fd, tp.rel, O_RDONLY | O_NONBLOCK, &why, &err, mode_);
  if (fd < 0) {
    if (why) {
      *refused = *why;
      return std::nullopt;
    }
    *detail = errno_text(err);
    return err == ENOENT || err == ENOTDIR ? IntegrityResult::kMissing : IntegrityResult::kError;
  }
  const IntegrityResult r =
      verify_fd(fd, want, limiter_, buf_, bytes, detail, progress_.get(), clock_.get(), read_);
  ::close(fd);
  return r;
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
    status_ = ledger_->load();
    loaded_ = true;
    progress_->pending = status_.pending_shards;
    publish();
  }
  struct CloseFds {
    IntegrityVerifier* v;
    ~CloseFds() { v->close_tier_fds(); }
  } close_fds{this};
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
  // A refused path is never opened: it is counted, not checked.
  auto refuse = [&](const std::string& tier, const std::string& path, PathRefusal why,
                    const std::string& from) {
    ++status_.refused[tier][static_cast<std::size_t>(why)];
    if (auto dropped = log_limit_.allow("refused " + std::string(to_string(why)), clock_->now())) {
      log::warn("checkpoint file path refused; not opened", {{"tier", tier},
                                                             {"path", path},
                                                             {"reason", to_string(why)},
                                                             {"named_by", from},
                                                             {"suppressed", *dropped}});
    }
  };
  auto queued = [&] { return ledger_->queued_shards(); };

  // Shards announced with checksums, oldest first.
  while (!out_of_time()) {
    auto queue = ledger_->queue(16);
    if (queue.empty()) break;
    progress_->pending = queued();
    for (const auto& q : queue) {
      if (q.next_index >= q.shards.size()) {  // unreadable or finished entry: drop it
        ledger_->drop(q);
        continue;
      }
      for (std::size_t i = q.next_index; i < q.shards.size(); ++i) {
        if (out_of_time()) {
          pass.finished = false;
          break;
        }
        const auto& s = q.shards[i];
        std::string detail;
        PathRefusal why = PathRefusal::kBadPath;
        const auto r = check(q.tier, s.path, s.checksum, &pass.bytes, &detail, &why);
        if (r) {
          ledger_->record_shard(q, i, *r);
        } else {
          ledger_->record_refused(q, i, why);
        }
        if (status_.pending_shards > 0) --status_.pending_shards;
        if (progress_->pending > 0) --progress_->pending;
        if (r) {
          ++status_.steps[StepKey{q.tier, q.job, q.step}][*r];
          note(q.tier, *r, s.path, detail);
        } else {
          refuse(q.tier, s.path, why,
                 "shard_written event of job " + q.job + " step " + std::to_string(q.step));
        }
      }
      if (!pass.finished) break;
    }
    if (!pass.finished) break;
  }

  // Megatron torch_dist checkpoints with an integrity.json (sha256 per file).
  // One batch per run: a checkpoint seen too recently to judge is left for later.
  std::vector<ManifestCandidate> candidates;
  if (pass.finished && !out_of_time()) {
    candidates = ledger_->manifest_candidates(kManifestFramework, 256);
  }
  for (const auto& c : candidates) {
    if (!pass.finished || out_of_time()) {
      pass.finished = false;
      break;
    }
    std::vector<std::pair<std::string, Checksum>> files;
    bool manifest_present = false;
    std::string text;
    // The checkpoint directory comes from the tree walk, but it is opened
    // under the tier root like any other path.
    std::string detail;
    const TierPath dir = tier_roots_.contains(c.tier)
                             ? tier_relative_path(tier_roots_.at(c.tier), c.path)
                             : TierPath{{}, PathRefusal::kUnconfiguredTier};
    int dir_fd = -1;
    if (!dir.refused) {
      const int root_fd = tier_fd(c.tier, &detail);
      std::optional<PathRefusal> why;
      int err = 0;
      if (root_fd >= 0)
        dir_fd = open_beneath(root_fd, dir.rel, O_PATH | O_DIRECTORY, &why, &err, mode_);
    }
    if (dir_fd >= 0) {
      if (read_small_file(dir_fd, kManifestName, kMaxManifestBytes, text)) {
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
            if (digest.find(':') == std::string::npos) {
              digest.insert(0, ":");
              digest.insert(0, algo);
            }
            if (auto sum = parse_checksum(digest)) files.emplace_back(it.key(), *sum);
          }
        }
      }
      ::close(dir_fd);
    }
    // Megatron writes integrity.json after metadata.json: give a checkpoint
    // that has none yet a while before deciding it never will.
    if (!manifest_present && clock_->now() - c.first_seen < kManifestGraceSeconds) continue;
    if (c.next_index >= files.size()) {
      ledger_->record_manifest(c, c.next_index, true, std::nullopt, std::nullopt);
      continue;
    }
    for (std::size_t i = c.next_index; i < files.size(); ++i) {
      if (out_of_time()) {
        pass.finished = false;
        break;
      }
      // The listed names are relative to the checkpoint directory; one with
      // `..` or a leading '/' is refused before it is joined.
      const std::string& name = files[i].first;
      const std::string path = dir.rel + "/" + name;
      detail.clear();
      PathRefusal why = PathRefusal::kBadPath;
      std::optional<IntegrityResult> r;
      if (name.empty() || name.front() == '/') {
        why = name.empty() ? PathRefusal::kBadPath : PathRefusal::kOutsideTier;
      } else {
        r = check(c.tier, path, files[i].second, &pass.bytes, &detail, &why);
      }
      const bool done = i + 1 == files.size();
      ledger_->record_manifest(c, i + 1, done, r, r ? std::nullopt : std::optional(why));
      if (r) {
        ++status_.checkpoints[{c.tier, c.path}][*r];
        note(c.tier, *r, path, detail);
      } else {
        refuse(c.tier, name, why, c.path + "/" + kManifestName);
      }
    }
  }
  status_.pending_shards = queued();
  progress_->pending = status_.pending_shards;
  publish();
  return pass;
}

// --- the collector -----------------------------------------------------------------

IntegrityCollector::IntegrityCollector(std::shared_ptr<const Clock> clock,
                                       std::shared_ptr<VerificationLedger> ledger)
    : clock_(clock) {
  if (ledger) {
    verifier_ = std::make_shared<IntegrityVerifier>(
        std::move(ledger), std::move(clock), [](double seconds) {
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
  read_deadline_ = cfg.integrity.read_deadline;
  if (!verifier_) return;
  std::map<std::string, std::string> roots;
  for (const auto& t : cfg.tiers) roots[t.name] = t.path;
  verifier_->configure(static_cast<double>(cfg.integrity.bytes_per_second), std::move(roots),
                       to_seconds(read_deadline_));
}

std::vector<std::string> IntegrityCollector::targets() const {
  if (!enabled_) return {};
  return {"verifier"};
}

Job IntegrityCollector::prepare(const std::string& /*target*/, const State& /*state*/) {
  auto verifier = verifier_;
  // A run lasts about one interval, so the next one finds it done; the first
  // only loads what earlier runs found.
  const double budget = first_ ? 0.0 : to_seconds(interval_);
  first_ = false;
  return [verifier, budget]() -> Update {
    verifier->run(budget);
    auto snap = verifier->snapshot();
    auto progress = verifier->progress();
    return [snap, progress](State& state) {
      state.integrity_progress = progress;
      if (snap && (!state.integrity || snap->version > state.integrity->version)) {
        state.integrity = snap;
      }
    };
  };
}

void IntegrityCollector::on_deadline(const std::string& /*target*/, State& state) {
  if (!verifier_) return;
  auto progress = verifier_->progress();
  state.integrity_progress = progress;  // scrapes see the stuck read from now on
  const double now = clock_->now();
  if (progress->stuck(now) == 0) return;  // busy, not stuck: a large file at the read budget
  log::warn("integrity verifier read is stuck; no bytes for longer than the read deadline",
            {{"file", verifier_->reading_path()},
             {"seconds", now - progress->last_progress.load()},
             {"read_deadline", progress->read_deadline.load()}});
}

}  // namespace ckptmon
