#include "collectors/tree_walk.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>

#include "collectors/layouts/layout.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

double seconds_of(const struct statx_timestamp& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double mtime_of(const struct stat& st) {
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

// An open, stat or listing that failed for a reason other than the entry
// being gone (or swapped for a non-directory): EACCES, EIO, ESTALE, ENOTCONN...
// What is below is unknown, not empty.
bool unreadable_errno(int err) {
  return err != 0 && err != ENOENT && err != ENOTDIR && err != ELOOP;
}

// The one place an entry's error is counted: a vanished entry (ENOENT) is
// normal during saves and deletes; every error that leaves an entry
// unreadable (EACCES as much as EIO or a stale handle) is counted as one.
void record_error(WalkStats& st, int err) {
  if (err == ENOENT) {
    ++st.vanished;
  } else if (unreadable_errno(err)) {
    ++st.permission_errors;
  }
}

void add(WalkStats& a, const WalkStats& b) {
  a.dirs_listed += b.dirs_listed;
  a.stat_calls += b.stat_calls;
  a.permission_errors += b.permission_errors;
  a.vanished += b.vanished;
  a.reused += b.reused;
  a.listings_reused += b.listings_reused;
}

struct Fd {
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int fd;
};
using FdRef = std::shared_ptr<const Fd>;

// What a stat of one entry said: the fields the DirNode carries, plus the
// inode and ctime the listing memory needs.
struct Attr {
  std::uint32_t mode = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  std::uint64_t blocks = 0;
  double mtime = 0;
  double ctime = 0;
  std::uint64_t ino = 0;
  dev_t dev = 0;
};

}  // namespace

struct TreeWalker::Env {
  FdRef root;
  dev_t root_dev = 0;
  bool dont_sync_files = false;
  bool statx_missing = false;  // the kernel (or a seccomp filter) has no statx: fstatat
  std::shared_ptr<WalkLive> live;
  WalkCallHook hook;
  WalkFaultHook fault;

  // Every metadata call goes through here: counted in flight while it runs,
  // its duration observed, errno kept.
  template <class F>
  auto call(std::string_view op, const std::string& rel, F&& f) const {
    using R = decltype(f());
    if (fault) {
      if (const int e = fault(op, rel); e != 0) {
        errno = e;
        if constexpr (std::is_same_v<R, bool>) {
          return false;
        } else {
          return static_cast<R>(-1);
        }
      }
    }
    if (live) live->inflight.fetch_add(1, std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    if (hook) hook(op, rel);
    R r = f();
    const int saved = errno;
    if (live) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
      live->observe(static_cast<std::uint64_t>(std::max<long long>(ns, 0)));
      live->inflight.fetch_sub(1, std::memory_order_relaxed);
    }
    errno = saved;
    return r;
  }

  // statx with the smallest mask the walk needs: directories need no size or
  // blocks; non-directories may use cached attributes (AT_STATX_DONT_SYNC)
  // where the tier asks for it. Directories always sync: their mtime decides
  // whether a listing is reused.
  int stat_at(int dfd, const char* name, unsigned char d_type, const std::string& rel,
              Attr& a) const {
    const bool dir_hint = d_type == DT_DIR;
    unsigned mask =
        STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_MTIME | STATX_CTIME | STATX_INO;
    if (!dir_hint) mask |= STATX_SIZE | STATX_BLOCKS;
    int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT;
    // Only where getdents said "not a directory": a DT_UNKNOWN entry may be one.
    if (dont_sync_files && d_type != DT_DIR && d_type != DT_UNKNOWN) flags |= AT_STATX_DONT_SYNC;
    if (!statx_missing) {
      struct statx sx {};
      const int rc = call("stat", rel, [&] { return ::statx(dfd, name, flags, mask, &sx); });
      if (rc == 0) {
        a.mode = sx.stx_mode;
        a.uid = sx.stx_uid;
        a.gid = sx.stx_gid;
        a.size = sx.stx_size;
        a.blocks = sx.stx_blocks;
        a.mtime = seconds_of(sx.stx_mtime);
        a.ctime = seconds_of(sx.stx_ctime);
        a.ino = sx.stx_ino;
        a.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        // A directory behind a non-directory d_type (DT_UNKNOWN file
        // systems): its size is not needed, nothing to redo.
        return 0;
      }
      if (errno != ENOSYS) return -1;
    }
    struct stat st {};
    const int rc = call("stat", rel, [&] {
      return ::fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
    });
    if (rc != 0) return -1;
    a.mode = st.st_mode;
    a.uid = st.st_uid;
    a.gid = st.st_gid;
    a.size = static_cast<std::uint64_t>(st.st_size);
    a.blocks = static_cast<std::uint64_t>(st.st_blocks);
    a.mtime = mtime_of(st);
    a.ctime =
        static_cast<double>(st.st_ctim.tv_sec) + static_cast<double>(st.st_ctim.tv_nsec) * 1e-9;
    a.ino = st.st_ino;
    a.dev = st.st_dev;
    return 0;
  }

  // One ACL xattr of the directory open at `fd`: absent when the file system
  // has none (ENODATA) or no xattrs of the kind (ENOTSUP); a value over
  // kMaxAclXattrBytes fails with ERANGE.
  void read_xattr(int fd, const char* name, const std::string& rel, XattrValue& out) const {
    out = XattrValue{};
    // Most ACLs are a few entries: a small buffer first, the largest on ERANGE.
    std::string buf(4096, '\0');
    ssize_t n = -1;
    for (;;) {
      n = call("xattr", rel, [&] { return ::fgetxattr(fd, name, buf.data(), buf.size()); });
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == ERANGE && buf.size() < kMaxAclXattrBytes) {
        buf.assign(kMaxAclXattrBytes, '\0');
        continue;
      }
      break;
    }
    if (n < 0) {
      if (errno != ENODATA && errno != ENOTSUP) out.error = errno;
      return;
    }
    buf.resize(static_cast<std::size_t>(n));
    out.present = true;
    out.bytes = std::move(buf);
  }

  int open_dir_at(int parent_fd, const std::string& name, const std::string& rel) const {
    return call("open", rel, [&] {
      return ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    });
  }

  // Opens `rel` below the root one component at a time, refusing symlinks
  // anywhere on the way.
  int open_rel(const std::string& rel) const {
    // A new open file description (not a dup): its own directory offset.
    int fd = call("open", rel,
                  [&] { return ::openat(root->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (rel.empty() || fd < 0) return fd;
    std::string so_far;
    for (auto part : split(rel, '/')) {
      if (part.empty()) continue;
      const std::string name(part);
      so_far = join(so_far, name);
      const int next = open_dir_at(fd, name, so_far);
      const int err = errno;
      ::close(fd);
      if (next < 0) {
        errno = err;
        return -1;
      }
      fd = next;
    }
    return fd;
  }

  // Every entry of the directory open at `fd` (not . and ..), with its
  // d_type, sorted by name. A read error (EIO, ESTALE) ends the listing with
  // what was read and is left in `*err`: the listing is then partial.
  std::vector<std::pair<std::string, unsigned char>> list(int fd, const std::string& rel,
                                                          int* err = nullptr) const {
    std::vector<std::pair<std::string, unsigned char>> names;
    std::vector<char> buf(std::size_t{64} * 1024);
    for (;;) {
      const ssize_t n = call("list", rel, [&] { return ::getdents64(fd, buf.data(), buf.size()); });
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && err != nullptr) *err = errno;
      if (n <= 0) break;
      std::size_t off = 0;
      while (off < static_cast<std::size_t>(n)) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf.data() + off);
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        names.emplace_back(d->d_name, d->d_type);
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

namespace {

using Env = TreeWalker::Env;

// What handling one entry of a directory produced.
// Compact (a directory of a million entries holds a million of these): the
// FileEntry or DirNode is made from it, and the entry's name, when assembled.
struct EntryOut {
  int err = 0;  // the stat failed with this errno
  bool is_dir = false;
  bool other_dev = false;  // a directory on another file system: not walked
  bool reused = false;     // a frozen checkpoint, unchanged
  Attr a;
  std::unique_ptr<std::string> link_target;  // symlinks: what readlink said
  std::unique_ptr<std::string> content;      // manifests the layouts read
};

FileEntry make_file(std::string name, EntryOut& o) {
  FileEntry f;
  f.name = std::move(name);
  f.type = S_ISREG(o.a.mode)   ? FileEntry::Type::kRegular
           : S_ISLNK(o.a.mode) ? FileEntry::Type::kSymlink
                               : FileEntry::Type::kOther;
  f.size = o.a.size;
  f.allocated = o.a.blocks * 512;
  f.mtime = o.a.mtime;
  f.mode = o.a.mode;
  f.uid = o.a.uid;
  f.gid = o.a.gid;
  if (o.link_target) f.link_target = std::move(*o.link_target);
  if (o.content) f.content = std::move(*o.content);
  return f;
}

bool same_entry(const FileEntry& a, const FileEntry& b) {
  return a.name == b.name && a.type == b.type && a.size == b.size && a.allocated == b.allocated &&
         a.mtime == b.mtime && a.mode == b.mode && a.uid == b.uid && a.gid == b.gid &&
         a.link_target == b.link_target && a.content == b.content;
}

// A committed checkpoint the walk may not need to list again.
using FrozenCheck = WalkMemory::Frozen;

// One entry to stat: `prev` is what an earlier listing said of it (files only).
struct EntryIn {
  std::string name;
  unsigned char d_type = DT_UNKNOWN;
  const FileEntry* prev = nullptr;
  double prev_ctime = 0;
  std::shared_ptr<const FrozenCheck> frozen;
  std::shared_ptr<const Checkpoint> record;  // of `frozen`: reused when it is unchanged
};

// True when the committed checkpoint at `rel`, whose directory now has
// `mtime`, has none of its directories changed since it was frozen.
bool frozen_unchanged(const Env& env, double mtime, const FrozenCheck& f, WalkStats& st) {
  if (mtime != f.mtime) return false;
  for (const auto& [path, recorded] : f.dirs) {
    Attr a;
    ++st.stat_calls;
    if (env.stat_at(env.root->fd, path.c_str(), DT_DIR, path, a) != 0 || !S_ISDIR(a.mode)) {
      return false;
    }
    if (a.mtime != recorded) return false;
  }
  return true;
}

// Stats one entry of the directory open at `dfd` (tier-relative `rel`) and
// fills what the DirNode needs: the same for every entry whichever slot runs it.
void handle_entry(const Env& env, int dfd, const std::string& rel, const EntryIn& in, EntryOut& out,
                  WalkStats& st) {
  const std::string child_rel = join(rel, in.name);
  Attr a;
  ++st.stat_calls;
  if (env.stat_at(dfd, in.name.c_str(), in.d_type, child_rel, a) != 0) {
    out.err = errno;
    record_error(st, out.err);
    return;
  }
  out.a = a;
  if (S_ISDIR(a.mode)) {
    out.is_dir = true;
    if (a.dev != env.root_dev) {
      out.other_dev = true;  // another file system: not walked
      return;
    }
    if (in.frozen && frozen_unchanged(env, a.mtime, *in.frozen, st)) {
      out.reused = true;
      ++st.reused;
    }
    return;
  }
  if (in.d_type == DT_DIR) {
    // d_type said directory but it no longer is: the mask lacked the size.
    Attr full;
    ++st.stat_calls;
    if (env.stat_at(dfd, in.name.c_str(), DT_UNKNOWN, child_rel, full) != 0) {
      out.err = errno;
      record_error(st, out.err);
      return;
    }
    a = full;
    out.a = a;
    if (S_ISDIR(a.mode)) {  // flapping between the two stats: treated as gone for this walk
      out.err = ENOENT;
      record_error(st, out.err);
      return;
    }
  }
  if (S_ISLNK(a.mode)) {
    char buf[4096];
    const ssize_t n = env.call("readlink", child_rel, [&] {
      return ::readlinkat(dfd, in.name.c_str(), buf, sizeof(buf));
    });
    if (n > 0) out.link_target = std::make_unique<std::string>(buf, static_cast<std::size_t>(n));
  } else if (S_ISREG(a.mode) && a.size <= kMaxManifestBytes && wants_content(in.name)) {
    if (in.prev != nullptr && in.prev->content && in.prev->type == FileEntry::Type::kRegular &&
        in.prev->size == a.size && in.prev->mtime == a.mtime && in.prev_ctime == a.ctime) {
      out.content = std::make_unique<std::string>(*in.prev->content);  // unchanged since read
    } else {
      std::string text;
      if (env.call("read", child_rel,
                   [&] { return read_small_file(dfd, in.name, kMaxManifestBytes, text); })) {
        out.content = std::make_unique<std::string>(std::move(text));
      }
    }
  }
}

}  // namespace

// --- WalkLive, WalkSlots ---------------------------------------------------

struct WalkSlots::Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool stop = false;
};

WalkSlots::WalkSlots(int n)
    : q_(std::make_shared<Queue>()), live_(std::make_shared<WalkLive>()), n_(std::max(n, 1)) {
  live_->slots.store(n_);
  for (int i = 0; i < n_; ++i) {
    // Detached: a thread stuck in a call on a hung mount must not hold up
    // whoever drops the slots; it holds the queue itself.
    std::thread([q = q_] {
      ::pthread_setname_np(::pthread_self(), "ckptmon-walk");
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock lock(q->mu);
          q->cv.wait(lock, [&] { return q->stop || !q->tasks.empty(); });
          if (q->stop) return;
          task = std::move(q->tasks.front());
          q->tasks.pop_front();
        }
        task();
      }
    }).detach();
  }
}

WalkSlots::~WalkSlots() {
  {
    std::lock_guard lock(q_->mu);
    q_->stop = true;
    q_->tasks.clear();
  }
  q_->cv.notify_all();
}

void WalkSlots::submit(std::function<void()> task) {
  {
    std::lock_guard lock(q_->mu);
    q_->tasks.push_back(std::move(task));
  }
  q_->cv.notify_one();
}

// --- TreeWalker ------------------------------------------------------------

bool read_small_file(int dfd, const std::string& name, std::uint64_t max_bytes, std::string& out) {
  // O_NONBLOCK: a FIFO swapped in after the lstat must not block the walk.
  const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return false;
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  bool ok = true;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;  // an error, or the file shrank: what was read
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  ::close(fd);
  return ok;
}

// A directory whose entries are still to be handled: `node` is its place in
// the tree being built (stable: its parent's vector is complete).
struct TreeWalker::Pending {
  DirNode* node = nullptr;  // never touched by the slots
  std::string rel;
  std::string name;
  FdRef parent;  // open `name` below it; null: `fd` is already open
  FdRef fd;
  std::uint64_t ino = 0;
  int depth = 0;  // components of `rel`
};

TreeWalker::TreeWalker(int root_fd, dev_t root_dev, const WalkMemory* memory, WalkStats& stats,
                       WalkOptions options)
    : env_(std::make_shared<Env>()), memory_(memory), stats_(stats), options_(std::move(options)) {
  env_->root = std::make_shared<const Fd>(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  env_->root_dev = root_dev;
  env_->dont_sync_files = options_.dont_sync_files;
  env_->hook = options_.hook;
  env_->fault = options_.fault;
  if (options_.slots != nullptr) env_->live = options_.slots->live();
}

TreeWalker::~TreeWalker() = default;

namespace {

// Completion of one batch of tasks, shared with the slots running them: an
// abandoned batch's tasks may finish (or start) after the walker is gone.
struct Batch {
  std::mutex mu;
  std::condition_variable cv;
  std::size_t remaining = 0;
  std::uint64_t done = 0;
  std::atomic<bool> cancelled{false};
};

}  // namespace

bool run_tasks(WalkSlots* slots, std::vector<std::function<void()>>& tasks,
               std::chrono::milliseconds stall, const Clock& clock) {
  if (slots == nullptr) {
    for (auto& t : tasks) t();
    return true;
  }
  // Every call runs on a slot, even with one slot: the calling thread (a
  // worker of the daemon's pool) only waits, and gives up on a stall.
  auto batch = std::make_shared<Batch>();
  batch->remaining = tasks.size();
  for (auto& t : tasks) {
    slots->submit([batch, task = std::move(t)] {
      if (!batch->cancelled.load()) task();
      {
        std::lock_guard lock(batch->mu);
        --batch->remaining;
        ++batch->done;
      }
      batch->cv.notify_one();
    });
  }
  // A clock that moves only when told (a test's) wakes the wait when it moves.
  auto wake = std::make_shared<const ClockListener>([batch] {
    { std::lock_guard lock(batch->mu); }
    batch->cv.notify_all();
  });
  clock.listen(wake);
  const double stall_seconds = std::chrono::duration<double>(stall).count();
  std::unique_lock lock(batch->mu);
  std::uint64_t seen = batch->done;
  double last_return = clock.monotonic();
  while (batch->remaining > 0) {
    const double left = last_return + stall_seconds - clock.monotonic();
    if (left <= 0) {
      batch->cancelled = true;  // calls stopped returning: give the walk up
      return false;
    }
    // Real time for a real clock; a test's clock wakes it by moving.
    batch->cv.wait_for(lock, std::chrono::duration<double>(left), [&] {
      return batch->remaining == 0 || batch->done != seen ||
             clock.monotonic() >= last_return + stall_seconds;
    });
    if (batch->done != seen) {
      seen = batch->done;
      last_return = clock.monotonic();
    }
  }
  return true;
}

bool TreeWalker::run_all(std::vector<std::function<void()>>& tasks) {
  if (stalled_) return false;
  if (!run_tasks(options_.slots, tasks, options_.stall_timeout,
                 options_.clock != nullptr ? *options_.clock : system_clock())) {
    stalled_ = true;
  }
  return !stalled_;
}

bool TreeWalker::build(const std::string& rel, DirNode& out, std::string* error, AclXattrs* acls) {
  auto say = [&](int err) {
    if (error != nullptr) *error = rel + ": " + errno_text(err);
  };
  // The first open and stat of the walk run on a slot too: the tier root of
  // a hung mount must not hold the calling thread.
  struct Head {
    FdRef fd;
    int err = 0;
    Attr a;
    bool stat_ok = false;
    bool want_acls = false;
    AclXattrs acls;
  };
  auto head = std::make_shared<Head>();
  head->want_acls = acls != nullptr;
  std::vector<std::function<void()>> first{[env = env_, head, rel] {
    const int fd = env->open_rel(rel);
    if (fd < 0) {
      head->err = errno;
      return;
    }
    head->fd = std::make_shared<const Fd>(fd);
    struct stat st {};
    if (env->call("stat", rel, [&] { return ::fstat(fd, &st); }) != 0) {
      head->err = errno;
      return;
    }
    head->stat_ok = true;
    head->a.mode = st.st_mode;
    head->a.uid = st.st_uid;
    head->a.gid = st.st_gid;
    head->a.mtime = mtime_of(st);
    head->a.ino = st.st_ino;
    if (head->want_acls) {
      env->read_xattr(fd, kNfs4AclXattr, rel, head->acls.nfs4);
      env->read_xattr(fd, kPosixAclAccessXattr, rel, head->acls.posix_access);
      env->read_xattr(fd, kPosixAclDefaultXattr, rel, head->acls.posix_default);
    }
  }};
  if (!run_all(first)) {
    if (error != nullptr) *error = rel + ": the walk stalled (no call returned in time)";
    return false;
  }
  FdRef fd = head->fd;
  if (!fd) {
    record_error(stats_, head->err);
    if (unreadable_errno(head->err)) out.error = head->err;
    say(head->err);
    return false;
  }
  ++stats_.stat_calls;
  if (!head->stat_ok) {
    record_error(stats_, head->err);
    if (unreadable_errno(head->err)) out.error = head->err;
    say(head->err);
    return false;
  }
  out.name = rel.empty() ? std::string() : std::string(split(rel, '/').back());
  out.mtime = head->a.mtime;
  out.mode = head->a.mode;
  out.uid = head->a.uid;
  out.gid = head->a.gid;
  if (acls != nullptr) *acls = std::move(head->acls);
  if (memory_ != nullptr && options_.frozen_record) {
    auto it = memory_->frozen.find(rel);
    std::shared_ptr<const Checkpoint> record;
    if (it != memory_->frozen.end()) record = options_.frozen_record(rel, *it->second.frozen);
    if (record) {
      std::shared_ptr<const FrozenCheck> check = it->second.frozen;
      auto res = std::make_shared<std::pair<bool, WalkStats>>();
      std::vector<std::function<void()>> t{[env = env_, check, res, m = out.mtime] {
        res->first = frozen_unchanged(*env, m, *check, res->second);
      }};
      if (!run_all(t)) {
        if (error != nullptr) *error = rel + ": the walk stalled (no call returned in time)";
        return false;
      }
      add(stats_, res->second);
      if (res->first) {
        out.reused = std::move(record);
        ++stats_.reused;
        return true;
      }
    }
  }
  int depth = 0;
  for (auto part : split(rel, '/')) depth += part.empty() ? 0 : 1;
  std::vector<Pending> stack;
  stack.push_back(Pending{&out, rel, out.name, nullptr, fd, head->a.ino, depth});
  if (!walk(stack)) {
    if (error != nullptr) *error = rel + ": the walk stalled (no call returned in time)";
    return false;
  }
  return true;
}

bool TreeWalker::walk(std::vector<Pending>& stack) {
  const int c = options_.slots != nullptr ? options_.slots->size() : 1;
  const std::size_t group_max = static_cast<std::size_t>(std::max(16, 4 * c));
  std::unordered_set<const DirNode*> gone;  // directories that vanished before being opened
  DirNode* const root = stack.front().node;

  // Per directory of a group: what its open/listing found, then its entries.
  struct DirWork {
    Pending p;
    std::shared_ptr<const DirListing> prior;  // a listing to reuse, or null
    FdRef fd;
    int open_err = 0;
    int list_err = 0;  // the listing ended on this error: it is partial
    bool listed = false;
    std::vector<std::pair<std::string, unsigned char>> names;
    std::vector<EntryIn> entries;
    std::vector<EntryOut> outs;
  };

  while (!stack.empty()) {
    const std::size_t n = std::min(group_max, stack.size());
    auto group = std::make_shared<std::vector<DirWork>>(n);
    for (std::size_t i = 0; i < n; ++i) {
      DirWork& w = (*group)[i];
      w.p = std::move(stack[stack.size() - n + i]);
      if (memory_ != nullptr) {
        auto it = memory_->listings.find(w.p.rel);
        const DirNode& dn = *w.p.node;
        if (it != memory_->listings.end() && it->second->mtime == dn.mtime &&
            it->second->ino == w.p.ino && it->second->mode == dn.mode &&
            it->second->uid == dn.uid && it->second->gid == dn.gid &&
            it->second->files.size() == it->second->ctimes.size() &&
            it->second->files.size() == it->second->checked.size()) {
          w.prior = it->second;
        }
      }
    }
    stack.resize(stack.size() - n);

    // Whether file k of a reused listing is stat'ed again: a manifest the
    // layouts read, or a young file whose recheck is due.
    const auto restat = [now = options_.now](const DirListing& l, std::size_t k) {
      return wants_content(l.files[k].name) ||
             (l.ctimes[k] > l.settled_before && recheck_due(now, l.ctimes[k], l.checked[k]));
    };
    // 1. Open and list (a reused listing: open only when something in it
    // must be stat'ed again).
    std::vector<std::function<void()>> tasks;
    for (std::size_t i = 0; i < n; ++i) {
      DirWork& w = (*group)[i];
      bool need_fd = true;
      if (w.prior) {
        const DirListing& l = *w.prior;
        need_fd = !l.dirs.empty() || !l.retry.empty();
        for (std::size_t k = 0; !need_fd && k < l.files.size(); ++k) need_fd = restat(l, k);
      }
      if (w.p.fd) {
        w.fd = w.p.fd;
        if (w.prior) continue;
      } else if (!need_fd) {
        continue;
      }
      tasks.push_back([env = env_, group, i] {
        DirWork& d = (*group)[i];
        if (!d.fd) {
          const int fd = env->open_dir_at(d.p.parent->fd, d.p.name, d.p.rel);
          if (fd < 0) {
            d.open_err = errno;
            return;
          }
          d.fd = std::make_shared<const Fd>(fd);
        }
        if (d.prior) return;
        d.names = env->list(d.fd->fd, d.p.rel, &d.list_err);
        d.listed = true;
      });
    }
    if (!tasks.empty() && !run_all(tasks)) return false;

    // 2. Which entries to stat, then stat them spread over the slots.
    std::vector<std::pair<std::size_t, std::size_t>> work;  // (dir, entry)
    for (std::size_t i = 0; i < n; ++i) {
      DirWork& w = (*group)[i];
      w.p.parent.reset();  // the parent's descriptor is no longer needed here
      if (w.open_err != 0) {
        record_error(stats_, w.open_err);
        if (w.open_err == ENOENT) gone.insert(w.p.node);  // vanished: not in the tree
        // Seen but unreadable: kept, its contents unknown (not empty).
        if (unreadable_errno(w.open_err)) w.p.node->error = w.open_err;
        continue;
      }
      // The entry `name` (its d_type), with what a frozen checkpoint there
      // needs to be reused: its check and the record to reuse.
      auto entry = [&](std::string name, unsigned char type) {
        EntryIn in{std::move(name), type, nullptr, 0, nullptr, nullptr};
        if (memory_ == nullptr || memory_->frozen.empty() || !options_.frozen_record) return in;
        if (type != DT_DIR && type != DT_UNKNOWN) return in;
        const std::string rel = join(w.p.rel, in.name);
        auto it = memory_->frozen.find(rel);
        if (it == memory_->frozen.end()) return in;
        in.record = options_.frozen_record(rel, *it->second.frozen);
        if (in.record) in.frozen = it->second.frozen;
        return in;
      };
      if (w.prior) {
        ++stats_.listings_reused;
        const DirListing& l = *w.prior;
        for (const auto& d : l.dirs) w.entries.push_back(entry(d, DT_DIR));
        for (const auto& r : l.retry)
          w.entries.push_back(EntryIn{r, DT_UNKNOWN, nullptr, 0, nullptr, nullptr});
        for (std::size_t k = 0; k < l.files.size(); ++k) {
          if (restat(l, k)) {
            w.entries.push_back(
                EntryIn{l.files[k].name, DT_UNKNOWN, &l.files[k], l.ctimes[k], nullptr, nullptr});
          }
        }
        std::sort(w.entries.begin(), w.entries.end(),
                  [](const EntryIn& a, const EntryIn& b) { return a.name < b.name; });
      } else if (w.listed) {
        ++stats_.dirs_listed;
        if (listed_ != nullptr) listed_->push_back(w.p.rel);
        w.entries.reserve(w.names.size());
        // Listed again (an entry came or went, most often a commit marker):
        // every file is stat'ed, so a checkpoint's sizes are current at the
        // moment it commits.
        for (auto& [name, type] : w.names) w.entries.push_back(entry(std::move(name), type));
        std::vector<std::pair<std::string, unsigned char>>().swap(w.names);
      }
      w.outs.resize(w.entries.size());
      for (std::size_t k = 0; k < w.entries.size(); ++k) work.emplace_back(i, k);
    }
    tasks.clear();
    if (!work.empty()) {
      const std::size_t chunk =
          std::clamp<std::size_t>(work.size() / (4 * static_cast<std::size_t>(c)), 1, 256);
      auto shared_work =
          std::make_shared<std::vector<std::pair<std::size_t, std::size_t>>>(std::move(work));
      const std::size_t chunks = (shared_work->size() + chunk - 1) / chunk;
      auto chunk_stats = std::make_shared<std::vector<WalkStats>>(chunks);
      for (std::size_t t = 0; t < chunks; ++t) {
        const std::size_t s = t * chunk;
        const std::size_t e = std::min(shared_work->size(), s + chunk);
        tasks.push_back([env = env_, group, shared_work, chunk_stats, t, s, e] {
          for (std::size_t j = s; j < e; ++j) {
            const auto [di, k] = (*shared_work)[j];
            DirWork& d = (*group)[di];
            handle_entry(*env, d.fd->fd, d.p.rel, d.entries[k], d.outs[k], (*chunk_stats)[t]);
          }
        });
      }
      if (!run_all(tasks)) return false;
      for (const auto& st : *chunk_stats) add(stats_, st);
    }

    // 3. Assemble each directory in name order; its subdirectories to walk.
    for (std::size_t i = 0; i < n; ++i) {
      DirWork& w = (*group)[i];
      if (w.open_err != 0 || (!w.listed && !w.prior)) continue;
      DirNode& node = *w.p.node;
      if (unreadable_errno(w.list_err)) {
        node.error = w.list_err;
        record_error(stats_, w.list_err);
      }
      auto listing = std::make_shared<DirListing>();
      listing->mtime = node.mtime;
      listing->ino = w.p.ino;
      listing->mode = node.mode;
      listing->uid = node.uid;
      listing->gid = node.gid;
      listing->settled_before = options_.now - options_.settle_seconds;
      std::vector<DirNode> dirs;
      std::vector<std::uint64_t> dir_inos;
      std::vector<FileEntry> files;
      std::vector<double> ctimes;
      std::vector<double> checked;
      bool changed = !w.prior;
      // A young file stat'ed again, unchanged: the listing is remembered anew
      // all the same, with when it was checked.
      bool rechecked = false;
      if (w.prior) {
        // Files not stat'ed again as remembered; the rest come back from the stats.
        const DirListing& l = *w.prior;
        for (std::size_t k = 0; k < l.files.size(); ++k) {
          if (restat(l, k)) continue;
          files.push_back(l.files[k]);
          ctimes.push_back(l.ctimes[k]);
          checked.push_back(l.checked[k]);
        }
      }
      files.reserve(files.size() + w.entries.size());
      for (std::size_t k = 0; k < w.entries.size(); ++k) {
        EntryOut& o = w.outs[k];
        EntryIn& in = w.entries[k];
        if (o.err != 0) {
          if (o.err != ENOENT) listing->retry.push_back(in.name);
          // An entry that is there but cannot be stat'ed (no search
          // permission, EIO): the directory's contents are not known in full.
          if (unreadable_errno(o.err)) node.error = o.err;
          changed = true;
          continue;
        }
        if (o.is_dir) {
          if (o.other_dev) {
            changed = true;
            continue;
          }
          listing->dirs.push_back(in.name);
          DirNode d;
          d.name = std::move(in.name);
          d.mtime = o.a.mtime;
          d.mode = o.a.mode;
          d.uid = o.a.uid;
          d.gid = o.a.gid;
          if (o.reused) d.reused = std::move(in.record);
          dirs.push_back(std::move(d));
          dir_inos.push_back(o.a.ino);
          continue;
        }
        FileEntry f = make_file(std::move(in.name), o);
        if (w.prior && !wants_content(f.name)) rechecked = true;
        if (w.prior && !changed) {
          // A file stat'ed again changes the listing when it changed, or
          // settled since (it need not be stat'ed again next time).
          changed =
              in.prev == nullptr || !same_entry(*in.prev, f) || in.prev_ctime != o.a.ctime ||
              (o.a.ctime <= listing->settled_before) != (in.prev_ctime <= w.prior->settled_before);
        }
        files.push_back(std::move(f));
        ctimes.push_back(o.a.ctime);
        checked.push_back(options_.now);
      }
      // What the slots produced for this directory is no longer needed.
      std::vector<EntryOut>().swap(w.outs);
      std::vector<EntryIn>().swap(w.entries);
      if (w.prior) {
        // Merge the files kept and the files stat'ed again into name order.
        std::vector<std::size_t> order(files.size());
        for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return files[a].name < files[b].name; });
        std::vector<FileEntry> f2;
        std::vector<double> c2;
        std::vector<double> k2;
        f2.reserve(files.size());
        c2.reserve(files.size());
        k2.reserve(files.size());
        for (auto k : order) {
          f2.push_back(std::move(files[k]));
          c2.push_back(ctimes[k]);
          k2.push_back(checked[k]);
        }
        files = std::move(f2);
        ctimes = std::move(c2);
        checked = std::move(k2);
        if (listing->dirs != w.prior->dirs) changed = true;
      }
      // Reserved for every entry: a directory of directories (a job's)
      // would otherwise keep a FileEntry's room per subdirectory in the
      // listing remembered for the next walk.
      files.shrink_to_fit();
      listing->dirs.shrink_to_fit();
      node.files = std::move(files);
      node.dirs = std::move(dirs);
      // A partial listing (node.error) is never remembered: it is read again.
      if (remember_ != nullptr && node.error == 0 && node.mtime <= options_.now - kRacySeconds) {
        if (w.prior && !changed && !rechecked) {
          (*remember_)[w.p.rel] = w.prior;
        } else {
          listing->ctimes = std::move(ctimes);
          listing->checked = std::move(checked);
          if (adopt_later_) {
            to_adopt_.emplace_back(w.p.rel, listing);
          } else {
            listing->files = node.files;
          }
          (*remember_)[w.p.rel] = std::move(listing);
        }
      }
      for (std::size_t k = 0; k < node.dirs.size(); ++k) {
        DirNode& child = node.dirs[k];
        if (child.reused) continue;
        if (w.p.depth >= options_.max_depth) {
          child.too_deep = true;  // seen, not opened: its contents are unknown
          continue;
        }
        stack.push_back(Pending{&child, join(w.p.rel, child.name), child.name, w.fd, nullptr,
                                dir_inos[k], w.p.depth + 1});
      }
    }
  }
  if (!gone.empty()) {
    // Post-order: children first, then drop the vanished ones from their parent.
    std::function<void(DirNode&)> prune = [&](DirNode& d) {
      for (auto& c2 : d.dirs) prune(c2);
      std::erase_if(d.dirs, [&](const DirNode& x) { return gone.count(&x) != 0; });
    };
    prune(*root);  // the root of this walk is never in `gone`: build() opened it
  }
  return true;
}

