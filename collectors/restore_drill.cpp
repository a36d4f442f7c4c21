#include "collectors/restore_drill.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "collectors/formats/dcp_metadata.hpp"
#include "collectors/integrity.hpp"
#include "collectors/tree_scan.hpp"
#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string seconds_text(double s) {
  return format_duration(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
}

constexpr std::size_t kChunk = std::size_t{4} << 20;  // one pread

// "__12_0.distcp" -> 12.
std::optional<std::size_t> dcp_rank(std::string_view name) {
  const auto slash = name.rfind('/');
  if (slash != std::string_view::npos) name = name.substr(slash + 1);
  if (!name.starts_with("__") || !name.ends_with(".distcp")) return std::nullopt;
  name = name.substr(2, name.size() - 2 - 7);
  const auto us = name.find('_');
  if (us == std::string_view::npos || us == 0) return std::nullopt;
  std::size_t r = 0;
  for (char ch : name.substr(0, us)) {
    if (ch < '0' || ch > '9' || r > 1'000'000) return std::nullopt;
    r = r * 10 + static_cast<std::size_t>(ch - '0');
  }
  return r;
}

// One read: a whole file (length 0 and `whole`) or a byte range of it.
struct Read {
  std::string rel;  // under the tier root
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool whole = true;
};

struct OpenFile {
  int fd = -1;
  std::uint64_t size = 0;
};

class Fds {
 public:
  Fds() = default;
  Fds(const Fds&) = delete;
  Fds& operator=(const Fds&) = delete;
  ~Fds() {
    for (auto& [rel, f] : files) ::close(f.fd);
    if (root >= 0) ::close(root);
  }
  int root = -1;
  std::map<std::string, OpenFile> files;
};

std::string join_rel(const std::string& ckpt, const std::string& rel) {
  if (ckpt.empty() || ckpt == ".") return rel;
  return rel.empty() ? ckpt : ckpt + "/" + rel;
}

// Picks the checkpoint: the job's committed one at `step`, or its newest.
const Checkpoint* pick(const std::vector<Checkpoint>& all, const DrillRequest& o, std::string& job,
                       std::string& error) {
  std::set<std::string> jobs;
  for (const Checkpoint& c : all) {
    if (c.state == CkptState::kCommitted) jobs.insert(c.job);
  }
  if (job.empty()) {
    if (jobs.size() != 1) {
      error = jobs.empty() ? "no committed checkpoint on the tier"
                           : "several jobs have committed checkpoints here; give --job (" +
                                 [&] {
                                   std::string s;
                                   for (const auto& j : jobs) s += (s.empty() ? "" : ", ") + j;
                                   return s;
                                 }() +
                                 ")";
      return nullptr;
    }
    job = *jobs.begin();
  }
  const Checkpoint* best = nullptr;
  for (const Checkpoint& c : all) {
    if (c.state != CkptState::kCommitted || c.job != job) continue;
    if (o.step && c.step != *o.step) continue;
    if (best == nullptr ||
        std::tie(c.step, c.marker_time) > std::tie(best->step, best->marker_time)) {
      best = &c;
    }
  }
  if (best == nullptr) {
    error = "no committed checkpoint of job " + job +
            (o.step ? " at step " + std::to_string(*o.step) : std::string()) + " on the tier";
  }
  return best;
}

std::string open_error(const std::optional<PathRefusal>& refused, int err) {
  return refused ? "refused (" + std::string(to_string(*refused)) + ")" : errno_text(err);
}

// Reads `rel` (under the tier) into `text`, at most `cap` bytes; false on error.
bool read_small(int root, const std::string& rel, std::uint64_t cap, std::string& text) {
  std::optional<PathRefusal> refused;
  int err = 0;
  const int fd = open_beneath(root, rel, O_RDONLY, &refused, &err);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) <= cap;
  if (ok) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (ok && got < text.size()) {
      const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
      if (n <= 0) {
        ok = false;  // an error, or the file shrank under us
      } else {
        got += static_cast<std::size_t>(n);
      }
    }
  }
  ::close(fd);
  return ok;
}

