#include "collectors/tree_scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

#include "collectors/access_audit.hpp"
#include "collectors/layouts/recogniser.hpp"
#include "collectors/mountinfo.hpp"
#include "util/label.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

// Whether a scanner built for `a` scans exactly as one built for `b` would:
// every setting TierScanner and its AccessAuditor read. The rules' policy is
// the only part of a tier they do not.
bool same_scan_settings(const TierConfig& a, const TierConfig& b) {
  auto layout_eq = [](const auto& x, const auto& y) {
    if (x.has_value() != y.has_value()) return false;
    return !x || (x->shard_glob == y->shard_glob && x->marker == y->marker &&
                  x->step_regex == y->step_regex);
  };
  auto namespaces_eq = [](const auto& x, const auto& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto& n, const auto& m) {
      return n.job_regex == m.job_regex && n.owner == m.owner && n.group == m.group &&
             n.residency == m.residency && n.project_gids == m.project_gids;
    });
  };
  return a.name == b.name && a.path == b.path && a.partial_after == b.partial_after &&
         a.jobs.depth == b.jobs.depth && a.jobs.regex_text == b.jobs.regex_text &&
         a.jobs.group == b.jobs.group && a.jobs.max_depth == b.jobs.max_depth &&
         a.shard_index == b.shard_index && a.shard_count == b.shard_count && a.watch == b.watch &&
         a.walk_concurrency == b.walk_concurrency && a.walk_max_depth == b.walk_max_depth &&
         layout_eq(a.layout, b.layout) && a.residency == b.residency &&
         namespaces_eq(a.namespaces, b.namespaces);
}

// Whether tier-relative `rel` is a frozen checkpoint or lies inside one.
bool inside_frozen(const std::string& rel, const WalkMemory& m) {
  std::string_view r = rel;
  for (;;) {
    if (m.frozen.contains(std::string(r))) return true;
    const auto slash = r.rfind('/');
    if (slash == std::string_view::npos) return false;
    r = r.substr(0, slash);
  }
}

// Every directory of `node` (tier-relative `rel`, in `job`) the walker could
// not read, or did not open because it is too deep.
void collect_unreadable(const DirNode& node, const std::string& rel, const std::string& job,
                        std::vector<UnreadableDir>& out) {
  if (node.too_deep) {
    out.push_back({job, rel, 0, true});
    return;
  }
  if (node.error != 0) out.push_back({job, rel, node.error});
  for (const auto& c : node.dirs) collect_unreadable(c, join(rel, c.name), job, out);
}

bool overlaps_any(const std::string& path, const std::vector<UnreadableDir>& dirs) {
  return std::any_of(dirs.begin(), dirs.end(),
                     [&](const UnreadableDir& u) { return paths_overlap(u.path, path); });
}

}  // namespace

std::uint64_t job_hash(std::string_view job) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : job) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

TierScanner::TierScanner(TierConfig cfg, bool keep_files)
    : cfg_(std::move(cfg)), keep_files_(keep_files) {
  if (cfg_.layout) {
    generic_.shard_glob = cfg_.layout->shard_glob;
    generic_.marker = cfg_.layout->marker;
    generic_.step_regex = cfg_.layout->step_regex;
  }
}

bool TierScanner::owns_job(const std::string& job) const {
  return cfg_.shard_count <= 1 || job_hash(job) % cfg_.shard_count == cfg_.shard_index;
}

std::string TierScanner::job_named(const std::string& child, const std::string& name,
                                   int depth) const {
  if (cfg_.jobs.regex) {
    std::smatch m;
    if (std::regex_match(child, m, *cfg_.jobs.regex)) return m[cfg_.jobs.group].str();
    return "";
  }
  return depth == cfg_.jobs.depth ? name : "";
}

