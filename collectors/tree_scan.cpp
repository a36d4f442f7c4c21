#include "collectors/tree_scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <regex>

#include "collectors/access_audit.hpp"
#include "util/label.hpp"
#include "util/log.hpp"

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
             n.residency == m.residency;
    });
  };
  return a.name == b.name && a.path == b.path && a.partial_after == b.partial_after &&
         a.jobs.depth == b.jobs.depth && a.jobs.regex_text == b.jobs.regex_text &&
         a.jobs.group == b.jobs.group && a.jobs.max_depth == b.jobs.max_depth &&
         a.shard_index == b.shard_index && a.shard_count == b.shard_count && a.watch == b.watch &&
         layout_eq(a.layout, b.layout) && a.residency == b.residency &&
         namespaces_eq(a.namespaces, b.namespaces);
}

// Every directory of `node` (tier-relative `rel`, in `job`) the walker could
// not read.
void collect_unreadable(const DirNode& node, const std::string& rel, const std::string& job,
                        std::vector<UnreadableDir>& out) {
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
      std::string err;
      if (!walker.list_dirs(rel, dirs, &err)) {
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
      for (const auto& [name, _] : dirs) {
        const std::string child = join(rel, name);
        if (cfg_.jobs.regex) {
          std::smatch m;
          if (std::regex_match(child, m, *cfg_.jobs.regex)) {
            const std::string job = m[cfg_.jobs.group].str();
            if (!job.empty()) {
              jobs.emplace_back(child, job);
              continue;
            }
          }
          next.push_back(child);
        } else if (depth == cfg_.jobs.depth) {
          jobs.emplace_back(child, name);
        } else {
          next.push_back(child);
        }
      }
    }
    level = std::move(next);
  }
  return jobs;
}

ScanOutcome TierScanner::scan(double now, DirWatcher* watcher) {
  const auto start = std::chrono::steady_clock::now();
  ScanOutcome out;
  WalkStats stats;
  int root = ::open(cfg_.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  if (root < 0 || ::fstat(root, &st) != 0) {
    out.root_ok = false;
    out.error = cfg_.path + ": " + std::strerror(errno);
    if (root >= 0) ::close(root);
    return out;
  }
  TreeWalker walker(root, st.st_dev, &memory_, stats);
  std::vector<std::string> listed;
  bool use_inotify = false;
  if (watcher != nullptr && cfg_.watch != WatchMode::kPoll) {
    struct statfs sfs {};
    use_inotify = cfg_.watch == WatchMode::kInotify ||
                  (::fstatfs(root, &sfs) == 0 && !is_network_fs(static_cast<long>(sfs.f_type)));
  }
  if (use_inotify) walker.record_listed(&listed);
  std::string error;
  auto jobs = find_jobs(walker, out.unreadable, &error);
  if (!error.empty()) {
    out.root_ok = false;
    out.error = error;
    ::close(root);
    return out;
  }

  LayoutContext ctx;
  ctx.now = now;
  ctx.partial_after = to_seconds(cfg_.partial_after);
  ctx.generic = cfg_.layout ? &generic_ : nullptr;
  ctx.keep_shard_files = keep_files_;

  const AccessAuditor auditor(cfg_);
  WalkMemory next_memory;
  for (const auto& [job_rel, job] : jobs) {
    if (!owns_job(job)) continue;
    out.jobs.insert(job);
    auditor.audit_job(job, job_rel, out.findings);
    DirNode tree;
    if (!walker.build(job_rel, tree, nullptr)) {
      // Vanished (counted by the walker): its checkpoints are gone.
      // Unreadable: unknown, and merge_scan keeps what the catalog knew.
      if (tree.error != 0) out.unreadable.push_back({job, job_rel, tree.error});
      continue;
    }
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
      std::vector<AccessFinding> findings;
      if (node != nullptr && node->reused) {
        // Unchanged since the last walk: keep what that walk remembered.
        auto it = memory_.frozen.find(tier_rel);
        if (it != memory_.frozen.end()) {
          findings = it->second.findings;
          if (c.state == CkptState::kCommitted) next_memory.frozen.emplace(it->first, it->second);
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
        auditor.audit_checkpoint(c, node, file, findings);
        if (node != nullptr && c.state == CkptState::kCommitted) {
          WalkMemory::Frozen f;
          Checkpoint remembered = c;
          remembered.path = in_job;  // stubs carry job-relative paths
          f.checkpoint = std::make_shared<const Checkpoint>(std::move(remembered));
          f.dirs = subtree_dirs(*node, tier_rel);
          f.findings = findings;
          next_memory.frozen.emplace(tier_rel, std::move(f));
        }
      }
      out.findings.insert(out.findings.end(), findings.begin(), findings.end());
      out.checkpoints.push_back(std::move(c));
    }
  }
  ::close(root);
  for (const auto& u : out.unreadable) auditor.audit_unreadable(u, out.findings);
  // Unreadable now, so not listed again: keep what was remembered for when
  // access comes back.
  for (const auto& [path, frozen] : memory_.frozen) {
    if (overlaps_any(path, out.unreadable)) next_memory.frozen.emplace(path, frozen);
  }
  log_transitions(out.unreadable);
  memory_ = std::move(next_memory);
  for (const auto& rel : listed) {
    watcher->watch(cfg_.name, rel.empty() ? cfg_.path : cfg_.path + "/" + rel);
  }
  out.dirs_listed = stats.dirs_listed;
  out.stat_calls = stats.stat_calls;
  out.permission_errors = stats.permission_errors;
  out.vanished = stats.vanished;
  out.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void TierScanner::log_transitions(const std::vector<UnreadableDir>& now) {
  std::map<std::string, int> next;
  for (const auto& u : now) next.emplace(u.path, u.error);
  auto full = [&](const std::string& rel) {
    return display_name(rel.empty() ? cfg_.path : cfg_.path + "/" + rel);
  };
  for (const auto& [path, err] : next) {
    if (unreadable_.contains(path)) continue;
    log::warn("directory unreadable: its last known checkpoints are kept, flagged unreadable",
              {{"tier", cfg_.name}, {"path", full(path)}, {"error", std::strerror(err)}});
  }
  for (const auto& [path, _] : unreadable_) {
    if (next.contains(path)) continue;
    log::info("directory no longer unreadable", {{"tier", cfg_.name}, {"path", full(path)}});
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
  scanners_ = std::move(next);
}

std::vector<std::string> TreeScanCollector::targets() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : scanners_) out.push_back(name);
  return out;
}

Job TreeScanCollector::prepare(const std::string& target) {
  auto scanner = scanners_.at(target);
  return [scanner, clock = clock_, watcher = watcher_, target]() -> Update {
    ScanOutcome outcome = scanner->scan(clock->now(), watcher.get());
    const double now = clock->now();
    const std::string path = scanner->config().path;
    return [outcome = std::move(outcome), target, path, now](State& state) mutable {
      auto t = state.tiers.find(target);
      if (t == state.tiers.end() || t->second.config.path != path) return;
      merge_scan(state.catalogs[target], std::move(outcome), now);
    };
  };
}

void TreeScanCollector::on_deadline(const std::string& target, State& state) {
  auto it = state.catalogs.find(target);
  if (it != state.catalogs.end()) it->second.stale = true;
}

void TreeScanCollector::on_failure(const std::string& target, const std::string& error,
                                   State& state) {
  state.catalogs[target].scan.last_error = error;
}

}  // namespace ckptmon
