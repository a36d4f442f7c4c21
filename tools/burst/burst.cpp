#include "tools/burst/burst.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "collectors/formats/dcp_metadata.hpp"
#include "events/event.hpp"
#include "events/writer.hpp"
#include "tools/burst/burst_fs.hpp"
#include "tools/burst/burst_manifest.hpp"
#include "util/digest.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace ckptmon::burst {

namespace fs = std::filesystem;

std::optional<Layout> layout_from_name(std::string_view name) {
  if (name == "dcp") return Layout::kDcp;
  if (name == "deepspeed") return Layout::kDeepSpeed;
  if (name == "megatron") return Layout::kMegatron;
  if (name == "hf") return Layout::kHf;
  if (name == "orbax") return Layout::kOrbax;
  return std::nullopt;
}

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::kDcp:
      return "dcp";
    case Layout::kDeepSpeed:
      return "deepspeed";
    case Layout::kMegatron:
      return "megatron";
    case Layout::kHf:
      return "hf";
    case Layout::kOrbax:
      return "orbax";
  }
  return "dcp";
}

std::string_view outcome_name(CkptOutcome o) {
  switch (o) {
    case CkptOutcome::kCommitted:
      return "committed";
    case CkptOutcome::kPartial:
      return "partial";
    case CkptOutcome::kInProgress:
      return "in_progress";
  }
  return "in_progress";
}

// ---- pacers ------------------------------------------------------------------

double RealPacer::mono() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool RealPacer::sleep(double seconds) {
  if (stop_) return false;
  if (seconds <= 0) return true;
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stop_.load(); });
  return !stop_;
}

void RealPacer::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

double FakePacer::mono() {
  std::lock_guard lock(mu_);
  return now_;
}

bool FakePacer::sleep(double seconds) {
  if (stop_) return false;
  if (seconds > 0) {
    std::lock_guard lock(mu_);
    now_ += seconds;
    slept_ += seconds;
  }
  return !stop_;
}

double FakePacer::slept() const {
  std::lock_guard lock(mu_);
  return slept_;
}

std::optional<double> fill_level(const std::string& path, std::string* error) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) {
    if (error) *error = path + ": statvfs: " + errno_text(errno);
    return std::nullopt;
  }
  const double used = static_cast<double>(st.f_blocks - st.f_bfree);
  const double avail = static_cast<double>(st.f_bavail);
  if (used + avail <= 0) return 0.0;
  return used / (used + avail);
}

namespace {

// ---- the manifest of created paths -------------------------------------------
//
// One line per created path, relative to the manifest's directory, each
// ending in its keyed digest (tools/burst/burst_manifest.hpp):
//   f <dev> <ino> <ctime> <path>   a regular file, listed after its last write
//                                  (a later line for the same path wins)
//   d <dev> <ino> <ctime> <path>   a directory (ctime not compared: it changes
//                                  with every entry, and rmdir only removes empty ones)
//   e <dev> <ino> <ctime> <abs>    the event log, created outside the directory:
//                                  for the record only, cleanup never deletes it
//   m <from> <to>          a rename of something listed (paths below `from` move too)
//   x <path>               the burst deleted it itself (retention in the demo)
// "dev ino sec.nsec": what cleanup compares before it unlinks. A file that
// was replaced since (same name, even the same recycled inode) has a newer ctime.
std::string identity(const struct stat& st) {
  char ns[16];
  static_cast<void>(std::snprintf(ns, sizeof ns, "%09ld", static_cast<long>(st.st_ctim.tv_nsec)));
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_ctim.tv_sec) + "." + ns;
}

// Reads all of `fd` from offset 0.
bool read_all(int fd, std::string* out) {
  out->clear();
  char buf[65536];
  off_t off = 0;
  while (true) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<std::size_t>(n));
    off += n;
  }
}

// The manifest of one directory (the target, the drain directory), and that
// directory's descriptor, beneath which every write of the burst resolves.
// Thread-safe.
class Manifest {
 public:
  bool open(const std::string& dir, const ManifestKey& key, std::string* error) {
    dir_ = dir;
    key_ = key;
    // The directory the operator named, pinned: a path swapped later does not move it.
    root_ = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_.ok()) {
      *error = dir + ": cannot open: " + errno_text(errno);
      return false;
    }
    const std::string p = dir + "/" + std::string(kManifestName);
    fd_ = Fd(::openat(root_.get(), std::string(kManifestName).c_str(),
                      O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
    if (!fd_.ok()) {
      *error = p + ": cannot create: " + errno_text(errno);
      return false;
    }
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      *error = p + ": not a regular file of yours; burst adds to no manifest it did not write";
      return false;
    }
    // An earlier burst's lines must be ours (else --cleanup would trust none
    // of this run's either); a last line cut short by a crash goes.
    ::flock(fd_.get(), LOCK_EX);
    std::string text;
    const bool read = read_all(fd_.get(), &text);
    const ManifestCheck check = verify_manifest(key_, text);
    if (read && check.trusted && check.torn_tail) {
      static_cast<void>(::ftruncate(fd_.get(), static_cast<off_t>(check.complete_bytes)));
    }
    ::flock(fd_.get(), LOCK_UN);
    if (!read) {
      *error = p + ": cannot read: " + errno_text(errno);
      return false;
    }
    if (!check.trusted) {
      *error = p + ": not written by your burst (" + check.why +
               "); burst adds to no manifest it did not write: remove it, or choose another "
               "directory";
      return false;
    }
    return true;
  }
  const std::string& dir() const { return dir_; }
  int root() const { return root_.get(); }

  void created(char kind, const struct stat& st, const std::string& rel) {
    line(std::string(1, kind) + " " + identity(st) + " " + rel);
    std::lock_guard lock(mu_);
    if (kind == 'd') dirs_.insert(rel);
  }
  void renamed(const std::string& from, const std::string& to) {
    line("m " + from + " " + to);
    std::lock_guard lock(mu_);
    if (dirs_.erase(from) > 0) dirs_.insert(to);
  }
  void deleted(const std::string& rel) { line("x " + rel); }
  // A file outside the directory (the event log), by absolute path.
  void external(const struct stat& st, const std::string& abs_path) {
    line("e " + identity(st) + " " + abs_path);
  }
  bool has_dir(const std::string& rel) const {
    std::lock_guard lock(mu_);
    return dirs_.contains(rel);
  }

 private:
  void line(const std::string& content) {
    if (!fd_.ok()) return;
    const std::string text = sign_line(key_, content);
    std::lock_guard lock(wmu_);
    // Shared: appends of several bursts may interleave (whole lines, O_APPEND);
    // only another burst's open, which may cut a torn last line, excludes them.
    ::flock(fd_.get(), LOCK_SH);
    ssize_t n = 0;
    do {
      n = ::write(fd_.get(), text.data(), text.size());
    } while (n < 0 && errno == EINTR);
    ::flock(fd_.get(), LOCK_UN);
  }
  std::string dir_;
  ManifestKey key_;
  Fd root_;
  Fd fd_;
  std::mutex wmu_;
  mutable std::mutex mu_;
  std::set<std::string> dirs_;
};

void record(Manifest& m, int fd, const std::string& rel) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) m.created('f', st, rel);
}

// ---- files -------------------------------------------------------------------

constexpr std::size_t kChunk = 1 << 20;

// What happened to one file write.
enum class WriteEnd { kDone, kKilled, kStopped, kError };