void TreeWalker::adopt_listing_files(const std::string& rel, DirNode& tree) {
  for (auto& [path, listing] : to_adopt_) {
    std::string in_tree;
    if (path == rel) {
      in_tree = "";
    } else if (rel.empty()) {
      in_tree = path;
    } else if (path.size() > rel.size() && path.compare(0, rel.size(), rel) == 0 &&
               path[rel.size()] == '/') {
      in_tree = path.substr(rel.size() + 1);
    } else {
      if (remember_ != nullptr) remember_->erase(path);  // another build's: its tree is gone
      continue;
    }
    auto* node = const_cast<DirNode*>(find_node(tree, in_tree));
    if (node != nullptr && node->files.size() == listing->ctimes.size()) {
      listing->files = std::move(node->files);
      node->files.clear();
    } else if (remember_ != nullptr) {
      remember_->erase(path);  // not found as built: not remembered
    }
  }
  to_adopt_.clear();
}

bool TreeWalker::list_dirs(const std::string& rel, std::vector<std::pair<std::string, double>>& out,
                           std::string* error, std::vector<std::pair<std::string, int>>* failed) {
  struct Listed {
    int err = 0;
    std::vector<std::pair<std::string, unsigned char>> names;
    FdRef fd;
  };
  const std::string shown = rel.empty() ? "." : rel;
  auto l = std::make_shared<Listed>();
  std::vector<std::function<void()>> tasks{[env = env_, l, rel] {
    const int fd = env->open_rel(rel);
    if (fd < 0) {
      l->err = errno;
      return;
    }
    l->fd = std::make_shared<const Fd>(fd);
    l->names = env->list(fd, rel);
  }};
  // The calls ran on a slot: errno is handed back for the caller to judge.
  if (!run_all(tasks)) {
    if (error != nullptr) *error = shown + ": the walk stalled (no call returned in time)";
    errno = ETIMEDOUT;
    return false;
  }
  if (!l->fd) {
    if (unreadable_errno(l->err)) ++stats_.permission_errors;
    if (error != nullptr) *error = shown + ": " + errno_text(l->err);
    errno = l->err;
    return false;
  }
  ++stats_.dirs_listed;
  if (listed_ != nullptr) listed_->push_back(rel);
  // d_type lets us skip the stat of plain files where the file system tells.
  auto names = std::make_shared<std::vector<std::pair<std::string, unsigned char>>>();
  for (auto& [name, type] : l->names) {
    if (type == DT_DIR || type == DT_UNKNOWN) names->emplace_back(std::move(name), type);
  }
  auto attrs = std::make_shared<std::vector<std::pair<int, Attr>>>(names->size());
  const int c = options_.slots != nullptr ? options_.slots->size() : 1;
  const std::size_t chunk =
      std::clamp<std::size_t>(names->size() / (4 * static_cast<std::size_t>(c)), 1, 256);
  tasks.clear();
  for (std::size_t s = 0; s < names->size(); s += chunk) {
    const std::size_t e = std::min(names->size(), s + chunk);
    tasks.push_back([env = env_, l, names, attrs, rel, s, e] {
      for (std::size_t j = s; j < e; ++j) {
        const auto& [name, type] = (*names)[j];
        auto& [err, a] = (*attrs)[j];
        if (env->stat_at(l->fd->fd, name.c_str(), type, join(rel, name), a) != 0) err = errno;
      }
    });
  }
  if (!run_all(tasks)) {
    if (error != nullptr) *error = shown + ": the walk stalled (no call returned in time)";
    return false;
  }
  for (std::size_t j = 0; j < names->size(); ++j) {
    const auto& [err, a] = (*attrs)[j];
    ++stats_.stat_calls;
    if (err != 0) {
      record_error(stats_, err);
      // There but not stat'able (EIO, ESTALE...): perhaps a directory whose
      // contents are unknown now, not gone.
      if (failed != nullptr && unreadable_errno(err)) failed->emplace_back((*names)[j].first, err);
      continue;
    }
    if (!S_ISDIR(a.mode)) continue;
    if (a.dev != env_->root_dev) continue;  // another file system: not walked
    out.emplace_back((*names)[j].first, a.mtime);
  }
  return true;
}

std::vector<std::pair<std::string, double>> subtree_dirs(const DirNode& node,
                                                         const std::string& rel) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& c : node.dirs) {
    const std::string sub_rel = join(rel, c.name);
    out.emplace_back(sub_rel, c.mtime);
    auto sub = subtree_dirs(c, sub_rel);
    out.insert(out.end(), std::make_move_iterator(sub.begin()), std::make_move_iterator(sub.end()));
  }
  return out;
}

const DirNode* find_node(const DirNode& root, const std::string& rel) {
  const DirNode* cur = &root;
  if (rel.empty()) return cur;
  for (auto part : split(rel, '/')) {
    if (part.empty()) continue;
    cur = cur->dir(part);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

}  // namespace ckptmon
