#include "collectors/log_tailer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "collectors/integrity.hpp"
#include "util/digest.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// glob(3) reports unreadable directories through a callback without a user
// pointer; one pass runs on one thread at a time.
thread_local int glob_errors = 0;
thread_local std::string glob_first_error;

int on_glob_error(const char* path, int err) {
  if (glob_errors++ == 0) glob_first_error = std::string(path) + ": " + errno_text(err);
  return 0;  // keep going: one unreadable job directory must not hide the others
}

}  // namespace

std::string glob_root(const std::string& glob) {
  std::string root;
  std::size_t start = 1;
  while (start <= glob.size()) {
    std::size_t end = glob.find('/', start);
    if (end == std::string::npos) break;  // the last component names files
    const std::string comp = glob.substr(start, end - start);
    if (comp.find_first_of("*?[\\") != std::string::npos) break;
    root += "/" + comp;
    start = end + 1;
  }
  return root.empty() ? "/" : root;
}

// --- LogFdBudget -------------------------------------------------------------------

LogFdBudget::LogFdBudget(std::size_t cap) : cap_(std::max<std::size_t>(cap, 1)) {}

std::size_t LogFdBudget::default_cap() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 8192;
  return std::clamp<std::size_t>(static_cast<std::size_t>(rl.rlim_cur) / 2, 1, 8192);
}

bool LogFdBudget::try_acquire() {
  std::size_t used = used_.load();
  while (used < cap_) {
    if (used_.compare_exchange_weak(used, used + 1)) return true;
  }
  return false;
}

void LogFdBudget::release() { used_.fetch_sub(1); }

// --- LogTailer ---------------------------------------------------------------------

namespace {

EventParserOptions parser_options(const TailerOptions& o) {
  EventParserOptions p;
  p.max_line_bytes = o.max_line_bytes;
  return p;
}

TailerOptions sane(TailerOptions o) {
  o.read_bytes = std::max(o.read_bytes, o.max_line_bytes + 2);
  return o;
}

}  // namespace

LogTailer::LogTailer(ManifestConfig cfg, std::vector<std::string> earlier_globs, TailerOptions opts,
                     std::shared_ptr<EventIngest> ingest, std::shared_ptr<const Clock> clock)
    : cfg_(std::move(cfg)),
      earlier_(std::move(earlier_globs)),
      opts_(sane(std::move(opts))),
      ingest_(std::move(ingest)),
      clock_(std::move(clock)),
      parser_(parser_options(opts_)),
      buf_(opts_.read_bytes),
      budget_(opts_.fd_budget ? opts_.fd_budget
                              : std::make_shared<LogFdBudget>(LogFdBudget::default_cap())) {}

LogTailer::~LogTailer() {
  for (auto& [_, o] : open_) close_fd(o);
}

void LogTailer::close_fd(Open& o) {
  if (o.fd < 0) return;
  ::close(o.fd);
  o.fd = -1;
  budget_->release();
}

int LogTailer::reopen(Open& o) {
  if (!budget_->try_acquire()) return 0;
  const int fd = ::open(o.path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)} !=
          o.id) {
    if (fd >= 0) ::close(fd);
    budget_->release();
    return -1;
  }
  o.fd = fd;
  o.checked = false;  // verify the bytes before the position: it may have been rewritten
  return 1;
}