std::vector<std::pair<std::string, std::string>> TierScanner::find_jobs(
    TreeWalker& walker, std::vector<UnreadableDir>& unreadable, std::string* error) {
  // (tier-relative job root, job name)
  std::vector<std::pair<std::string, std::string>> jobs;
  if (!cfg_.jobs.regex && cfg_.jobs.depth == 0) {
    jobs.emplace_back("", cfg_.name);
    return jobs;
  }
  const int max_depth = cfg_.jobs.regex ? cfg_.jobs.max_depth : cfg_.jobs.depth;
  std::vector<std::string> level{""};
  for (int depth = 1; depth <= max_depth && !level.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& rel : level) {
      std::vector<std::pair<std::string, double>> dirs;
      std::vector<std::pair<std::string, int>> failed;
      std::string err;
      if (!walker.list_dirs(rel, dirs, &err, &failed)) {
        const int e = errno;
        if (rel.empty()) {
          *error = err;
          return {};
        }
        // Vanished: counted by the walker. Unreadable: the jobs below are
        // unknown, not gone.
        if (e != ENOENT && e != ENOTDIR && e != ELOOP) unreadable.push_back({"", rel, e});
        continue;
      }
      // Entries whose stat failed (EIO, ESTALE...): the job they are, or the
      // jobs below them, are unknown now, not gone.
      for (const auto& [name, e] : failed) {
        const std::string child = join(rel, name);
        const std::string job = job_named(child, name, depth);
        if (!job.empty() && !owns_job(job)) continue;
        unreadable.push_back({job, child, e});
      }
      for (const auto& [name, _] : dirs) {
        std::string child = join(rel, name);
        if (std::string job = job_named(child, name, depth); !job.empty()) {
          jobs.emplace_back(std::move(child), std::move(job));
        } else {
          next.push_back(std::move(child));
        }
      }
    }
    level = std::move(next);
  }
  return jobs;
}

int TierScanner::default_concurrency(const std::string& fstype) {
  // Network and parallel file systems answer many metadata calls at once,
  // each after a round trip; local ones are bound by the CPU.
  static const char* const kNetwork[] = {"nfs",   "nfs4",   "lustre",    "gpfs", "cifs",
                                         "smb3",  "smbfs",  "ceph",      "9p",   "beegfs",
                                         "panfs", "wekafs", "glusterfs", "afs",  "orangefs"};
  for (const char* n : kNetwork) {
    if (fstype == n) return 16;
  }
  if (fstype.starts_with("fuse")) return 16;  // sshfs, gcsfuse, s3fs, Weka/VAST clients...
  return 1;
}

std::shared_ptr<WalkLive> TierScanner::live() const {
  std::lock_guard lock(slots_mu_);
  return slots_ ? slots_->live() : nullptr;
}

