#include "collectors/manifest_tail.hpp"

#include <sys/inotify.h>

#include <utility>

#include "util/log.hpp"

namespace ckptmon {

ManifestTailCollector::ManifestTailCollector(std::shared_ptr<const Clock> clock,
                                             std::shared_ptr<EventJournal> journal)
    : clock_(std::move(clock)),
      // IN_MODIFY too: appended lines are what the tailer waits for.
      watches_(std::make_shared<DirWatcher>(DirWatcher::kEntryChanges | IN_MODIFY)) {
  if (watches_->fd() < 0) log::warn("inotify unavailable; event logs are polled only");
  if (journal) ingest_ = std::make_shared<EventIngest>(std::move(journal));
}

ManifestTailCollector::~ManifestTailCollector() {
  // Jobs still running hold their tailers: let them finish their batch and go.
  for (auto& [_, t] : tailers_) t->stop();
}

int ManifestTailCollector::wake_fd() const { return ingest_ ? watches_->fd() : -1; }

std::set<std::string> ManifestTailCollector::on_wake() { return watches_->drain(); }

void ManifestTailCollector::configure(const Config& cfg) {
  interval_ = cfg.global.tail_interval;
  deadline_ = cfg.global.tail_timeout;
  TailerOptions opts;
  opts.max_line_bytes = static_cast<std::size_t>(cfg.global.max_line_bytes);
  opts.fd_budget = fd_budget_;
  for (const auto& t : cfg.tiers) opts.tier_roots[t.name] = t.path;
  if (ingest_) {
    EventLimits limits;
    limits.max_jobs_per_tier = static_cast<std::size_t>(cfg.global.max_jobs_per_tier);
    for (const auto& t : cfg.tiers) limits.tiers.insert(t.name);
    ingest_->set_limits(std::move(limits));
  }
  std::map<std::string, std::shared_ptr<LogTailer>> next;
  std::vector<std::string> order;
  std::vector<std::string> earlier;
  for (const auto& m : cfg.manifests) {
    auto it = tailers_.find(m.glob);
    if (it != tailers_.end() && it->second->config().tier == m.tier &&
        it->second->earlier_globs() == earlier &&
        it->second->options().max_line_bytes == opts.max_line_bytes &&
        it->second->options().tier_roots == opts.tier_roots) {
      next.emplace(m.glob, it->second);
    } else if (ingest_) {
      next.emplace(m.glob, std::make_shared<LogTailer>(m, earlier, opts, ingest_, clock_));
    }
    order.push_back(m.glob);
    earlier.push_back(m.glob);
  }
  for (auto& [glob, tailer] : tailers_) {
    if (auto it = next.find(glob); it == next.end() || it->second != tailer) {
      retired_.push_back(std::move(tailer));
    }
  }
  tailers_ = std::move(next);
  order_ = std::move(order);
  watches_->retain(std::set<std::string>(order_.begin(), order_.end()));
}

std::vector<std::string> ManifestTailCollector::targets() const {
  std::vector<std::string> out;
  for (const auto& g : order_) {
    if (tailers_.contains(g)) out.push_back(g);
  }
  return out;
}

Job ManifestTailCollector::prepare(const std::string& target, const State& /*state*/) {
  auto tailer = tailers_.at(target);
  return [tailer, ingest = ingest_, watches = watches_,
          retired = std::exchange(retired_, {})]() mutable -> Update {
    retired.clear();  // here, not on the loop: closing their logs may block
    LogTailer::Pass pass = tailer->run();
    watches->set(tailer->config().glob, pass.dirs);
    std::shared_ptr<const EventCatalog> snap = ingest->snapshot();
    return [snap](State& state) {
      if (snap && (!state.events || snap->version > state.events->version)) state.events = snap;
    };
  };
}

}  // namespace ckptmon
