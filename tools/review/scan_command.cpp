#include "tools/review/scan_command.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "api/web.hpp"
#include "collectors/tree_scan.hpp"
#include "config/config.hpp"
#include "util/columns.hpp"
#include "util/text.hpp"

namespace ckptmon {

TierConfig tier_for_path(const std::string& raw, Duration partial_after, int job_depth,
                         int walk_concurrency) {
  std::string path = raw;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  TierConfig t;
  t.path = std::filesystem::absolute(path).lexically_normal().string();
  while (t.path.size() > 1 && t.path.back() == '/') t.path.pop_back();
  t.name = std::filesystem::path(t.path).filename().string();
  if (t.name.empty()) t.name = "root";
  t.partial_after = partial_after;
  t.jobs.depth = job_depth;
  t.walk_concurrency = walk_concurrency;
  return t;
}

int run_scan_command(const ScanCommandOptions& opts, const Clock& clock, std::ostream& out,
                     std::ostream& err) {
  std::vector<Checkpoint> all;
  std::set<std::string> names;
  int rc = 0;
  const double now = opts.now.value_or(clock.now());
  std::optional<Config> cfg;
  if (!opts.config_file.empty()) {
    LoadResult loaded = load_config_file(opts.config_file);
    if (!loaded.config) {
      for (const auto& e : loaded.errors) err << e.to_string() << "\n";
      return 1;
    }
    cfg = std::move(*loaded.config);
  }
  for (const auto& raw : opts.paths) {
    if (const TierConfig* known = cfg ? cfg->find_tier(raw) : nullptr) {
      names.insert(known->name);
      bool drains = !known->drains_to.empty();
      for (const auto& other : cfg->tiers) drains = drains || other.drains_to == known->name;
      TierScanner scanner(*known, drains);
      ScanOutcome r = scanner.scan(now);
      if (!r.root_ok) {
        err << "ckptmon scan: " << r.error << "\n";
        rc = 1;
        continue;
      }
      for (auto& c : r.checkpoints) all.push_back(std::move(c));
      continue;
    }
    TierConfig t = tier_for_path(raw, opts.partial_after, opts.job_depth, opts.walk_concurrency);
    const std::string base = t.name;
    for (int i = 2; names.contains(t.name); ++i) t.name = base + "-" + std::to_string(i);
    names.insert(t.name);
    TierScanner scanner(t, false);
    ScanOutcome r = scanner.scan(now);
    if (!r.root_ok) {
      err << "ckptmon scan: " << r.error << "\n";
      rc = 1;
      continue;
    }
    if (r.permission_errors > 0) {
      err << "ckptmon scan: " << t.path << ": " << r.permission_errors
          << " entries could not be read (EACCES, EIO, ESTALE, ...)\n";
    }
    for (auto& c : r.checkpoints) all.push_back(std::move(c));
  }
  std::sort(all.begin(), all.end(), [](const Checkpoint& a, const Checkpoint& b) {
    return std::tie(a.tier, a.job, a.path) < std::tie(b.tier, b.job, b.path);
  });

  if (opts.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& c : all) arr.push_back(checkpoint_json(c));
    out << arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return rc;
  }
  // Plain columns, widest value per column.
  std::vector<std::vector<std::string>> rows;
  rows.push_back(
      {"TIER", "JOB", "STEP", "FRAMEWORK", "STATE", "FILES", "SIZE", "SKEW", "PATH", "REASON"});
  for (const auto& c : all) {
    char skew[32];
    static_cast<void>(std::snprintf(skew, sizeof(skew), "%.1fs", c.completion_skew()));
    rows.push_back({c.tier, c.job, c.step >= 0 ? std::to_string(c.step) : "-", c.framework,
                    std::string(to_string(c.state)), std::to_string(c.files),
                    human_bytes(static_cast<double>(c.bytes)), skew, c.path, c.reason});
  }
  out << text_columns(rows);
  if (all.empty()) out << "(no checkpoints found)\n";
  return rc;
}

}  // namespace ckptmon