struct Counters {
  std::uint64_t creates = 0, renames = 0, fsyncs = 0;
};

// Creates directories below manifest.dir() for `rel` ("job0/step-100/sub"),
// each one that is missing, through the descriptor of its parent; a
// directory that exists and was not created by this burst is an error (burst
// never writes into what it did not create), and so is one of burst's that
// became a symlink since.
bool make_dirs(Manifest& m, const std::string& rel, Counters& c, std::string* error) {
  if (rel.empty()) return true;
  std::vector<std::string> parts;
  if (!split_relative(rel, &parts)) {
    *error = m.dir() + "/" + rel + ": " + beneath_error(EINVAL);
    return false;
  }
  std::string parent;
  for (const auto& part : parts) {
    std::string cur = parent;
    if (!cur.empty()) cur += '/';
    cur += part;
    if (!m.has_dir(cur)) {
      Fd pfd(open_dir_beneath(m.root(), parent));
      if (!pfd.ok()) {
        *error = m.dir() + "/" + parent + ": cannot open: " + beneath_error(errno);
        return false;
      }
      const std::string abs = m.dir() + "/" + cur;
      if (::mkdirat(pfd.get(), part.c_str(), 0755) != 0) {
        if (errno == EEXIST) {
          *error = abs +
                   ": exists and was not created by this burst; burst never writes into "
                   "what it did not create (run --cleanup, or choose an empty --target)";
        } else {
          *error = abs + ": cannot create directory: " + errno_text(errno);
        }
        return false;
      }
      ++c.creates;
      struct stat st {};
      if (::fstatat(pfd.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        m.created('d', st, cur);
      }
    }
    parent = cur;
  }
  return true;
}

bool fsync_dir(int root, const std::string& rel) {
  Fd fd(open_dir_beneath(root, rel));
  return fd.ok() && ::fsync(fd.get()) == 0;
}

// A pseudo-random 1 MiB block per writer (xorshift), so the data does not
// compress or deduplicate to nothing.
std::vector<char> data_block(std::uint64_t seed) {
  std::vector<char> buf(kChunk);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i + 8 <= buf.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(buf.data() + i, &x, 8);
  }
  return buf;
}

}  // namespace

// ---- the engine --------------------------------------------------------------

struct FileSpec {
  std::string rel;  // inside the checkpoint's write directory
  std::uint64_t size = 0;
};

struct JobRound {
  std::string job;
  int index = 0;
  std::int64_t step = 0;
  std::string dir;        // final checkpoint directory, relative to the target
  std::string write_dir;  // where the shards go (Orbax: the temporary name)
  std::vector<std::vector<FileSpec>> per_rank;
  int remaining = 0;  // ranks still writing (under Impl::mu)
  bool failed = false;
  int failed_rank = -1;
  bool stopped = false;
  double start_mono = 0;
  double start_ts = 0;
  double first_shard_start = -1, first_shard_end = -1, last_shard_end = -1;
  Counters counters;
};

struct DrainItem {
  std::string job;
  std::int64_t step = 0;
  std::string dir;                   // relative to the target (and to the drain directory)
  std::vector<std::string> data;     // files relative to the target, markers excluded
  std::vector<std::string> markers;  // in commit order
  std::string tracker_rel;           // job-level tracker ("" = none)
  std::string tracker_text;
  std::uint64_t bytes = 0;
};

struct Burst::Impl {
  Burst& b;
  const Options& o;
  Manifest manifest;
  Manifest drain_manifest;
  std::string tier;
  std::string drain_tier;
  std::mutex mu;  // rounds, results, first error
  std::string error;
  std::atomic<bool> abort{false};
  std::atomic<bool> fill_stop{false};
  std::atomic<double> fill_seen{0};
  std::atomic<std::uint64_t> shards_done{0};
  std::atomic<std::uint64_t> bytes_done{0};
  std::uint64_t shards_planned = 0;
  Result* result = nullptr;
  std::map<std::string, std::deque<std::string>> kept;  // job -> committed dirs, oldest first
  std::map<std::string, int> commits;                   // job -> committed saves
  std::map<std::string, int> restored_at;          // job -> commits at its last periodic restore
  std::map<std::string, std::uint64_t> dir_bytes;  // committed dir -> bytes
  std::map<std::string, std::uint64_t> dir_files;
  // Drain queue.
  std::mutex dmu;
  std::condition_variable dcv;
  std::deque<DrainItem> dqueue;
  bool dclosed = false;
  std::thread drain_thread;
  std::set<std::string> drained;  // committed dirs copied whole (under mu)
  std::mutex emu;                 // event log
  Fd events_fd;                   // the event log, open for the whole run
  std::string events_rel;         // its path in the target when it is inside ("" = outside)
  bool events_created = false;

  Impl(Burst& burst) : b(burst), o(burst.opts_) {}

  std::string abs(const std::string& rel) const { return o.target + "/" + rel; }

  void list_events(const struct stat& st) {
    if (events_rel.empty()) {
      manifest.external(st, o.events);
    } else {
      manifest.created('f', st, events_rel);
    }
  }

  void fail(const std::string& what) {
    std::lock_guard lock(mu);
    if (error.empty()) error = what;
    abort = true;
  }