bool LogTailer::owned(const std::string& path) const {
  // A log two globs match belongs to the first; otherwise both would read it.
  return std::none_of(earlier_.begin(), earlier_.end(), [&](const std::string& g) {
    return ::fnmatch(g.c_str(), path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0;
  });
}

void LogTailer::refuse(const std::string& path, const std::string& reason, TailStatus& status) {
  ++status.refused[reason];
  if (auto dropped = log_limit_.allow("refused " + path, now_)) {
    log::warn("event log match is not a regular file; not reading it",
              {{"path", path}, {"reason", reason}, {"suppressed", *dropped}});
  }
}

EventIngest::CursorRow LogTailer::fresh(FileId id, const std::string& path) const {
  EventIngest::CursorRow r;
  r.dev = id.dev;
  r.ino = id.ino;
  r.path = path;
  r.glob = cfg_.glob;
  r.last_seen = now_;
  return r;
}

void LogTailer::reset(Open& o, std::optional<FileChange> change) {
  if (change) {
    log::info("event log rewritten; reading it again from the start",
              {{"file", o.path},
               {"change", to_string(*change)},
               {"offset", o.row.parse.offset},
               {"why", why_}});
  }
  EventIngest::CursorRow to = fresh(o.id, o.path);
  if (ingest_->commit(o.has_row ? &o.row : nullptr, to, {}, cfg_.tier, change, 0)) {
    o.row = to;
    o.has_row = true;
  } else {
    auto r = ingest_->cursor(o.id);
    o.has_row = r.has_value();
    o.row = r ? *r : fresh(o.id, o.path);
  }
  o.checked = true;
}

void LogTailer::open_log(int fd, FileId id, const std::string& path, std::uint64_t size) {
  Open o;
  o.fd = fd;
  o.id = id;
  o.path = path;
  o.listed_size = size;
  o.quiet_since = now_;
  std::optional<EventIngest::CursorRow> row = ingest_->cursor(id);
  if (!row) row = ingest_->cursor_by_path(path, id.ino);
  if (!row) {
    o.row = fresh(id, path);
    o.checked = true;
    open_.emplace(id, std::move(o));
    return;
  }
  o.row = *row;
  o.has_row = true;
  bool fingerprint_ok = true;
  const bool same = same_content(fd, *row, size, &fingerprint_ok, &why_);
  auto& slot = open_.emplace(id, std::move(o)).first->second;
  if (!same) {
    // A log that left the glob was counted then (rotated or deleted); a new
    // file that got its inode number is just a new file.
    reset(slot, row->gone ? std::nullopt
                          : std::optional(fingerprint_ok ? FileChange::kTruncated
                                                         : FileChange::kReplaced));
    return;
  }
  slot.checked = true;
  // A device number that changed (remount) is moved to the new key by the next commit.
  slot.row.path = path;
  slot.row.glob = cfg_.glob;
  if (row->dev != id.dev || row->gone) {
    EventIngest::CursorRow to = slot.row;
    to.dev = id.dev;
    to.gone = false;
    to.last_seen = now_;
    if (ingest_->commit(&*row, to, {}, cfg_.tier, std::nullopt, 0)) slot.row = to;
  }
}

void LogTailer::log_rejected(const Open& o, const ChunkResult& chunk) {
  for (const LineResult& l : chunk.lines()) {
    if (l.status != LineStatus::kRejected) continue;
    const std::string reason(reject_reason_label(l.reason));
    if (auto dropped = log_limit_.allow("reject " + reason, now_)) {
      log::warn("event line rejected", {{"file", o.path},
                                        {"line", l.line},
                                        {"reason", reason},
                                        {"detail", l.detail},
                                        {"suppressed", *dropped}});
    }
  }
}

void LogTailer::log_refused_paths(const Open& o, const ChunkResult& chunk) {
  // The verifier refuses (and counts) these when it comes to them; here is
  // where the log says which event log line named them.
  if (opts_.tier_roots.empty()) return;  // no tiers given (tools, tests): nothing to compare with
  for (const LineResult& l : chunk.lines()) {
    if (l.status != LineStatus::kOk || l.event.type != EventType::kShardWritten ||
        l.event.checksum.empty()) {
      continue;
    }
    const std::string& tier = l.event.tier.empty() ? cfg_.tier : l.event.tier;
    auto root = opts_.tier_roots.find(tier);
    std::optional<PathRefusal> why = PathRefusal::kUnconfiguredTier;
    if (root != opts_.tier_roots.end())
      why = tier_relative_path(root->second, l.event.path).refused;
    if (!why) continue;
    if (auto dropped = log_limit_.allow("path " + std::string(to_string(*why)), now_)) {
      log::warn("event names a shard outside its tier; it will not be read",
                {{"file", o.path},
                 {"line", l.line},
                 {"offset", l.offset},
                 {"tier", tier},
                 {"path", l.event.path},
                 {"reason", to_string(*why)},
                 {"suppressed", *dropped}});
    }
  }
}

std::optional<std::uint64_t> LogTailer::drain(Open& o) {
  std::optional<std::uint64_t> seen;  // the size of the file when last looked at
  // At most one batch is being committed (on the journal's thread) while the next
  // one is read and parsed here. `next` is where reading goes on; o.row only
  // moves once a commit has applied.
  struct Pending {
    std::future<std::int64_t> done;
    EventIngest::CursorRow to;
    std::size_t chunk = 0;
  };
  std::optional<Pending> pending;
  EventIngest::CursorRow next = o.row;
  std::size_t slot = 0;
  auto settle = [&]() -> bool {
    if (!pending) return true;
    Pending p = std::move(*pending);
    pending.reset();
    const std::int64_t rejected = p.done.get();
    if (rejected < 0) {
      // Someone else moved this log on: take their position, stop for this pass.
      auto r = ingest_->cursor(o.id);
      o.has_row = r.has_value();
      o.row = r ? *r : fresh(o.id, o.path);
      o.checked = false;
      return false;
    }
    o.row = std::move(p.to);
    o.has_row = true;
    if (rejected > 0) log_rejected(o, chunks_[p.chunk]);
    log_refused_paths(o, chunks_[p.chunk]);
    return true;
  };
  struct Settle {  // never leave a commit running on this pass's buffers
    std::optional<Pending>& p;
    ~Settle() {
      if (p && p->done.valid()) p->done.wait();
    }
  } guard{pending};

  while (true) {
    struct stat st {};
    if (::fstat(o.fd, &st) != 0) {
      log::warn("cannot stat event log", {{"file", o.path}, {"err", errno_text(errno)}});
      break;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    seen = size;
    if (size < next.parse.offset) {
      if (!settle()) return seen;
      why_ = "it is shorter (" + std::to_string(size) + " bytes) than the read position";
      reset(o, FileChange::kTruncated);
      next = o.row;
      continue;
    }
    if (!o.checked) {
      // Rewritten in place (copytruncate, then grown past the position)?
      if (!settle()) return seen;
      o.checked = true;
      bool fingerprint_ok = true;
      if (!same_content(o.fd, o.row, size, &fingerprint_ok, &why_)) {
        reset(o, FileChange::kTruncated);
        next = o.row;
        continue;
      }
    }
    if (size == next.parse.offset || stopping_) break;
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size(), size - next.parse.offset));
    const ssize_t n = pread_full(o.fd, buf_.data(), want, next.parse.offset);
    if (n < 0) {
      if (auto dropped = log_limit_.allow("read " + o.path, now_)) {
        log::warn("cannot read event log",
                  {{"file", o.path}, {"err", errno_text(errno)}, {"suppressed", *dropped}});
      }
      break;
    }
    if (n == 0) break;
    ChunkResult& chunk = chunks_[slot];
    ParseCursor pc = next.parse;
    parser_.parse_chunk(std::string_view(buf_.data(), static_cast<std::size_t>(n)), pc, chunk);
    const std::size_t consumed = chunk.consumed;
    if (consumed == 0) break;  // an incomplete last line: wait for its newline

    EventIngest::CursorRow to = next;
    to.parse = pc;
    to.path = o.path;
    to.glob = cfg_.glob;
    to.gone = false;
    to.last_seen = now_;
    if (!mark_position(o.fd, std::string_view(buf_.data(), consumed), next.parse.offset, to)) {
      break;
    }
    if (!settle()) return seen;
    const bool had_row = o.has_row;
    pending = Pending{ingest_->commit_async(had_row ? std::optional(o.row) : std::nullopt, to,
                                            chunk.lines(), cfg_.tier, std::nullopt, consumed),
                      to, slot};
    next = std::move(to);
    slot ^= 1;
  }
  settle();
  return seen;
}