// The bytes mincore(2) sees resident in the page cache for the open file.
std::uint64_t resident_bytes(int fd, std::uint64_t size) {
  if (size == 0) return 0;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 0;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  std::uint64_t resident = 0;
  if (::mincore(p, size, vec.data()) == 0) {
    for (unsigned char v : vec) resident += (v & 1U) != 0 ? page : 0;
  }
  ::munmap(p, size);
  return std::min(resident, size);
}

class Drill {
 public:
  Drill(const DrillRequest& o, const Clock& clock) : o_(o), clock_(clock) {}

  // 0 done (the result says within or over), 2 bad input; `error` says why.
  int run(DrillResult& r, std::string& error);

 private:
  int locate(DrillResult& r, std::string& error);
  void assign(DrillResult& r);
  bool open_all(DrillResult& r);
  void read_all(DrillResult& r);
  void verify_all(DrillResult& r);

  // Whether to stop reading: cancelled, or past the deadline (says which).
  bool should_stop(double started, std::string& why) const;

  const DrillRequest& o_;
  const Clock& clock_;
  TierConfig tier_;
  std::vector<Checkpoint> found_;
  const Checkpoint* ckpt_ = nullptr;
  std::optional<dcp::Metadata> meta_;
  std::vector<std::vector<Read>> reads_;  // per reader rank
  Fds fds_;
  double started_ = 0;  // monotonic, when run() began
};

int Drill::locate(DrillResult& r, std::string& error) {
  const double t0 = clock_.monotonic();
  tier_ = o_.tier;
  TierScanner scanner(tier_, /*keep_files=*/true);
  ScanOutcome scanned = scanner.scan(clock_.now());
  if (!scanned.root_ok) {
    error = scanned.error;
    return 2;
  }
  found_ = std::move(scanned.checkpoints);
  r.job = o_.job;
  ckpt_ = pick(found_, o_, r.job, error);
  if (ckpt_ == nullptr) return 2;
  r.tier = tier_.name;
  r.path = ckpt_->path;
  r.step = ckpt_->step;
  r.framework = ckpt_->framework;
  if (o_.objective_seconds) {
    r.objective_seconds = o_.objective_seconds;
  } else if (o_.objective_for) {
    r.objective_seconds = o_.objective_for(r.job);
  }
  fds_.root = ::open(tier_.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fds_.root < 0) {
    error = tier_.path + ": " + errno_text(errno);
    return 2;
  }
  // DCP's own plan: its .metadata, read as a restore's coordinator would.
  if (ckpt_->shard_files &&
      (r.framework == "pytorch_dcp" || r.framework == "megatron_torch_dist")) {
    std::string text;
    if (read_small(fds_.root, join_rel(ckpt_->path, ".metadata"), dcp::kMaxMetadataBytes, text)) {
      dcp::ReadResult m = dcp::read_metadata(text);
      if (m.metadata) meta_ = std::move(m.metadata);
    }
  }
  r.locate_seconds = clock_.monotonic() - t0;
  return 0;
}