  void emit(Event e) {
    if (o.events.empty()) return;
    if (e.ts == 0) e.ts = b.clock_.now();
    // Every event names its tier: a log may hold events of several.
    if (e.tier.empty() && e.from_tier.empty()) e.tier = tier;
    const std::string line = format_event_line(e);
    std::lock_guard lock(emu);
    if (!events_fd.ok()) return;
    ssize_t n = -1;
    do {
      n = ::write(events_fd.get(), line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(line.size())) {
      log::warn("burst: cannot write event",
                {{"path", o.events}, {"err", n < 0 ? errno_text(errno) : "short write"}});
    }
  }
  Event event(EventType t, const std::string& job, std::int64_t step) {
    Event e;
    e.type = t;
    e.job = job;
    e.step = step;
    return e;
  }

  // True while the fill level is below --fill-to; checks the file system.
  bool below_fill() {
    if (!o.fill_to) return true;
    if (fill_stop) return false;
    auto level = fill_level(o.target);
    if (!level) return true;
    fill_seen = *level;
    if (*level >= *o.fill_to) {
      fill_stop = true;
      return false;
    }
    return true;
  }

  bool should_stop() { return abort || fill_stop || b.pacer_.stopped(); }

  // Writes one file of `size` bytes; `kill_at` > 0 stops after that many
  // bytes as if the writer died (no fsync, no close-time flush matters).
  WriteEnd write_file(const std::string& rel, std::uint64_t size, const std::vector<char>& block,
                      std::uint64_t kill_at, Counters& c, std::string* checksum) {
    const std::string path = abs(rel);
    int fd = open_file_beneath(manifest.root(), rel, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
      fail(path + ": cannot create: " + beneath_error(errno));
      return WriteEnd::kError;
    }
    ++c.creates;
    // Listed at once (a burst killed mid-write leaves nothing unlisted) and
    // again after its last write, which cleanup then compares.
    record(manifest, fd, rel);
    std::unique_ptr<Digest> digest;
    // Checksums only go into events: no log, no hashing.
    if (checksum != nullptr && !o.sparse && !o.events.empty()) {
      digest = Digest::make(ChecksumAlgo::kCrc32c);
    }
    const std::uint64_t limit = kill_at > 0 ? kill_at : size;
    WriteEnd end = WriteEnd::kDone;
    if (o.sparse) {
      if (::ftruncate(fd, static_cast<off_t>(limit)) != 0) {
        fail(path + ": ftruncate: " + errno_text(errno));
        end = WriteEnd::kError;
      }
      bytes_done += limit;
    } else {
      std::uint64_t done = 0;
      while (done < limit) {
        if (should_stop() || !below_fill()) {
          end = abort ? WriteEnd::kError : WriteEnd::kStopped;
          break;
        }
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, limit - done));
        ssize_t w = ::write(fd, block.data(), n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          const int err = errno;
          std::string msg = path + ": write: " + errno_text(err);
          if (err == ENOSPC && o.fill_to) {
            char pct[32];
            static_cast<void>(std::snprintf(pct, sizeof pct, "%.1f%%", fill_seen.load() * 100));
            msg +=
                " before the --fill-to threshold was reached (last seen " + std::string(pct) + ")";
          }
          fail(msg);
          end = WriteEnd::kError;
          break;
        }
        if (digest) digest->update(block.data(), static_cast<std::size_t>(w));
        done += static_cast<std::uint64_t>(w);
        bytes_done += static_cast<std::uint64_t>(w);
      }
    }
    if (kill_at > 0 && end == WriteEnd::kDone) end = WriteEnd::kKilled;
    if (end == WriteEnd::kDone && o.fsync) {
      if (::fsync(fd) != 0) {
        fail(path + ": fsync: " + errno_text(errno));
        end = WriteEnd::kError;
      } else {
        ++c.fsyncs;
      }
    }
    record(manifest, fd, rel);  // after the last write: its final ctime
    if (::close(fd) != 0 && end == WriteEnd::kDone) {
      fail(path + ": close: " + errno_text(errno));
      end = WriteEnd::kError;
    }
    if (digest && end == WriteEnd::kDone) *checksum = "crc32c:" + digest->hex();
    return end;
  }

  // A small file with `text`, created (or, for trackers, rewritten in place).
  bool write_text(const std::string& rel, const std::string& text, bool rewrite, Counters& c) {
    const std::string path = abs(rel);
    int flags = O_WRONLY;
    flags |= rewrite ? O_TRUNC : (O_CREAT | O_EXCL);
    int fd = open_file_beneath(manifest.root(), rel, flags, 0644);
    if (fd < 0) {
      fail(path + ": cannot " + (rewrite ? "rewrite: " : "create: ") + beneath_error(errno));
      return false;
    }
    if (!rewrite) ++c.creates;
    bool ok = true;
    std::size_t done = 0;
    while (done < text.size()) {
      ssize_t w = ::write(fd, text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        fail(path + ": write: " + errno_text(errno));
        ok = false;
        break;
      }
      done += static_cast<std::size_t>(w);
    }
    if (ok && o.fsync) {
      if (::fsync(fd) == 0) {
        ++c.fsyncs;
      } else {
        fail(path + ": fsync: " + errno_text(errno));
        ok = false;
      }
    }
    record(manifest, fd, rel);
    ::close(fd);
    return ok;
  }

  bool rename_rel(const std::string& from, const std::string& to, Counters& c) {
    Parent pf, pt;
    if (!open_parent_beneath(manifest.root(), from, &pf) ||
        !open_parent_beneath(manifest.root(), to, &pt) ||
        ::renameat(pf.dir.get(), pf.name.c_str(), pt.dir.get(), pt.name.c_str()) != 0) {
      fail(abs(from) + ": rename to " + abs(to) + ": " + beneath_error(errno));
      return false;
    }
    ++c.renames;
    manifest.renamed(from, to);
    struct stat st {};
    // A rename changes the file's ctime: listed again under its new name.
    if (::fstatat(pt.dir.get(), pt.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
      manifest.created('f', st, to);
    }
    return true;
  }

  // ---- layouts ----

  static std::string pad(std::int64_t v, int width) {
    std::string s = std::to_string(v);
    return s.size() >= static_cast<std::size_t>(width) ? s : std::string(width - s.size(), '0') + s;
  }

  // DCP's `.metadata` for this run's ranks and shards (the same for every
  // save), pickled as torch writes it: the daemon reads its components.
  const std::string& dcp_metadata() {
    if (dcp_metadata_.empty()) {
      dcp_metadata_ = dcp::synthetic_metadata(static_cast<std::size_t>(o.ranks), o.shard_size);
    }
    return dcp_metadata_;
  }
  std::string dcp_metadata_;

  JobRound plan(const std::string& job, int index) {
    JobRound r;
    r.job = job;
    r.index = index;
    r.step = index * o.step_stride;
    const auto n_ranks = static_cast<std::size_t>(o.ranks);
    r.per_rank.resize(n_ranks);
    const std::uint64_t shard_bytes = o.shard_size;
    switch (o.layout) {
      case Layout::kDcp:
        r.dir = job + "/step-" + std::to_string(r.step);
        for (std::size_t k = 0; k < n_ranks; ++k) {
          r.per_rank[k].push_back({"__" + std::to_string(k) + "_0.distcp", shard_bytes});
        }
        break;
      case Layout::kMegatron:
        r.dir = job + "/iter_" + pad(r.step, 7);
        for (std::size_t k = 0; k < n_ranks; ++k) {
          r.per_rank[k].push_back({"__" + std::to_string(k) + "_0.distcp", shard_bytes});
        }
        break;
      case Layout::kDeepSpeed:
        r.dir = job + "/global_step" + std::to_string(r.step);
        for (std::size_t k = 0; k < n_ranks; ++k) {
          r.per_rank[k].push_back(
              {"zero_pp_rank_" + std::to_string(k) + "_mp_rank_00_optim_states.pt", shard_bytes});
        }
        // Rank 0 also saves the module's states.
        r.per_rank[0].push_back(
            {"mp_rank_00_model_states.pt", std::max<std::uint64_t>(shard_bytes / 4, 1)});
        break;
      case Layout::kHf:
        r.dir = job + "/checkpoint-" + std::to_string(r.step);
        for (std::size_t k = 0; k < n_ranks; ++k) {
          r.per_rank[k].push_back({"model-" + pad(static_cast<std::int64_t>(k) + 1, 5) + "-of-" +
                                       pad(static_cast<std::int64_t>(n_ranks), 5) + ".safetensors",
                                   shard_bytes});
          r.per_rank[k].push_back(
              {"rng_state_" + std::to_string(k) + ".pth", std::uint64_t{14} * 1024});
        }
        break;
      case Layout::kOrbax:
        r.dir = job + "/" + std::to_string(r.step);
        for (std::size_t k = 0; k < n_ranks; ++k) {
          r.per_rank[k].push_back({"state/ocdbt.process_" + std::to_string(k) + "/d/" +
                                       pad(static_cast<std::int64_t>(k), 8),
                                   shard_bytes});
        }
        break;
    }
    r.write_dir = r.dir;
    if (o.layout == Layout::kOrbax) {
      r.write_dir = r.dir + ".orbax-checkpoint-tmp-" +
                    std::to_string(static_cast<std::int64_t>(b.clock_.now()));
    }
    return r;
  }

  // The coordinator's commit, the way the framework does it. Returns the
  // marker files (relative to the target, inside the checkpoint) in order and
  // the job-level tracker.
  bool commit(JobRound& r, std::vector<std::string>& markers, std::string& tracker_rel,
              std::string& tracker_text) {
    Counters& c = r.counters;
    const std::string write_dir = r.write_dir;
    const auto dcp_meta = [&](const std::string& dir) {
      const std::string tmp = dir + "/.metadata.tmp";
      if (!write_text(tmp, dcp_metadata(), false, c)) return false;
      if (!rename_rel(tmp, dir + "/.metadata", c)) return false;
      if (o.fsync && fsync_dir(manifest.root(), dir)) ++c.fsyncs;
      markers.push_back(dir + "/.metadata");
      return true;
    };
    const auto tracker = [&](const std::string& rel, const std::string& text) {
      const bool exists = created_trackers.contains(rel);
      if (!write_text(rel, text, exists, c)) return false;
      created_trackers.insert(rel);
      tracker_rel = rel;
      tracker_text = text;
      return true;
    };
    switch (o.layout) {
      case Layout::kDcp:
        return dcp_meta(write_dir);
      case Layout::kMegatron:
        if (!dcp_meta(write_dir)) return false;
        if (!write_text(write_dir + "/metadata.json",
                        "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1}\n",
                        false, c)) {
          return false;
        }
        markers.push_back(write_dir + "/metadata.json");
        return tracker(r.job + "/latest_checkpointed_iteration.txt", std::to_string(r.step));
      case Layout::kDeepSpeed:
        // Rank 0 rewrites `latest` in place (not atomic), as the engine does.
        return tracker(r.job + "/latest", "global_step" + std::to_string(r.step));
      case Layout::kHf: {
        std::string index = "{\"metadata\": {\"total_size\": " +
                            std::to_string(o.shard_size * static_cast<std::uint64_t>(o.ranks)) +
                            "}, \"weight_map\": {";
        for (int k = 0; k < o.ranks; ++k) {
          index += (k ? ", " : "") + std::string("\"layer.") + std::to_string(k) + "\": \"" +
                   r.per_rank[static_cast<std::size_t>(k)][0].rel + "\"";
        }
        index += "}}\n";
        if (!write_text(write_dir + "/model.safetensors.index.json", index, false, c)) return false;
        markers.push_back(write_dir + "/model.safetensors.index.json");
        if (!write_text(write_dir + "/trainer_state.json",
                        "{\"global_step\": " + std::to_string(r.step) + "}\n", false, c)) {
          return false;
        }
        markers.push_back(write_dir + "/trainer_state.json");
        return true;
      }
      case Layout::kOrbax: {
        if (!write_text(write_dir + "/state/_METADATA", "{\"tree_metadata\": {}}\n", false, c) ||
            !write_text(write_dir + "/state/manifest.ocdbt", std::string(512, 'O'), false, c)) {
          return false;
        }
        const auto ns = [](double t) { return std::to_string(static_cast<std::int64_t>(t * 1e9)); };
        if (!write_text(write_dir + "/_CHECKPOINT_METADATA",
                        "{\"init_timestamp_nsecs\": " + ns(r.start_ts) +
                            ", \"commit_timestamp_nsecs\": " + ns(b.clock_.now()) + "}\n",
                        false, c)) {
          return false;
        }
        if (!rename_rel(write_dir, r.dir, c)) return false;
        r.write_dir = r.dir;
        if (o.fsync && fsync_dir(manifest.root(), r.job)) ++c.fsyncs;
        markers.push_back(r.dir + "/state/_METADATA");
        markers.push_back(r.dir + "/state/manifest.ocdbt");
        markers.push_back(r.dir + "/_CHECKPOINT_METADATA");
        if (!write_text(r.dir + "/commit_success.txt", "Checkpoint commit was successful.\n", false,
                        c)) {
          return false;
        }
        markers.push_back(r.dir + "/commit_success.txt");
        return true;
      }
    }
    return false;
  }
  std::mutex cmu;                          // commits
  std::set<std::string> created_trackers;  // under cmu

  // Figures of what is inside the checkpoint directory now (files, bytes).
  void tally(const std::string& rel, std::uint64_t& files, std::uint64_t& bytes) {
    files = 0;
    bytes = 0;
    walk_beneath(manifest.root(), rel, [&](const std::string&, const struct stat& st) {
      if (!S_ISREG(st.st_mode)) return;
      ++files;
      bytes += static_cast<std::uint64_t>(st.st_size);
    });
  }

  // One rank's files of a round; the last rank to finish commits.
  void write_rank(JobRound& r, std::size_t rank, const std::vector<char>& block) {
    bool killed = false;
    bool stopped = false;
    const bool fail_here = r.job == (o.job_names.empty() ? std::string("job0") : o.job_names[0]) &&
                           std::any_of(o.fail.begin(), o.fail.end(), [&](const FailPoint& f) {
                             return f.rank == static_cast<int>(rank) && f.checkpoint == r.index;
                           });
    for (std::size_t i = 0; i < r.per_rank[rank].size() && !killed && !stopped; ++i) {
      const FileSpec& f = r.per_rank[rank][i];
      if (should_stop()) {
        stopped = true;
        break;
      }
      const std::string rel = r.write_dir + "/" + f.rel;
      const auto parent = fs::path(rel).parent_path().string();
      Counters c;
      {
        std::lock_guard lock(mu);
        if (!make_dirs(manifest, parent, r.counters, &error)) {
          abort = true;
          return;
        }
      }
      const double t0 = b.pacer_.mono();
      const double ts0 = b.clock_.now();
      std::string checksum;
      const std::uint64_t kill_at =
          fail_here && i == 0 ? std::max<std::uint64_t>(f.size / 2, 1) : 0;
      const WriteEnd end = write_file(rel, f.size, block, kill_at, c, &checksum);
      const double t1 = b.pacer_.mono();
      {
        std::lock_guard lock(mu);
        r.counters.creates += c.creates;
        r.counters.fsyncs += c.fsyncs;
        if (r.first_shard_start < 0 || t0 < r.first_shard_start) r.first_shard_start = t0;
        if (end == WriteEnd::kDone) {
          if (r.first_shard_end < 0 || t1 < r.first_shard_end) r.first_shard_end = t1;
          r.last_shard_end = std::max(r.last_shard_end, t1);
        }
      }
      if (end == WriteEnd::kKilled) {
        killed = true;
      } else if (end != WriteEnd::kDone) {
        stopped = true;
      } else {
        Event e = event(EventType::kShardWritten, r.job, r.step);
        e.tier = tier;
        e.rank = static_cast<std::int64_t>(rank);
        e.path = abs(rel);
        e.bytes = f.size;
        e.start_ts = ts0;
        if (!checksum.empty()) e.checksum = *parse_checksum(checksum);
        emit(e);
        ++shards_done;
        if (b.progress_) b.progress_(shards_done, shards_planned, bytes_done);
      }
    }
    bool last = false;
    {
      std::lock_guard lock(mu);
      if (killed) {
        r.failed = true;
        r.failed_rank = static_cast<int>(rank);
      }
      if (stopped) r.stopped = true;
      last = --r.remaining == 0;
    }
    if (last) finish(r);
  }

  // After the barrier: commit, or record the failure.
  void finish(JobRound& r) {
    CheckpointResult cr;
    cr.job = r.job;
    cr.index = r.index;
    cr.step = r.step;
    cr.start_ts = r.start_ts;
    std::vector<std::string> markers;
    std::string tracker_rel, tracker_text;
    if (r.failed) {
      cr.outcome = CkptOutcome::kPartial;
      cr.failed_rank = r.failed_rank;
      cr.reason = "writer rank " + std::to_string(r.failed_rank) +
                  " killed mid-shard (--fail-writer); never committed";
      Event e = event(EventType::kCheckpointFailed, r.job, r.step);
      e.tier = tier;
      e.rank = r.failed_rank;
      e.reason = "writer rank " + std::to_string(r.failed_rank) + " killed mid-shard";
      emit(e);
    } else if (r.stopped || abort) {
      cr.outcome = CkptOutcome::kInProgress;
      if (fill_stop) {
        char pct[32];
        static_cast<void>(std::snprintf(pct, sizeof pct, "%.1f%%", fill_seen.load() * 100));
        cr.reason = "burst stopped mid-save: file system at " + std::string(pct) + " (--fill-to)";
      } else {
        cr.reason = abort ? "burst stopped mid-save by an error" : "burst stopped mid-save";
      }
    } else {
      bool committed = false;
      {
        std::lock_guard lock(cmu);  // trackers
        committed = commit(r, markers, tracker_rel, tracker_text);
      }
      if (committed) {
        cr.outcome = CkptOutcome::kCommitted;
      } else {
        std::lock_guard lock(mu);
        cr.outcome = CkptOutcome::kInProgress;
        cr.reason = "commit failed: " + error;
      }
    }
    const double end_mono = b.pacer_.mono();
    cr.end_ts = b.clock_.now();
    cr.path = r.write_dir;
    cr.duration = end_mono - r.start_mono;
    if (r.first_shard_start >= 0 && r.last_shard_end >= 0) {
      cr.write_seconds = r.last_shard_end - r.first_shard_start;
      cr.skew_seconds = r.last_shard_end - r.first_shard_end;
    }
    cr.creates = r.counters.creates;
    cr.renames = r.counters.renames;
    cr.fsyncs = r.counters.fsyncs;
    tally(r.write_dir, cr.files, cr.bytes);
    if (o.window && cr.outcome == CkptOutcome::kCommitted) cr.window_met = cr.duration <= *o.window;
    if (cr.outcome == CkptOutcome::kCommitted) {
      Event e = event(EventType::kCheckpointCommit, r.job, r.step);
      e.tier = tier;
      e.files = cr.files;
      e.bytes = cr.bytes;
      e.ts = cr.end_ts;
      emit(e);
    }
    Event pe = event(EventType::kPauseEnd, r.job, r.step);
    pe.ts = cr.end_ts;
    emit(pe);
    if (cr.outcome == CkptOutcome::kCommitted) {
      {
        std::lock_guard lock(mu);
        kept[r.job].push_back(r.dir);
        ++commits[r.job];
        dir_bytes[r.dir] = cr.bytes;
        dir_files[r.dir] = cr.files;
      }
      if (!o.drain_to.empty()) {
        DrainItem d;
        d.job = r.job;
        d.step = r.step;
        d.dir = r.dir;
        d.markers = markers;
        d.tracker_rel = tracker_rel;
        d.tracker_text = tracker_text;
        walk_beneath(manifest.root(), r.dir, [&](const std::string& rel, const struct stat& st) {
          if (!S_ISREG(st.st_mode)) return;
          if (std::find(markers.begin(), markers.end(), rel) == markers.end())
            d.data.push_back(rel);
          d.bytes += static_cast<std::uint64_t>(st.st_size);
        });
        std::sort(d.data.begin(), d.data.end());
        b.backlog_ += d.bytes;
        {
          std::lock_guard lock(mu);
          if (b.backlog_ > result->drain_backlog_max) {
            result->drain_backlog_max = b.backlog_;
            result->drain_backlog_max_ts = cr.end_ts;
          }
        }
        {
          std::lock_guard lock(dmu);
          dqueue.push_back(std::move(d));
        }
        dcv.notify_all();
      }
    }
    if (b.on_checkpoint_) b.on_checkpoint_(cr);
    std::lock_guard lock(mu);
    result->checkpoints.push_back(std::move(cr));
  }

  // ---- drain ----

  void drain_loop() {
    const std::vector<char> unused;
    std::vector<char> buf(kChunk);
    while (true) {
      DrainItem d;
      {
        std::unique_lock lock(dmu);
        dcv.wait(lock, [&] { return !dqueue.empty() || dclosed; });
        if (dqueue.empty()) return;
        d = std::move(dqueue.front());
        dqueue.pop_front();
      }
      drain_one(d, buf);
      if (b.pacer_.stopped()) return;
    }
  }

  // Rate limiting: bytes may not run ahead of start + bytes / rate.
  double drain_t0 = -1;
  std::uint64_t drain_sent = 0;
  bool pace(std::uint64_t n) {
    if (o.drain_rate == 0) return !b.pacer_.stopped();
    if (drain_t0 < 0) drain_t0 = b.pacer_.mono();
    drain_sent += n;
    const double due =
        drain_t0 + static_cast<double>(drain_sent) / static_cast<double>(o.drain_rate);
    return b.pacer_.sleep(due - b.pacer_.mono());
  }

  void drain_one(DrainItem& d, std::vector<char>& buf) {
    const double t0 = b.pacer_.mono();
    Event s = event(EventType::kDrainStart, d.job, d.step);
    s.from_tier = tier;
    s.to_tier = drain_tier;
    emit(s);
    DrainResult res;
    res.job = d.job;
    res.path = d.dir;
    res.step = d.step;
    bool ok = true;
    std::uint64_t left = d.bytes;
    std::vector<std::string> all = d.data;
    all.insert(all.end(), d.markers.begin(), d.markers.end());
    Counters c;
    for (const std::string& rel : all) {
      {
        std::string err;
        if (!make_dirs(drain_manifest, fs::path(rel).parent_path().string(), c, &err)) {
          log::warn("burst drain: cannot create directory", {{"err", err}});
          ok = false;
          break;
        }
      }
      const std::string dst = o.drain_to + "/" + rel;
      int in = open_file_beneath(manifest.root(), rel, O_RDONLY);
      if (in < 0) {  // deleted by retention before its turn
        ok = false;
        break;
      }
      int out = open_file_beneath(drain_manifest.root(), rel, O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (out < 0) {
        log::warn("burst drain: cannot create", {{"path", dst}, {"err", beneath_error(errno)}});
        ::close(in);
        ok = false;
        break;
      }
      std::uint64_t copied = 0;
      bool file_ok = true;
      while (true) {
        ssize_t n = ::read(in, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          file_ok = n == 0;
          break;
        }
        if (!pace(static_cast<std::uint64_t>(n))) {
          file_ok = false;
          break;
        }
        ssize_t w = ::write(out, buf.data(), static_cast<std::size_t>(n));
        if (w != n) {
          file_ok = false;
          break;
        }
        copied += static_cast<std::uint64_t>(n);
        const std::uint64_t dec = std::min<std::uint64_t>(left, static_cast<std::uint64_t>(n));
        left -= dec;
        b.backlog_ -= dec;
      }
      if (file_ok && o.fsync) file_ok = ::fsync(out) == 0;
      record(drain_manifest, out, rel);
      ::close(out);
      ::close(in);
      if (!file_ok) {
        ok = false;
        break;
      }
      Event e = event(EventType::kShardDrained, d.job, d.step);
      e.from_tier = tier;
      e.to_tier = drain_tier;
      e.bytes = copied;
      e.path = dst;
      emit(e);
      res.files += 1;
      res.bytes += copied;
    }
    if (ok && !d.tracker_rel.empty()) {
      // The tracker last, on the drain side too.
      const bool exists = drained_trackers.contains(d.tracker_rel);
      int fd = open_file_beneath(drain_manifest.root(), d.tracker_rel,
                                 O_WRONLY | (exists ? O_TRUNC : (O_CREAT | O_EXCL)), 0644);
      if (fd < 0) {
        ok = false;
      } else {
        drained_trackers.insert(d.tracker_rel);
        ok = ::write(fd, d.tracker_text.data(), d.tracker_text.size()) ==
             static_cast<ssize_t>(d.tracker_text.size());
        record(drain_manifest, fd, d.tracker_rel);
        ::close(fd);
      }
    }
    b.backlog_ -= left;  // what was not copied is no longer pending here
    res.ok = ok;
    res.seconds = b.pacer_.mono() - t0;
    Event e = event(EventType::kDrainDone, d.job, d.step);
    e.ok = ok;
    e.bytes = res.bytes;
    e.files = res.files;
    emit(e);
    std::lock_guard lock(mu);
    result->drains.push_back(res);
    if (ok) drained.insert(d.dir);
  }
  std::set<std::string> drained_trackers;  // drain thread only

  // ---- restore ----

  // What one reader reads: a file whole, or a byte range of it.
  struct ReadSpan {
    std::string file;  // relative to the target
    std::uint64_t offset = 0, length = 0;
    bool whole = false;
  };

  // Each of `n` readers' spans. DCP (and Megatron torch_dist) shards with a
  // reader count other than the writers': the ranges DCP's reader plans for
  // `n` ranks from the .metadata this burst wrote, the other files to reader
  // 0 (the coordinator reads .metadata); otherwise whole files, dealt
  // round-robin. `resharded` says which.
  std::vector<std::vector<ReadSpan>> read_plan(const std::string& dir,
                                               const std::vector<std::string>& files, std::size_t n,
                                               bool& resharded) {
    std::vector<std::vector<ReadSpan>> plan(n);
    const bool dcp_files = o.layout == Layout::kDcp || o.layout == Layout::kMegatron;
    resharded = false;
    if (dcp_files && n != static_cast<std::size_t>(o.ranks)) {
      const dcp::ReadResult meta = dcp::read_metadata(dcp_metadata());
      if (meta.metadata) {
        resharded = true;
        const auto ranges = dcp::plan_reads(*meta.metadata, n);
        for (std::size_t k = 0; k < n; ++k) {
          for (const dcp::ReadRange& r : ranges[k]) {
            plan[k].push_back({dir + "/" + r.file, r.offset, r.length, false});
          }
        }
        for (const std::string& f : files) {
          if (!f.ends_with(".distcp")) plan[0].push_back({f, 0, 0, true});
        }
        return plan;
      }
    }
    for (std::size_t i = 0; i < files.size(); ++i) plan[i % n].push_back({files[i], 0, 0, true});
    return plan;
  }

  void restore(const std::string& job) {
    std::string dir;
    {
      std::lock_guard lock(mu);
      auto it = kept.find(job);
      if (it == kept.end() || it->second.empty()) return;
      dir = it->second.back();
    }
    RestoreResult rr;
    rr.job = job;
    rr.path = dir;
    const double t0 = b.pacer_.mono();
    const double ts0 = b.clock_.now();
    std::int64_t step = 0;
    for (const auto& cr : result->checkpoints) {
      if (cr.job == job && cr.path == dir) step = cr.step;
    }
    rr.step = step;
    Event s = event(EventType::kRestoreStart, job, step);
    s.tier = tier;
    s.ts = ts0;
    emit(s);
    // Locate: list the checkpoint's files.
    std::vector<std::string> files;
    const bool listed =
        walk_beneath(manifest.root(), dir, [&](const std::string& rel, const struct stat& st) {
          if (S_ISREG(st.st_mode)) files.push_back(rel);
        });
    std::sort(files.begin(), files.end());
    const double t1 = b.pacer_.mono();
    Event located = event(EventType::kRestoreLocateDone, job, step);
    located.tier = tier;
    emit(located);
    const auto n_ranks =
        static_cast<std::size_t>(std::max(1, o.restore_ranks > 0 ? o.restore_ranks : o.ranks));
    const std::vector<std::vector<ReadSpan>> plan = read_plan(dir, files, n_ranks, rr.resharded);
    // Read: one thread per rank, each its own spans.
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<bool> ok{listed};
    std::vector<std::thread> readers;
    // Per reader: its bytes and when it finished (steady clock; the events
    // are dated from the burst's clock after the join, offset by these).
    std::vector<std::uint64_t> read_bytes(n_ranks, 0);
    std::vector<std::chrono::steady_clock::time_point> read_end(n_ranks);
    for (std::size_t k = 0; k < n_ranks; ++k) {
      readers.emplace_back([&, k] {
        std::vector<char> buf(kChunk);
        std::uint64_t mine = 0;
        for (const ReadSpan& span : plan[k]) {
          int fd = open_file_beneath(manifest.root(), span.file, O_RDONLY);
          if (fd < 0) {
            ok = false;
            continue;
          }
          std::uint64_t at = span.offset;
          const std::uint64_t end = span.whole ? UINT64_MAX : span.offset + span.length;
          while (at < end) {
            const std::size_t want =
                static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), end - at));
            ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 || (n == 0 && !span.whole)) ok = false;  // short: the plan said more
            if (n <= 0) break;
            at += static_cast<std::uint64_t>(n);
            mine += static_cast<std::uint64_t>(n);
          }
          ::close(fd);
        }
        bytes += mine;
        read_bytes[k] = mine;
        read_end[k] = std::chrono::steady_clock::now();
      });
    }
    for (auto& t : readers) t.join();
    {
      const double now = b.clock_.now();
      const auto joined = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < n_ranks; ++k) {
        Event e = event(EventType::kRestoreReadDone, job, step);
        e.tier = tier;
        e.rank = static_cast<std::int64_t>(k);
        e.bytes = read_bytes[k];
        e.ts = now - std::chrono::duration<double>(joined - read_end[k]).count();
        emit(e);
      }
    }
    if (rr.resharded) {
      Event e = event(EventType::kRestoreReshardDone, job, step);
      e.tier = tier;
      emit(e);
    }
    const double t2 = b.pacer_.mono();
    rr.ranks = static_cast<int>(n_ranks);
    rr.files = files.size();
    rr.bytes = bytes;
    rr.locate_seconds = t1 - t0;
    rr.read_seconds = t2 - t1;
    rr.total_seconds = t2 - t0;
    rr.ok = ok;
    Event e = event(EventType::kRestoreDone, job, step);
    e.tier = tier;
    e.bytes = rr.bytes;
    e.ok = rr.ok;
    emit(e);
    std::lock_guard lock(mu);
    result->restores.push_back(rr);
  }

  // The demo's retention: delete the burst's own oldest committed saves.
  void retain(const std::string& job) {
    if (o.keep_last <= 0) return;
    while (true) {
      std::string victim;
      std::uint64_t bytes = 0;
      {
        std::lock_guard lock(mu);
        auto& q = kept[job];
        if (q.size() <= static_cast<std::size_t>(o.keep_last)) return;
        // Only what reached the drain target may go, as a real retention
        // policy behind an async drain does: a slow drain grows the backlog.
        auto it = std::find_if(q.begin(), q.end(), [&](const std::string& d) {
          return o.drain_to.empty() || drained.contains(d);
        });
        if (it == q.end() ||
            std::distance(q.begin(), it) >= static_cast<std::ptrdiff_t>(q.size()) - o.keep_last) {
          return;
        }
        victim = *it;
        q.erase(it);
        bytes = dir_bytes[victim];
      }
      if (!remove_tree_beneath(manifest.root(), victim)) {
        log::warn("burst: cannot remove an old checkpoint",
                  {{"path", abs(victim)}, {"err", beneath_error(errno)}});
      }
      manifest.deleted(victim);
      Event e;
      e.type = EventType::kCleanup;
      e.job = job;
      e.path = abs(victim);
      e.bytes = bytes;
      e.tier = tier;
      emit(e);
    }
  }
};