void LogTailer::leave(Open& o, FileChange change) {
  if (o.fd >= 0) {
    drain(o);
  } else {
    log::info(
        "event log left its glob while closed as quiet; lines it got after it was closed "
        "are not read",
        {{"file", o.path}, {"offset", o.row.parse.offset}});
  }
  if (o.has_row) {
    EventIngest::CursorRow to = o.row;
    to.gone = true;
    to.last_seen = now_;
    if (ingest_->commit(&o.row, to, {}, cfg_.tier, change, 0)) o.row = to;
  }
  log::info("event log left its glob; read it to its end",
            {{"file", o.path}, {"change", to_string(change)}});
}

void LogTailer::recover_orphans(const std::set<FileId>& present) {
  for (const auto& row : ingest_->cursors_of(cfg_.glob)) {
    const FileId id{row.dev, row.ino};
    if (row.gone || present.contains(id) || open_.contains(id) || searched_.contains(id)) continue;
    searched_.insert(id);
    // Renamed away while ckptmon was not running: look for the inode beside
    // its old name, where rotation leaves it (events.jsonl -> events.jsonl.1).
    const std::string dir = parent_dir(row.path);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int found = -1;
    std::string found_path;
    if (dfd >= 0) {
      if (DIR* d = ::fdopendir(dfd)) {
        while (struct dirent* de = ::readdir(d)) {
          if (de->d_ino != row.ino) continue;
          struct stat st {};
          if (::fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_dev) != row.dev ||
              static_cast<std::uint64_t>(st.st_ino) != row.ino) {
            continue;
          }
          found_path = dir + "/" + de->d_name;
          // Another glob that comes first reads it now (the configuration changed).
          if (owned(found_path)) {
            found = ::openat(dfd, de->d_name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
          }
          break;
        }
        ::closedir(d);  // closes dfd
      } else {
        ::close(dfd);
      }
    }
    if (found < 0 && !found_path.empty()) continue;  // there, but not ours to read
    Open o;
    o.id = id;
    o.path = found_path.empty() ? row.path : found_path;
    o.row = row;
    o.has_row = true;
    if (found >= 0) {
      o.fd = found;
      struct stat st {};
      bool fingerprint_ok = true;
      if (::fstat(found, &st) == 0 &&
          same_content(found, row, static_cast<std::uint64_t>(st.st_size), &fingerprint_ok,
                       &why_)) {
        o.checked = true;
        leave(o, FileChange::kRotated);
      } else {
        // Another file took the inode: nothing of the old log is left to read.
        log::info("event log was replaced while ckptmon was not running",
                  {{"file", row.path}, {"change", to_string(FileChange::kDeleted)}});
        EventIngest::CursorRow to = row;
        to.gone = true;
        ingest_->commit(&row, to, {}, cfg_.tier, FileChange::kDeleted, 0);
      }
      ::close(found);
    } else {
      EventIngest::CursorRow to = row;
      to.gone = true;
      ingest_->commit(&row, to, {}, cfg_.tier, FileChange::kDeleted, 0);
      log::info("event log was removed while ckptmon was not running",
                {{"file", row.path}, {"change", to_string(FileChange::kDeleted)}});
    }
  }
}