void Drill::assign(DrillResult& r) {
  std::vector<std::pair<std::string, std::uint64_t>> files;  // rel under the tier, size
  if (ckpt_->shard_files && !ckpt_->shard_files->empty()) {
    for (const ShardFile& f : *ckpt_->shard_files)
      files.emplace_back(join_rel(ckpt_->path, f.rel_path), f.size);
  } else {
    files.emplace_back(ckpt_->path, ckpt_->bytes);  // a single-file checkpoint
  }
  std::set<std::size_t> writers;
  for (const auto& [rel, size] : files) {
    if (auto w = dcp_rank(rel)) writers.insert(*w);
  }
  r.writer_ranks = writers.size();
  const std::size_t readers = o_.ranks > 0 ? o_.ranks : std::max<std::size_t>(1, writers.size());
  reads_.assign(readers, {});
  r.ranks.assign(readers, {});
  if (meta_ && o_.ranks > 0 && o_.ranks != writers.size()) {
    // Resharded: each new rank reads the stored chunks its shard overlaps;
    // the coordinator reads .metadata.
    r.planned = true;
    const auto plan = dcp::plan_reads(*meta_, readers);
    for (std::size_t k = 0; k < readers; ++k) {
      for (const dcp::ReadRange& rr : plan[k]) {
        reads_[k].push_back({join_rel(ckpt_->path, rr.file), rr.offset, rr.length, false});
      }
    }
    reads_[0].push_back({join_rel(ckpt_->path, ".metadata"), 0, 0, true});
    return;
  }
  // Each writer rank's files to its reader; the rest balanced by size.
  std::vector<std::uint64_t> load(readers, 0);
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (const auto& [rel, size] : files) {
    std::size_t k = 0;  // by rank: files no rank wrote (.metadata) are the coordinator's
    if (auto w = dcp_rank(rel); w && readers == writers.size()) {
      k = static_cast<std::size_t>(std::distance(writers.begin(), writers.find(*w)));
    } else if (readers == writers.size() && !writers.empty()) {
      k = 0;
    } else {
      k = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    }
    load[k] += size;
    reads_[k].push_back({rel, 0, 0, true});
  }
}

bool Drill::open_all(DrillResult& r) {
  const double t0 = clock_.monotonic();
  for (const auto& rank : reads_) {
    for (const Read& rd : rank) {
      if (fds_.files.contains(rd.rel)) continue;
      std::optional<PathRefusal> refused;
      int err = 0;
      const int fd = open_beneath(fds_.root, rd.rel, O_RDONLY, &refused, &err);
      if (fd < 0) {
        r.failure = "open " + rd.rel + ": " + open_error(refused, err);
        return false;
      }
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        r.failure = rd.rel + ": not a regular file";
        ::close(fd);
        return false;
      }
      fds_.files[rd.rel] = {fd, static_cast<std::uint64_t>(st.st_size)};
    }
  }
  r.files = fds_.files.size();
  r.metadata_seconds = clock_.monotonic() - t0;
  return true;
}

void Drill::read_all(DrillResult& r) {
  std::mutex mu;
  std::atomic<bool> stop{false};
  ByteRateLimiter limiter(
      o_.rate_bytes_per_second, std::shared_ptr<const Clock>(&clock_, [](const Clock*) {}),
      [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); });
  // Buffers before the clock starts (not zero-filled: a pread fills them).
  std::vector<std::unique_ptr<char[]>> bufs;
  for (std::size_t k = 0; k < reads_.size(); ++k) bufs.emplace_back(new char[kChunk]);
  const double t0 = clock_.monotonic();
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < reads_.size(); ++k) {
    threads.emplace_back([&, k] {
      char* buf = bufs[k].get();
      DrillRank& me = r.ranks[k];
      const double start = clock_.monotonic();
      for (const Read& rd : reads_[k]) {
        const OpenFile& f = fds_.files.at(rd.rel);
        const std::uint64_t end = rd.whole ? f.size : rd.offset + rd.length;
        ++me.ranges;
        for (std::uint64_t at = rd.offset; at < end && !stop.load();) {
          if (std::string why; should_stop(started_, why)) {
            std::lock_guard lock(mu);
            if (r.failure.empty())
              r.failure = why + " after reading " + rd.rel + " to byte " + std::to_string(at);
            stop = true;
            break;
          }
          const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, end - at));
          if (o_.rate_bytes_per_second > 0) {
            std::lock_guard lock(mu);
            limiter.acquire(want);
          }
          const ssize_t n = ::pread(f.fd, buf, want, static_cast<off_t>(at));
          if (n <= 0) {
            std::lock_guard lock(mu);
            if (r.failure.empty()) {
              r.failure = n == 0 ? rd.rel + " ended at byte " + std::to_string(at) + ", before " +
                                       std::to_string(end) + " (truncated or replaced mid-drill)"
                                 : "read " + rd.rel + ": " + errno_text(errno);
            }
            stop = true;
            break;
          }
          at += static_cast<std::uint64_t>(n);
          me.bytes += static_cast<std::uint64_t>(n);
        }
      }
      me.seconds = clock_.monotonic() - start;
    });
  }
  for (auto& t : threads) t.join();
  r.read_seconds = clock_.monotonic() - t0;
  for (const DrillRank& k : r.ranks) r.bytes += k.bytes;
}

