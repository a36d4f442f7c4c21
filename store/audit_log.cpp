#include "store/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/label.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {

AuditLog::AuditLog(std::shared_ptr<const Clock> clock, std::size_t max_queued_bytes)
    : clock_(std::move(clock)), max_queued_bytes_(max_queued_bytes), writer_([this] { run(); }) {}

AuditLog::~AuditLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
  close_file();
}

void AuditLog::configure(const AuditConfig& c) {
  {
    std::lock_guard lock(mu_);
    cfg_ = c;
  }
  wake_.notify_all();
}

bool AuditLog::enabled() const {
  std::lock_guard lock(mu_);
  return cfg_.enabled();
}

bool AuditLog::http_access() const {
  std::lock_guard lock(mu_);
  return cfg_.enabled() && cfg_.http_access;
}

void AuditLog::record(std::string_view event, nlohmann::json fields) {
  // ts and event first, for people reading the file; then the fields.
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  line["ts"] = format_rfc3339(clock_->now());
  line["event"] = std::string(event);
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it)
      line[it.key()] = *it;  // json to ordered_json: a copy
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text += '\n';
  {
    std::lock_guard lock(mu_);
    if (!cfg_.enabled()) return;
    if (queued_bytes_ + text.size() > max_queued_bytes_) {
      ++stats_.dropped_queue_full;
      return;
    }
    queued_bytes_ += text.size();
    queue_.push_back(std::move(text));
    ++queued_seq_;
  }
  wake_.notify_all();
}

void AuditLog::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = queued_seq_;
  progress_.wait(lock, [&] { return done_seq_ >= target; });
}

AuditLog::Stats AuditLog::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void AuditLog::failed(const std::string& what, int err) {
  // Counted every time, logged once per spell: a full disk must not turn the
  // daemon's own log into a second flood.
  {
    std::lock_guard lock(mu_);
    ++stats_.write_errors;
  }
  if (!failing_) {
    failing_ = true;
    log::error("audit log: " + what + " failed; records are dropped and counted until it works",
               {{"file", open_path_}, {"err", errno_text(err)}});
  }
}

void AuditLog::close_file() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool AuditLog::ensure_open(const std::string& path) {
  if (fd_ >= 0 && path == open_path_) {
    // Moved away or deleted by someone else (logrotate without
    // copytruncate): start a new file where the configuration says.
    struct stat at_path {};
    struct stat open {};
    if (::stat(path.c_str(), &at_path) == 0 && ::fstat(fd_, &open) == 0 &&
        at_path.st_dev == open.st_dev && at_path.st_ino == open.st_ino) {
      return true;
    }
    close_file();
  }
  close_file();
  open_path_ = path;
  partial_ = false;
  // O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of hanging the
  // writer; O_NOFOLLOW: a symlink planted at the path is not followed.
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                  0600);
  if (fd < 0) {
    failed("open", errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    failed("fstat", err);
    return false;
  }
  // A regular file, or a character device such as /dev/stderr in a
  // container; never a FIFO, socket or directory.
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    ::close(fd);
    failed("open (not a regular file)", EINVAL);
    return false;
  }
  // Writes block from here on, on this thread only; a slow disk delays the
  // audit records, never the loop or a scrape.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  fd_ = fd;
  regular_ = S_ISREG(st.st_mode);
  return true;
}

void AuditLog::rotate(const AuditConfig& cfg) {
  close_file();
  // file.(n-1) -> file.n, ..., file -> file.1; the oldest is replaced.
  for (unsigned i = cfg.max_files; i > 1; --i) {
    const std::string from = cfg.log_file + "." + std::to_string(i - 1);
    const std::string to = cfg.log_file + "." + std::to_string(i);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) failed("rename " + from, errno);
  }
  if (::rename(cfg.log_file.c_str(), (cfg.log_file + ".1").c_str()) != 0) {
    failed("rename", errno);
    return;
  }
  std::lock_guard lock(mu_);
  ++stats_.rotations;
}