ScanOutcome TierScanner::scan(double now, DirWatcher* watcher,
                              std::shared_ptr<const TierCatalog> records) {
  const auto start = std::chrono::steady_clock::now();
  ScanOutcome out;
  WalkStats stats;
  // The concurrency comes from the configuration or the file-system type in
  // mountinfo: no call on the tier itself, which may hang.
  std::chrono::milliseconds stall_timeout;
  std::shared_ptr<const Clock> clock;
  std::string proc_path;
  WalkCallHook hook;
  WalkFaultHook fault;
  {
    std::lock_guard lock(slots_mu_);
    stall_timeout = stall_timeout_;
    clock = clock_;
    proc_path = proc_path_;
    hook = hook_;
    fault = fault_;
  }
  int concurrency = cfg_.walk_concurrency;
  if (concurrency <= 0) {
    std::string fstype;
    std::ifstream in(proc_path + "/self/mountinfo", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const auto mounts = parse_mountinfo(text.str());
    if (const MountInfo* m = find_mount(mounts, cfg_.path, std::nullopt)) fstype = m->fstype;
    concurrency = default_concurrency(fstype);
  }
  std::shared_ptr<WalkSlots> slots;
  {
    std::lock_guard lock(slots_mu_);
    if (!slots_ || slots_->size() != concurrency) {
      // Threads of the old set still stuck in a call exit when it returns.
      slots_ = std::make_shared<WalkSlots>(concurrency);
    }
    slots = slots_;
  }
  const std::uint64_t calls_before = slots->live()->calls();
  auto finish = [&] {
    out.dirs_listed = stats.dirs_listed;
    out.stat_calls = stats.stat_calls;
    out.permission_errors = stats.permission_errors;
    out.vanished = stats.vanished;
    out.calls = slots->live()->calls() - calls_before;
    out.duration_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const std::string stall_error = cfg_.path + ": walk given up: no metadata call returned for " +
                                  std::to_string(stall_timeout.count() / 1000) + "s (hung mount?)";

  // The root is opened on a slot too.
  struct RootOpen {
    int fd = -1;
    int err = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    long f_type = 0;
    bool statfs_ok = false;
    ~RootOpen() {
      if (fd >= 0) ::close(fd);
    }
  };
  auto ro = std::make_shared<RootOpen>();
  {
    std::vector<std::function<void()>> t{[ro, path = cfg_.path, live = slots->live(), hook = hook] {
      live->inflight.fetch_add(1);
      const auto t0 = std::chrono::steady_clock::now();
      if (hook) hook("open", "");
      int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      struct stat st {};
      if (fd >= 0 && ::fstat(fd, &st) != 0) {
        ro->err = errno;
        ::close(fd);
        fd = -1;
      } else if (fd < 0) {
        ro->err = errno;
      }
      if (fd >= 0) {
        struct statfs sfs {};
        ro->statfs_ok = ::fstatfs(fd, &sfs) == 0;
        ro->f_type = static_cast<long>(sfs.f_type);
        ro->dev = st.st_dev;
        ro->ino = st.st_ino;
      }
      ro->fd = fd;
      live->observe(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - t0)
                                                   .count()));
      live->inflight.fetch_sub(1);
    }};
    if (!run_tasks(slots.get(), t, stall_timeout, *clock)) {
      out.root_ok = false;
      out.stalled = true;
      out.error = stall_error;
      finish();
      return out;
    }
  }
  if (ro->fd < 0) {
    out.root_ok = false;
    out.error = cfg_.path + ": " + errno_text(ro->err);
    finish();
    return out;
  }
  // Not the tree the first walk walked: walking it would record every
  // checkpoint as deleted, and count them all again when the tree returns.
  // Only a tree that held a job is held to: until then there is nothing to
  // lose or count twice (a file system mounted on an empty mount point after
  // the start is the tier's).
  const RootId seen{ro->dev, ro->ino, ro->f_type, ro->statfs_ok};
  if (root_id_ && root_had_jobs_) {
    const std::string why = root_change(*root_id_, seen);
    if (!why.empty()) {
      if (!root_change_logged_) {
        log::error(
            "tier root is not the tree first walked: tier down, not walked, its catalog kept",
            {{"tier", cfg_.name}, {"path", display_name(cfg_.path)}, {"reason", why}});
        root_change_logged_ = true;
      }
      out.root_ok = false;
      out.root_changed = why;
      out.error = cfg_.path + ": " + why;
      finish();
      return out;
    }
    if (seen.dev != root_id_->dev) {
      // The same directory of the same file-system type on a new device
      // number: remounted (NFS, FUSE and Lustre mounts get a new one).
      log::info("tier root remounted on a new device: walking it",
                {{"tier", cfg_.name}, {"path", display_name(cfg_.path)}});
      root_id_->dev = seen.dev;
    }
  }
  if (root_change_logged_) {
    log::info("tier root is the tree first walked again: walking it",
              {{"tier", cfg_.name}, {"path", display_name(cfg_.path)}});
    root_change_logged_ = false;
  }
  const int root = ro->fd;
  WalkOptions opts;
  opts.slots = slots.get();
  // NFS: files' attributes may come from the client's cache (at most acregmax
  // old); directories are always asked, their mtime decides reuse.
  opts.dont_sync_files =
      ro->statfs_ok && (static_cast<unsigned long>(ro->f_type) & 0xffffffffUL) == 0x6969UL;
  opts.now = now;
  opts.settle_seconds = to_seconds(cfg_.partial_after);
  opts.stall_timeout = stall_timeout;
  opts.max_depth = cfg_.walk_max_depth;
  opts.clock = clock.get();
  opts.hook = hook;
  opts.fault = fault;
  // A frozen checkpoint is reused from the catalog the last walks' results
  // went into, when it still holds the record frozen (sorted by job, path).
  std::string walking_job;
  if (records) {
    opts.frozen_record = [&records, &walking_job](
                             const std::string& rel,
                             const WalkMemory::Frozen& f) -> std::shared_ptr<const Checkpoint> {
      const auto& v = records->checkpoints;
      auto it = std::lower_bound(
          v.begin(), v.end(), std::tie(walking_job, rel),
          [](const Checkpoint& c, const auto& key) { return std::tie(c.job, c.path) < key; });
      if (it == v.end() || it->job != walking_job || it->path != rel || !f.matches(*it)) {
        return nullptr;
      }
      return {records, &*it};  // shares the catalog, copies nothing
    };
  }
  TreeWalker walker(root, ro->dev, &memory_, stats, opts);
  std::unordered_map<std::string, std::shared_ptr<const DirListing>> listings;
  walker.remember_listings(&listings, /*adopt_later=*/true);
  std::vector<std::string> listed;
  bool use_inotify = false;
  if (watcher != nullptr && cfg_.watch != WatchMode::kPoll) {
    use_inotify =
        cfg_.watch == WatchMode::kInotify || (ro->statfs_ok && !is_network_fs(ro->f_type));
  }
  if (use_inotify) walker.record_listed(&listed);
  std::string error;
  auto jobs = find_jobs(walker, out.unreadable, &error);
  if (walker.stalled()) error = stall_error;
  if (!error.empty()) {
    out.root_ok = false;
    out.stalled = walker.stalled();
    out.error = error;
    finish();
    return out;
  }
  // Followed while its walks find no job; from the first that finds one, held to.
  if (!root_id_ || !root_had_jobs_) root_id_ = seen;
  root_had_jobs_ = !jobs.empty() || !out.unreadable.empty();
  // A job directory that could not even be stat'ed is still a job seen.
  for (const auto& u : out.unreadable) {
    if (!u.job.empty()) out.jobs.insert(u.job);
  }

  LayoutContext ctx;
  ctx.now = now;
  ctx.partial_after = to_seconds(cfg_.partial_after);
  ctx.generic = cfg_.layout ? &generic_ : nullptr;
  ctx.keep_shard_files = keep_files_;

  const AccessAuditor auditor(cfg_);
  WalkMemory next_memory;
  // This walk's findings, in the order they were found. The checkpoints
  // remembered for the next walk point into them once complete (`pending`).
  std::vector<AccessFinding> found;
  // About as many as the last walk's: grown once, not doubled from empty
  // (at 100,000 checkpoints each doubling moved megabytes of records).
  if (records) {
    out.checkpoints.reserve(records->checkpoints.size());
    if (records->findings) found.reserve(records->findings->size());
  }
  std::vector<WalkMemory::Remembered*> pending;
  auto remember = [&](const std::string& tier_rel, std::shared_ptr<const WalkMemory::Frozen> f,
                      std::size_t first) {
    auto [it, added] = next_memory.frozen.try_emplace(tier_rel);
    if (!added) return;
    it->second.frozen = std::move(f);
    it->second.first = static_cast<std::uint32_t>(first);
    it->second.count = static_cast<std::uint32_t>(found.size() - first);
    pending.push_back(&it->second);
  };
  for (const auto& [job_rel, job] : jobs) {
    if (!owns_job(job)) continue;
    out.jobs.insert(job);
    auditor.audit_job(job, job_rel, found);
    DirNode tree;
    walking_job = job;
    // Its ACLs, read on the descriptor the walk opens, when its namespace
    // says who may read (project_groups).
    AclXattrs acls;
    const bool readers = auditor.wants_readers(job);
    if (!walker.build(job_rel, tree, nullptr, readers ? &acls : nullptr)) {
      if (walker.stalled()) {
        out = ScanOutcome{};
        out.root_ok = false;
        out.stalled = true;
        out.error = stall_error;
        finish();
        return out;  // the memory of the last complete walk is kept
      }
      // Vanished (counted by the walker): its checkpoints are gone.
      // Unreadable: unknown, and merge_scan keeps what the catalog knew.
      if (tree.error != 0) out.unreadable.push_back({job, job_rel, tree.error});
      continue;
    }
    if (readers) auditor.audit_readers(job, job_rel, tree, acls, found);
    const std::size_t unreadable_from = out.unreadable.size();
    collect_unreadable(tree, job_rel, job, out.unreadable);
    const std::vector<UnreadableDir> job_unreadable(
        out.unreadable.begin() + static_cast<std::ptrdiff_t>(unreadable_from),
        out.unreadable.end());
    for (Checkpoint& c : recognise_tree(tree, ctx)) {
      const std::string in_job = c.path;
      const std::string tier_rel = join(job_rel, in_job);
      // Part of it could not be read: what was recognised is not the
      // checkpoint. The catalog's record, if any, is kept instead.
      if (overlaps_any(tier_rel, job_unreadable)) continue;
      c.tier = cfg_.name;
      c.job = job;
      c.path = tier_rel;
      const DirNode* node = find_node(tree, in_job);
      const std::size_t first = found.size();
      if (node != nullptr && node->reused) {
        // Unchanged since the last walk: keep what that walk remembered.
        auto it = memory_.frozen.find(tier_rel);
        if (it != memory_.frozen.end()) {
          const WalkMemory::Remembered& r = it->second;
          if (r.findings) {
            const auto from = r.findings->begin() + static_cast<std::ptrdiff_t>(r.first);
            found.insert(found.end(), from, from + static_cast<std::ptrdiff_t>(r.count));
          }
          if (c.state == CkptState::kCommitted) remember(it->first, r.frozen, first);
        }
        if (!c.shard_files && node->reused->shard_files) c.shard_files = node->reused->shard_files;
      } else {
        const FileEntry* file = nullptr;
        if (node == nullptr) {
          // A single-file checkpoint: its entry in the parent directory.
          const auto slash = in_job.rfind('/');
          const DirNode* parent =
              slash == std::string::npos ? &tree : find_node(tree, in_job.substr(0, slash));
          if (parent != nullptr) {
            file = parent->file(slash == std::string::npos ? in_job : in_job.substr(slash + 1));
          }
        }
        auditor.audit_checkpoint(c, node, file, found);
        // Not frozen while racy: a file still being written when the walk
        // read it (a commit marker created, its content not yet in) leaves
        // every directory's mtime as it was, and a reuse would keep the
        // half-read record for good.
        if (node != nullptr && c.state == CkptState::kCommitted &&
            std::max(layouts::activity_of(c), node->mtime) <= now - kRacySeconds) {
          WalkMemory::Frozen f;
          f.dir_mtime = c.dir_mtime;
          f.last_write = c.last_write;
          f.files = c.files;
          f.bytes = c.bytes;
          f.mtime = node->mtime;
          f.dirs = subtree_dirs(*node, tier_rel);
          remember(tier_rel, std::make_shared<const WalkMemory::Frozen>(std::move(f)), first);
        }
      }
      out.checkpoints.push_back(std::move(c));
    }
    walker.adopt_listing_files(job_rel, tree);  // the tree is done with
  }
  // Listings of directories inside a frozen checkpoint are not needed: the
  // checkpoint as a whole is reused while its directories are unchanged.
  for (auto& [rel, l] : listings) {
    if (!inside_frozen(rel, next_memory)) next_memory.listings.emplace(rel, std::move(l));
  }
  for (const auto& u : out.unreadable) auditor.audit_unreadable(u, found);
  // Unreadable now, so not listed again: keep what was remembered for when
  // access comes back, its findings copied out of the last walk's (which
  // this walk's replace).
  for (const auto& [path, r] : memory_.frozen) {
    if (!overlaps_any(path, out.unreadable)) continue;
    WalkMemory::Remembered kept{r.frozen, nullptr, 0, r.count};
    if (r.findings) {
      const auto from = r.findings->begin() + static_cast<std::ptrdiff_t>(r.first);
      kept.findings = std::make_shared<const std::vector<AccessFinding>>(
          from, from + static_cast<std::ptrdiff_t>(r.count));
    }
    next_memory.frozen.emplace(path, std::move(kept));
  }
  found.shrink_to_fit();
  out.findings = std::make_shared<const std::vector<AccessFinding>>(std::move(found));
  for (WalkMemory::Remembered* r : pending) r->findings = out.findings;
  log_transitions(out.unreadable);
  memory_ = std::move(next_memory);
  for (const auto& rel : listed) {
    watcher->watch(cfg_.name, rel.empty() ? cfg_.path : cfg_.path + "/" + rel);
  }
  finish();
  return out;
}