void Drill::verify_all(DrillResult& r) {
  if (o_.checksums.empty() || !r.failure.empty()) return;
  r.verified = true;
  const double t0 = clock_.monotonic();
  // Unpaced: the read phase paid the rate cap; this is hashing.
  ByteRateLimiter unpaced(1e18, std::shared_ptr<const Clock>(&clock_, [](const Clock*) {}),
                          [](double) {});
  std::vector<char> buf;
  for (const auto& [rel, f] : fds_.files) {
    auto want = o_.checksums.find(rel);
    if (want == o_.checksums.end()) {
      ++r.unverified_files;
      continue;
    }
    if (std::string why; should_stop(started_, why)) {
      r.failure = std::move(why);
      r.failure += " while verifying ";
      r.failure += rel;
      break;
    }
    std::uint64_t bytes = 0;
    std::string detail;
    if (::lseek(f.fd, 0, SEEK_SET) != 0) {
      r.failure = "verify " + rel + ": " + errno_text(errno);
      break;
    }
    const IntegrityResult res =
        verify_fd(f.fd, want->second, unpaced, buf, &bytes, &detail, nullptr, &clock_);
    if (res == IntegrityResult::kOk) {
      ++r.verified_files;
      continue;
    }
    r.failure = rel + ": " + std::string(to_string(res)) + (detail.empty() ? "" : ", " + detail);
    break;
  }
  r.verify_seconds = clock_.monotonic() - t0;
}

bool Drill::should_stop(double started, std::string& why) const {
  if (o_.cancel != nullptr && o_.cancel->load(std::memory_order_relaxed)) {
    why = "cancelled";
    return true;
  }
  if (o_.deadline_seconds > 0 && clock_.monotonic() - started > o_.deadline_seconds) {
    why = "deadline of " + seconds_text(o_.deadline_seconds) + " passed";
    return true;
  }
  return false;
}

int Drill::run(DrillResult& r, std::string& error) {
  started_ = clock_.monotonic();
  if (int rc = locate(r, error); rc != 0) return rc;
  assign(r);
  if (o_.rate_bytes_per_second > 0 && (r.objective_seconds || o_.deadline_seconds > 0)) {
    std::uint64_t planned = ckpt_->bytes;
    if (r.planned) {
      planned = 0;
      for (const auto& rank : reads_) {
        for (const Read& rd : rank) planned += rd.length;
      }
    }
    const double need = static_cast<double>(planned) / o_.rate_bytes_per_second;
    const bool over_objective = r.objective_seconds && need > *r.objective_seconds;
    const bool over_deadline = o_.deadline_seconds > 0 && need > o_.deadline_seconds;
    if (over_objective || over_deadline) {
      error = "refused: reading " + human_bytes(static_cast<double>(planned)) + " at " +
              human_bytes(o_.rate_bytes_per_second) + "/s takes " + seconds_text(need) +
              ", over the " +
              (over_objective ? "objective of " + seconds_text(*r.objective_seconds)
                              : "deadline of " + seconds_text(o_.deadline_seconds));
      return 2;
    }
  }
  if (!open_all(r)) return 0;
  if (o_.cold) {
    std::uint64_t resident = 0;
    for (auto& [rel, f] : fds_.files) {
      static_cast<void>(::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED));
      resident += resident_bytes(f.fd, f.size);
    }
    r.resident_after_drop = resident;
  }
  read_all(r);
  verify_all(r);
  return 0;
}

}  // namespace

DrillOutcome run_drill(const DrillRequest& req, const Clock& clock, DrillResult& r,
                       std::string& error) {
  Drill drill(req, clock);
  return drill.run(r, error) == 0 ? DrillOutcome::kDone : DrillOutcome::kRefused;
}

}  // namespace ckptmon