void AuditLog::run() {
  for (;;) {
    std::vector<std::string> batch;
    AuditConfig cfg;
    std::uint64_t seq = 0;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, everything written
      batch.swap(queue_);
      queued_bytes_ = 0;
      cfg = cfg_;
      seq = queued_seq_;
    }
    std::uint64_t written = 0;
    std::uint64_t lost = batch.size();
    if (cfg.enabled() && ensure_open(cfg.log_file)) {
      std::string buf;
      if (partial_) buf += '\n';
      for (const auto& line : batch) buf += line;
      std::size_t off = 0;
      int err = 0;
      while (off < buf.size()) {
        const ssize_t n = ::write(fd_, buf.data() + off, buf.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          err = n < 0 ? errno : ENOSPC;
          break;
        }
        off += static_cast<std::size_t>(n);
      }
      if (off < buf.size()) {
        // The whole lines written before the failure count as written.
        std::size_t at = partial_ ? 1 : 0;
        for (const auto& line : batch) {
          if (at + line.size() > off) break;
          at += line.size();
          ++written;
        }
        partial_ = off > 0 && buf[off - 1] != '\n';
        failed("write", err);
      } else {
        written = batch.size();
        partial_ = false;
        if (regular_ && ::fsync(fd_) != 0) failed("fsync", errno);
        if (failing_) {
          failing_ = false;
          log::info("audit log writes again", {{"file", open_path_}});
        }
      }
      lost = batch.size() - written;
      struct stat st {};
      if (regular_ && ::fstat(fd_, &st) == 0 &&
          static_cast<std::uint64_t>(st.st_size) >= cfg.max_bytes) {
        rotate(cfg);
      }
    }
    std::lock_guard lock(mu_);
    stats_.written += written;
    stats_.dropped_write_error += lost;
    done_seq_ = seq;
    progress_.notify_all();
  }
}

namespace {

std::string finding_key(const AccessFinding& f) {
  std::string k(to_string(f.kind));
  k += '\0';
  k += f.path;
  k += '\0';
  k += f.job;
  return k;
}

nlohmann::json finding_json(const AccessFinding& f) {
  return {{"tier", f.tier},
          {"job", display_name(f.job)},
          {"path", display_name(f.path)},
          {"kind", std::string(to_string(f.kind))},
          {"detail", f.detail}};
}

}  // namespace

void FindingsAudit::update(
    const std::map<std::string, std::shared_ptr<const std::vector<AccessFinding>>>& findings,
    AuditLog& log) {
  for (auto it = tiers_.begin(); it != tiers_.end();) {
    if (findings.contains(it->first)) {
      ++it;
      continue;
    }
    std::size_t n = 0;
    for (const auto& [key, f] : it->second.open) {
      if (++n > kMaxRecordsPerUpdate) break;
      nlohmann::json j = finding_json(*f);
      j["reason"] = "tier_removed";
      log.record("finding_closed", std::move(j));
    }
    if (it->second.open.size() > kMaxRecordsPerUpdate) {
      log.record("findings_truncated",
                 {{"tier", it->first},
                  {"closed_not_recorded", it->second.open.size() - kMaxRecordsPerUpdate}});
    }
    it = tiers_.erase(it);
  }
  for (const auto& [tier, list] : findings) {
    if (!list) continue;
    Seen& seen = tiers_[tier];
    if (seen.list == list) continue;
    const bool first = seen.list == nullptr;
    std::map<std::string, const AccessFinding*> now;
    for (const auto& f : *list) now.emplace(finding_key(f), &f);
    std::size_t opened = 0, closed = 0, recorded_opened = 0, recorded_closed = 0;
    for (const auto& [key, f] : now) {
      if (seen.open.contains(key)) continue;
      ++opened;
      if (recorded_opened + recorded_closed >= kMaxRecordsPerUpdate) continue;
      ++recorded_opened;
      nlohmann::json j = finding_json(*f);
      // After a start the daemon does not know what was open before it.
      if (first) j["first_walk"] = true;
      log.record("finding_opened", std::move(j));
    }
    for (const auto& [key, f] : seen.open) {
      if (now.contains(key)) continue;
      ++closed;
      if (recorded_opened + recorded_closed >= kMaxRecordsPerUpdate) continue;
      ++recorded_closed;
      log.record("finding_closed", finding_json(*f));
    }
    if (recorded_opened < opened || recorded_closed < closed) {
      log.record("findings_truncated", {{"tier", tier},
                                        {"opened_not_recorded", opened - recorded_opened},
                                        {"closed_not_recorded", closed - recorded_closed}});
    }
    // The old list goes only now: the closed records above pointed into it.
    seen.list = list;
    seen.open = std::move(now);
  }
}

}  // namespace ckptmon