Burst::Burst(Options opts, const Clock& clock, Pacer& pacer)
    : opts_(std::move(opts)), clock_(clock), pacer_(pacer) {}

Burst::~Burst() { delete impl_; }

bool Burst::run(Result& result) {
  delete impl_;
  impl_ = new Impl(*this);
  Impl& im = *impl_;
  im.result = &result;
  const Options& o = opts_;
  std::string err;
  ManifestKey key;
  const std::string key_file = !o.key_file.empty() ? o.key_file : default_key_file(&err);
  if (key_file.empty() || !load_key(key_file, true, &key, &err)) {
    result.error = err;
    return false;
  }
  if (!im.manifest.open(o.target, key, &err)) {
    result.error = err;
    return false;
  }
  im.tier = !o.tier.empty() ? o.tier : fs::path(o.target).filename().string();
  if (!o.events.empty()) {
    // An event log burst creates is its own: --cleanup removes it when it is
    // in the target (opened beneath it, as every write there), and names it
    // when it is outside.
    const std::string prefix = o.target + "/";
    if (o.events.starts_with(prefix)) im.events_rel = o.events.substr(prefix.size());
    const auto open_log = [&](int flags) {
      return im.events_rel.empty()
                 ? ::open(o.events.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644)
                 : open_file_beneath(im.manifest.root(), im.events_rel, flags | O_NONBLOCK, 0644);
    };
    int fd = open_log(O_WRONLY | O_APPEND | O_CREAT | O_EXCL);
    im.events_created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = open_log(O_WRONLY | O_APPEND);
    if (fd < 0) {
      result.error = o.events + ": cannot open: " + beneath_error(errno);
      return false;
    }
    im.events_fd = Fd(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      result.error = o.events + ": not a regular file";
      return false;
    }
    if (im.events_created) im.list_events(st);
  }
  if (!o.drain_to.empty()) {
    if (!im.drain_manifest.open(o.drain_to, key, &err)) {
      result.error = err;
      return false;
    }
    im.drain_tier = !o.drain_tier.empty() ? o.drain_tier : fs::path(o.drain_to).filename().string();
    im.drain_thread = std::thread([&im] { im.drain_loop(); });
  }
  std::vector<std::string> jobs = o.job_names;
  for (int j = static_cast<int>(jobs.size()); j < o.jobs; ++j)
    jobs.push_back("job" + std::to_string(j));
  if (o.checkpoints > 0 && !jobs.empty()) {
    std::uint64_t per_round = 0;
    for (const auto& files : im.plan(jobs[0], 1).per_rank) per_round += files.size();
    im.shards_planned = static_cast<std::uint64_t>(o.checkpoints) * jobs.size() * per_round;
  }
  const double run_start = pacer_.mono();
  const std::size_t total_writers = o.writers > 0 ? static_cast<std::size_t>(o.writers)
                                                  : jobs.size() * static_cast<std::size_t>(o.ranks);
  std::vector<std::vector<char>> blocks;
  if (!o.sparse) {
    for (std::size_t w = 0; w < std::max<std::size_t>(total_writers, 1); ++w)
      blocks.push_back(data_block(w + 1));
  }
  const std::vector<char> empty;
  for (int index = 1; o.checkpoints == 0 || index <= o.checkpoints; ++index) {
    if (im.should_stop() || !im.below_fill()) break;
    const double round_start = pacer_.mono();
    std::deque<JobRound> rounds;  // stable addresses
    for (const auto& job : jobs) {
      JobRound r = im.plan(job, index);
      r.remaining = o.ranks;
      r.start_mono = pacer_.mono();
      r.start_ts = clock_.now();
      {
        std::lock_guard lock(im.mu);
        if (!make_dirs(im.manifest, r.write_dir, r.counters, &im.error)) {
          im.abort = true;
          break;
        }
      }
      Event s = im.event(EventType::kCheckpointStart, job, r.step);
      s.tier = im.tier;
      s.ts = r.start_ts;
      im.emit(s);
      Event p = im.event(EventType::kPauseStart, job, r.step);
      p.ts = r.start_ts;
      im.emit(p);
      rounds.push_back(std::move(r));
    }
    if (im.abort) break;
    // Every (job, rank) of this round, taken by the writer threads in order.
    std::vector<std::pair<JobRound*, std::size_t>> tasks;
    for (std::size_t k = 0; k < static_cast<std::size_t>(o.ranks); ++k) {
      for (auto& r : rounds) tasks.emplace_back(&r, k);
    }
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    const std::size_t n = std::min(total_writers, tasks.size());
    for (std::size_t w = 0; w < n; ++w) {
      threads.emplace_back([&, w] {
        const std::vector<char>& block = o.sparse ? empty : blocks[w];
        for (std::size_t t = next++; t < tasks.size(); t = next++) {
          im.write_rank(*tasks[t].first, tasks[t].second, block);
        }
      });
    }
    for (auto& t : threads) t.join();
    if (im.abort || im.fill_stop) break;
    for (const auto& job : jobs) {
      int done = 0;
      {
        std::lock_guard lock(im.mu);
        done = im.commits[job];
      }
      if (o.restore_every > 0 && done > 0 && done % o.restore_every == 0 &&
          im.restored_at[job] != done) {
        im.restored_at[job] = done;  // once per count, also when a failed save follows
        im.restore(job);
      }
      im.retain(job);
    }
    if (o.checkpoints != 0 && index == o.checkpoints) break;
    if (!pacer_.sleep(round_start + o.interval - pacer_.mono())) break;
  }
  result.seconds = pacer_.mono() - run_start;  // the writes, without the drain's tail
  result.fill_reached = im.fill_stop;
  if (o.fill_to) result.fill_level = fill_level(o.target).value_or(im.fill_seen.load());
  if (on_writes_done_ && !im.abort && !pacer_.stopped()) on_writes_done_(result);
  if (im.drain_thread.joinable()) {
    {
      std::lock_guard lock(im.dmu);
      im.dclosed = true;
    }
    im.dcv.notify_all();
    im.drain_thread.join();
  }
  if (o.restore && !im.abort && !pacer_.stopped()) {
    for (const auto& job : jobs) im.restore(job);
  }
  if (im.events_created) {
    struct stat st {};  // appends changed its ctime: listed again as it is now
    if (::fstat(im.events_fd.get(), &st) == 0) im.list_events(st);
  }
  if (im.abort) {
    result.error = im.error;
    return false;
  }
  return true;
}