std::string TierScanner::root_change(const RootId& was, const RootId& now) {
  auto dev = [](dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); };
  auto hex = [](long t) {
    char buf[16];
    const auto r =
        std::to_chars(buf, buf + sizeof buf, static_cast<unsigned long>(t) & 0xffffffffUL, 16);
    return "0x" + std::string(buf, r.ptr);
  };
  const std::string tail =
      ": not walked, its catalog is kept (restart ckptmon to accept a new tree)";
  if (was.has_type && now.has_type && was.f_type != now.f_type) {
    return "mount gone: the tier root is on another file system now (type " + hex(now.f_type) +
           " device " + dev(now.dev) + ", was type " + hex(was.f_type) + " device " + dev(was.dev) +
           ")" + tail;
  }
  if (was.dev != now.dev && was.ino != now.ino) {
    return "mount gone: the tier root is on another device now (device " + dev(now.dev) +
           " inode " + std::to_string(now.ino) + ", was device " + dev(was.dev) + " inode " +
           std::to_string(was.ino) + ")" + tail;
  }
  if (was.ino != now.ino) {
    return "root changed: the tier path leads to another directory (inode " +
           std::to_string(now.ino) + ", was " + std::to_string(was.ino) + ", same file system)" +
           tail;
  }
  return "";
}