bool LogTailer::open_new(const std::string& path, TailStatus& status, std::set<FileId>& present) {
  if (!budget_->try_acquire()) return false;
  // O_NONBLOCK: a FIFO swapped in after the lstat must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    budget_->release();
    refuse(path, errno == ELOOP ? "symlink" : "unreadable", status);
    return false;
  }
  struct stat fst {};
  if (::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    refuse(path, refusal_reason(fst.st_mode), status);
    ::close(fd);
    budget_->release();
    return false;
  }
  const FileId id{static_cast<std::uint64_t>(fst.st_dev), static_cast<std::uint64_t>(fst.st_ino)};
  present.insert(id);
  if (open_.contains(id)) {
    ::close(fd);
    budget_->release();
    return false;
  }
  open_log(fd, id, path, static_cast<std::uint64_t>(fst.st_size));
  return true;
}

LogTailer::Pass LogTailer::run() {
  ingest_->ensure_loaded();
  now_ = clock_->now();
  Pass pass;
  TailStatus status;
  pass.dirs.insert(glob_root(cfg_.glob));

  glob_errors = 0;
  glob_first_error.clear();
  glob_t g{};
  // glob_t is this call's own; the environment and locale are set before threads start.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): see above.
  const int rc = ::glob(cfg_.glob.c_str(), 0, on_glob_error, &g);
  std::vector<std::string> matches;
  if (rc == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  bool listing_complete = glob_errors == 0 && (rc == 0 || rc == GLOB_NOMATCH);
  if (!listing_complete) {
    status.error = glob_first_error.empty() ? "glob failed" : glob_first_error;
  }

  // Watch every directory that may hold a match, so a log created in one
  // wakes the tailer too (new directories appear by polling, or by a wake
  // from the glob's root).
  if (const std::string dirs = parent_dir(cfg_.glob);
      dirs.find_first_of("*?[") != std::string::npos) {
    glob_t d{};
    // NOLINTNEXTLINE(concurrency-mt-unsafe): as above.
    if (::glob(dirs.c_str(), GLOB_ONLYDIR, nullptr, &d) == 0) {
      for (std::size_t i = 0; i < d.gl_pathc; ++i) pass.dirs.insert(d.gl_pathv[i]);
    }
    ::globfree(&d);
  } else {
    pass.dirs.insert(dirs);
  }

  std::set<FileId> present;
  std::vector<std::string> deferred;  // new logs met while the descriptor budget was spent
  for (const std::string& path : matches) {
    if (!owned(path)) continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // vanished since the listing
    if (!S_ISREG(st.st_mode)) {
      refuse(path, refusal_reason(st.st_mode), status);
      continue;
    }
    pass.dirs.insert(parent_dir(path));
    FileId id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    if (auto it = open_.find(id); it != open_.end()) {
      it->second.path = path;  // renamed within the glob: the same log
      it->second.listed_size = static_cast<std::uint64_t>(st.st_size);
      present.insert(id);
      continue;
    }
    if (budget_->used() >= budget_->cap()) {
      // Opened after the logs held open are read (and the quiet ones closed).
      deferred.push_back(path);
      present.insert(id);
      continue;
    }
    open_new(path, status, present);
  }

  if (listing_complete) {
    // Logs that left the glob since the last pass: read what is left through
    // the descriptor kept open, then let go, before starting their successors.
    for (auto it = open_.begin(); it != open_.end();) {
      if (present.contains(it->first)) {
        ++it;
        continue;
      }
      struct stat st {};
      const bool deleted =
          it->second.fd >= 0 && ::fstat(it->second.fd, &st) == 0 && st.st_nlink == 0;
      leave(it->second, deleted ? FileChange::kDeleted : FileChange::kRotated);
      close_fd(it->second);
      it = open_.erase(it);
    }
    recover_orphans(present);
  }

  std::vector<Open*> order;
  for (auto& [id, o] : open_) order.push_back(&o);
  std::sort(order.begin(), order.end(),
            [](const Open* a, const Open* b) { return a->path < b->path; });
  // Reads one open log to its end; closes it when it ends there and the
  // budget runs low or it has been quiet for long.
  auto read_log = [&](Open& o) {
    const std::uint64_t before = o.row.parse.offset;
    const auto size = drain(o);
    if (size && *size > o.row.parse.offset) status.backlog_bytes += *size - o.row.parse.offset;
    if (o.row.parse.offset != before) o.quiet_since = now_;
    const bool at_end = size && *size == o.row.parse.offset;
    if (at_end && (budget_->low() || now_ - o.quiet_since >= opts_.close_quiet_after_seconds)) {
      close_fd(o);
    }
  };
  for (Open* o : order) {
    if (stopping_) break;
    bool readable = o->fd >= 0;
    if (!readable && o->listed_size != o->row.parse.offset) {
      // Quiet and closed: opened again only when the listing says it changed
      // (-1: its path names another file now; the next listing sees that one).
      const int r = reopen(*o);
      if (r == 0) ++status.unread;
      readable = r > 0;
    }
    if (readable) read_log(*o);
    // Keep the position of a quiet log from being forgotten.
    if (o->has_row && now_ - o->row.last_seen > 3600) {
      EventIngest::CursorRow to = o->row;
      to.last_seen = now_;
      if (ingest_->commit(&o->row, to, {}, cfg_.tier, std::nullopt, 0)) o->row = to;
    }
    o->checked = false;  // verify the bytes before the position again next pass
  }
  for (const std::string& path : deferred) {
    if (stopping_) break;
    std::set<FileId> opened;
    if (!open_new(path, status, opened)) {
      if (budget_->used() >= budget_->cap()) ++status.unread;  // else refused, and counted so
      continue;
    }
    for (const FileId& id : opened) {
      if (auto it = open_.find(id); it != open_.end()) read_log(it->second);
    }
  }
  status.files = open_.size();
  for (const auto& [_, o] : open_) status.open += o.fd >= 0 ? 1 : 0;
  if (status.unread > 0) {
    if (auto dropped = log_limit_.allow("unread", now_)) {
      log::warn(
          "event logs not read in this pass: the descriptors for event logs are spent "
          "(half of RLIMIT_NOFILE); they are read as others go quiet",
          {{"glob", cfg_.glob},
           {"unread", status.unread},
           {"budget", static_cast<std::uint64_t>(budget_->cap())},
           {"suppressed", *dropped}});
    }
  }
  ingest_->set_tail_status(cfg_.glob, std::move(status));

  ingest_->collect_garbage(now_, opts_.forget_after_seconds);
  return pass;
}

}  // namespace ckptmon