// ---- cleanup -----------------------------------------------------------------

namespace {

struct Entry {
  char kind;
  unsigned long long dev, ino;
  long long ctime_s;
  long ctime_ns;
  std::string path;
};

// The entries of verified manifest lines, renames applied, the last line for
// a path winning.
std::vector<Entry> parse_entries(const std::vector<std::string>& lines) {
  std::vector<Entry> entries;
  for (const std::string& s : lines) {
    if (s.size() < 3 || s[1] != ' ') continue;
    const char kind = s[0];
    if (kind == 'f' || kind == 'd' || kind == 'e') {
      unsigned long long dev = 0, ino = 0;
      long long cs = 0;
      long cns = 0;
      int off = 0;
      if (std::sscanf(s.c_str() + 2, "%llu %llu %lld.%ld %n", &dev, &ino, &cs, &cns, &off) < 4 ||
          off == 0) {
        continue;
      }
      entries.push_back({kind, dev, ino, cs, cns, s.substr(2 + static_cast<std::size_t>(off))});
    } else if (kind == 'm') {
      // Paths contain no spaces: burst names them.
      const auto sp = s.find(' ', 2);
      if (sp == std::string::npos) continue;
      const std::string from = s.substr(2, sp - 2);
      const std::string to = s.substr(sp + 1);
      for (auto& e : entries) {
        if (e.kind == 'e') continue;  // an absolute path: no rename of burst's moves it
        if (e.path == from) {
          e.path = to;
        } else if (e.path.starts_with(from + "/")) {
          e.path = to + e.path.substr(from.size());
        }
      }
    }
  }
  // A later line for the same path wins (a file is listed again after a
  // rename or a rewrite).
  std::set<std::pair<bool, std::string>> seen;
  std::vector<Entry> latest;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (seen.insert({it->kind == 'd', it->path}).second) latest.push_back(*it);
  }
  std::reverse(latest.begin(), latest.end());
  return latest;
}