void TierScanner::log_transitions(const std::vector<UnreadableDir>& now) {
  std::map<std::string, int> next;
  for (const auto& u : now) next.emplace(u.path, u.error);
  auto full = [&](const std::string& rel) {
    return display_name(rel.empty() ? cfg_.path : cfg_.path + "/" + rel);
  };
  for (const auto& [path, err] : next) {
    if (unreadable_.contains(path)) continue;
    if (err == 0) {
      log::warn("directory deeper than walk_max_depth: not walked, what is below it is unknown",
                {{"tier", cfg_.name},
                 {"path", full(path)},
                 {"walk_max_depth", std::to_string(cfg_.walk_max_depth)}});
      continue;
    }
    log::warn("directory unreadable: its last known checkpoints are kept, flagged unreadable",
              {{"tier", cfg_.name}, {"path", full(path)}, {"error", errno_text(err)}});
  }
  for (const auto& [path, err] : unreadable_) {
    if (next.contains(path)) continue;
    log::info(err == 0 ? "directory no longer too deep" : "directory no longer unreadable",
              {{"tier", cfg_.name}, {"path", full(path)}});
  }
  unreadable_ = std::move(next);
}

void TreeScanCollector::configure(const Config& cfg) {
  interval_ = cfg.global.scan_interval;
  deadline_ = cfg.global.scan_timeout;
  std::map<std::string, std::shared_ptr<TierScanner>> next;
  for (const auto& t : cfg.tiers) {
    bool keep_files = !t.drains_to.empty();
    for (const auto& other : cfg.tiers) {
      if (other.drains_to == t.name) keep_files = true;
    }
    auto it = scanners_.find(t.name);
    if (it != scanners_.end() && it->second->keep_files() == keep_files &&
        same_scan_settings(it->second->config(), t)) {
      next.emplace(t.name, it->second);
    } else {
      watcher_->forget(t.name);
      next.emplace(t.name, std::make_shared<TierScanner>(t, keep_files));
    }
  }
  for (const auto& [name, _] : scanners_) {
    if (!next.contains(name)) watcher_->forget(name);
  }
  for (auto& [_, scanner] : next) {
    scanner->set_stall_timeout(
        std::chrono::duration_cast<std::chrono::milliseconds>(cfg.global.scan_timeout));
    scanner->set_proc_path(cfg.global.proc_path);
    scanner->set_clock(clock_);
  }
  scanners_ = std::move(next);
}

std::vector<std::string> TreeScanCollector::targets() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : scanners_) out.push_back(name);
  return out;
}

Job TreeScanCollector::prepare(const std::string& target, const State& current) {
  auto scanner = scanners_.at(target);
  // The catalog as the last walk left it: the walk reuses its records of the
  // checkpoints that did not change (held until the walk ends, not after).
  std::shared_ptr<const TierCatalog> records;
  if (auto it = current.catalogs.find(target); it != current.catalogs.end()) {
    records = it->second.shared();
  }
  return [scanner, clock = clock_, watcher = watcher_, target,
          records = std::move(records)]() mutable -> Update {
    ScanOutcome outcome = scanner->scan(clock->now(), watcher.get(), std::move(records));
    const double now = clock->now();
    const std::uint64_t generation = scanner->config().generation;
    return [outcome = std::move(outcome), target, generation, now,
            live = std::shared_ptr<const WalkLive>(scanner->live())](State& state) mutable {
      // The tier may have been removed or re-pointed by a reload meanwhile.
      if (!state.current_tier("tree_scan", target, generation)) return;
      auto& cat = state.catalogs[target];
      merge_scan(cat, std::move(outcome), now);
      // Another tree where the tier was: the tier is down, whatever statfs
      // says of the file system there (tier_stats keeps it down meanwhile).
      if (!cat->root_changed.empty()) {
        if (auto t = state.tiers.find(target); t != state.tiers.end()) {
          t->second.up = false;
          t->second.down_reason = cat->root_changed;
        }
      }
      // After the merge, which left the catalog unshared: no copy for this.
      if (cat->walk_live != live) cat.edit().walk_live = live;
    };
  };
}

void TreeScanCollector::on_deadline(const std::string& target, State& state) {
  auto it = state.catalogs.find(target);
  if (it != state.catalogs.end()) {
    TierCatalog& cat = it->second.edit();
    cat.stale = true;
    // The calls still in flight show while the walk is stuck.
    auto s = scanners_.find(target);
    if (s != scanners_.end() && s->second->live()) cat.walk_live = s->second->live();
  }
}

void TreeScanCollector::on_failure(const std::string& target, const std::string& error,
                                   State& state) {
  state.catalogs[target].edit().scan.last_error = error;
}

}  // namespace ckptmon