// Why `dir`'s manifest is not to be trusted ("" when it is), with its lines.
std::string check_manifest(int root, const std::string& key_file, ManifestCheck* check,
                           bool* absent) {
  *absent = false;
  Fd fd(::openat(root, std::string(kManifestName).c_str(),
                 O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.ok()) {
    if (errno == ENOENT) {
      *absent = true;
      return "";
    }
    return errno == ELOOP ? "it is a symlink" : "cannot read: " + errno_text(errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return "cannot stat: " + errno_text(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != ::geteuid()) {
    return "owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(::geteuid()) + "): not written by your burst";
  }
  std::string err;
  const std::string kf = !key_file.empty() ? key_file : default_key_file(&err);
  ManifestKey key;
  if (kf.empty() || !load_key(kf, false, &key, &err)) {
    return "its digests cannot be checked: " + err;
  }
  std::string text;
  if (!read_all(fd.get(), &text)) return "cannot read: " + errno_text(errno);
  *check = verify_manifest(key, text);
  if (!check->trusted) return check->why;
  return "";
}

bool same_file(const struct stat& st, const Entry& e, bool compare_ctime) {
  return st.st_dev == e.dev && st.st_ino == e.ino &&
         (!compare_ctime || (st.st_ctim.tv_sec == e.ctime_s && st.st_ctim.tv_nsec == e.ctime_ns));
}

}  // namespace

bool cleanup(const std::string& dir, const std::string& key_file, CleanupReport* report) {
  CleanupReport& r = *report;
  r = CleanupReport{};
  const std::string mpath = dir + "/" + std::string(kManifestName);
  Fd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    r.problems.push_back(dir + ": cannot open: " + errno_text(errno));
    return false;
  }
  ManifestCheck check;
  bool absent = false;
  const std::string why = check_manifest(root.get(), key_file, &check, &absent);
  if (absent) return true;  // nothing was created here
  if (!why.empty()) {
    r.trusted = false;
    r.problems.push_back(mpath + ": not trusted, deleted nothing: " + why);
    return false;
  }
  if (check.torn_tail) {
    r.notes.push_back(mpath + ": its last line was cut short (a burst killed mid-write); ignored");
  }
  std::vector<Entry> entries = parse_entries(check.lines);
  bool ok = true;
  const auto refuse = [&](const std::string& what, const std::string& reason) {
    r.problems.push_back(what + ": refused: " + reason);
    ++r.refused;
    ok = false;
  };
  // Looks `e` up beneath the directory, no symlink followed: false when it is
  // gone already or refused (then said).
  const auto find = [&](const Entry& e, Parent* parent, struct stat* st) {
    const std::string p = dir + "/" + e.path;
    std::vector<std::string> parts;
    if (!split_relative(e.path, &parts)) {
      refuse(e.path, beneath_error(EINVAL));
      return false;
    }
    if (!open_parent_beneath(root.get(), e.path, parent)) {
      if (errno != ENOENT) refuse(p, beneath_error(errno));
      return false;  // ENOENT: gone already
    }
    return ::fstatat(parent->dir.get(), parent->name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0;
  };
  // Files first, newest first; then directories, deepest first. Each is
  // removed through its parent's descriptor only when it is still what
  // burst made.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->kind == 'e') {
      r.notes.push_back(it->path +
                        ": the event log burst created outside the directory is left in place "
                        "(cleanup deletes only below " +
                        dir + "); remove it yourself");
      ++r.outside;
      continue;
    }
    if (it->kind != 'f') continue;
    const std::string p = dir + "/" + it->path;
    Parent parent;
    struct stat st {};
    if (!find(*it, &parent, &st)) continue;
    if (!S_ISREG(st.st_mode) || !same_file(st, *it, true)) {
      r.problems.push_back(p + ": not the file burst created (replaced or changed since); kept");
      ++r.kept;
      ok = false;
      continue;
    }
    if (::unlinkat(parent.dir.get(), parent.name.c_str(), 0) == 0) {
      ++r.removed;
    } else {
      r.problems.push_back(p + ": cannot remove: " + errno_text(errno));
      ++r.kept;
      ok = false;
    }
  }
  std::vector<Entry*> dirs;
  for (auto& e : entries) {
    if (e.kind == 'd') dirs.push_back(&e);
  }
  std::stable_sort(dirs.begin(), dirs.end(), [](const Entry* a, const Entry* b) {
    return std::count(a->path.begin(), a->path.end(), '/') >
           std::count(b->path.begin(), b->path.end(), '/');
  });
  for (Entry* e : dirs) {
    const std::string p = dir + "/" + e->path;
    Parent parent;
    struct stat st {};
    if (!find(*e, &parent, &st)) continue;
    if (!S_ISDIR(st.st_mode) || !same_file(st, *e, false)) {
      r.problems.push_back(p + ": not the directory burst created; kept");
      ++r.kept;
      continue;
    }
    if (::unlinkat(parent.dir.get(), parent.name.c_str(), AT_REMOVEDIR) == 0) {
      ++r.removed;
    } else {
      r.problems.push_back(p + ": not removed (" + errno_text(errno) +
                           "; it holds files burst did not create)");
      ++r.kept;
      ok = false;
    }
  }
  if (ok) ::unlinkat(root.get(), std::string(kManifestName).c_str(), 0);
  return ok;
}

}  // namespace ckptmon::burst
