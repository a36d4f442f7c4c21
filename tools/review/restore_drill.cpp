#include "tools/review/restore_drill.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "collectors/integrity.hpp"
#include "config/config.hpp"
#include "events/parser.hpp"
#include "serve/rules_cycle.hpp"
#include "tools/review/scan_command.hpp"
#include "util/columns.hpp"
#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string secs(double s) {
  char b[32];
  static_cast<void>(std::snprintf(b, sizeof(b), "%.3f s", s));
  return b;
}

nlohmann::json to_json(const DrillResult& r) {
  nlohmann::json j;
  j["tier"] = r.tier;
  j["job"] = r.job;
  j["path"] = r.path;
  j["step"] = r.step >= 0 ? nlohmann::json(r.step) : nlohmann::json();
  j["framework"] = r.framework;
  j["writer_ranks"] = r.writer_ranks > 0 ? nlohmann::json(r.writer_ranks) : nlohmann::json();
  j["reader_ranks"] = r.ranks.size();
  j["planned_by_metadata"] = r.planned;
  j["files"] = r.files;
  j["bytes"] = r.bytes;
  j["phases"] = {{"locate", r.locate_seconds},
                 {"metadata", r.metadata_seconds},
                 {"read", r.read_seconds},
                 {"verify", r.verified ? nlohmann::json(r.verify_seconds) : nlohmann::json()}};
  j["verify"] = r.verified ? nlohmann::json({{"verified_files", r.verified_files},
                                             {"files_without_checksum", r.unverified_files}})
                           : nlohmann::json("not done: no checksums given (--events)");
  j["seconds"] = r.total();
  nlohmann::json ranks = nlohmann::json::array();
  for (const DrillRank& k : r.ranks) {
    ranks.push_back({{"bytes", k.bytes}, {"ranges", k.ranges}, {"seconds", k.seconds}});
  }
  j["ranks"] = ranks;
  j["resident_after_drop_bytes"] =
      r.resident_after_drop ? nlohmann::json(*r.resident_after_drop) : nlohmann::json();
  j["objective_seconds"] =
      r.objective_seconds ? nlohmann::json(*r.objective_seconds) : nlohmann::json();
  j["within_objective"] = r.objective_seconds && r.failure.empty()
                              ? nlohmann::json(r.total() <= *r.objective_seconds)
                              : nlohmann::json();
  j["failure"] = r.failure.empty() ? nlohmann::json() : nlohmann::json(r.failure);
  return j;
}

void print_table(const DrillResult& r, std::ostream& out) {
  out << "restore drill: tier " << r.tier << ", job " << r.job << ", "
      << (r.step >= 0 ? "step " + std::to_string(r.step) : std::string("no step")) << " ("
      << r.framework << "), " << r.path << "\n";
  std::string readers = std::to_string(r.ranks.size());
  if (r.planned) {
    readers += " (resharded from " + std::to_string(r.writer_ranks) + ": the .metadata's plan)";
  } else if (r.writer_ranks > 0 && r.ranks.size() == r.writer_ranks) {
    readers += " (the ranks that wrote it)";
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"readers", readers});
  rows.push_back({"locate", secs(r.locate_seconds)});
  rows.push_back(
      {"metadata", secs(r.metadata_seconds) + " (" + std::to_string(r.files) + " files)"});
  const double rate = r.read_seconds > 0 ? static_cast<double>(r.bytes) / r.read_seconds : 0;
  double skew = 0;
  if (!r.ranks.empty()) {
    const auto [lo, hi] =
        std::minmax_element(r.ranks.begin(), r.ranks.end(),
                            [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
    skew = hi->seconds - lo->seconds;
  }
  rows.push_back({"read", secs(r.read_seconds) + " (" + human_bytes(static_cast<double>(r.bytes)) +
                              ", " + human_bytes(rate) + "/s; rank skew " + secs(skew) + ")"});
  rows.push_back({"verify", r.verified
                                ? secs(r.verify_seconds) + " (" + std::to_string(r.verified_files) +
                                      " files hashed, " + std::to_string(r.unverified_files) +
                                      " without a checksum in the event log)"
                                : std::string("not done: no checksums given (--events)")});
  std::string total = secs(r.total());
  if (!r.failure.empty()) {
    total += ": FAILED, " + r.failure;
  } else if (r.objective_seconds) {
    total += (r.total() <= *r.objective_seconds ? ", within the objective of "
                                                : ", OVER the objective of ") +
             format_duration(std::chrono::duration_cast<Duration>(
                 std::chrono::duration<double>(*r.objective_seconds)));
  } else {
    total += " (no recovery_time_objective set)";
  }
  rows.push_back({"total", total});
  if (r.resident_after_drop) {
    rows.push_back({"cold", "page cache dropped; " +
                                human_bytes(static_cast<double>(*r.resident_after_drop)) +
                                " still resident before the read"});
  }
  out << text_columns(rows) << "\n";
  std::vector<std::vector<std::string>> ranks;
  ranks.push_back({"RANK", "BYTES", "READS", "SECONDS"});
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    ranks.push_back({std::to_string(k), std::to_string(r.ranks[k].bytes),
                     std::to_string(r.ranks[k].ranges), secs(r.ranks[k].seconds)});
  }
  out << text_columns(ranks);
}

}  // namespace

std::map<std::string, Checksum> checksums_from_events(const std::vector<std::string>& globs,
                                                      const std::string& job,
                                                      const std::vector<TierConfig>& tiers,
                                                      const TierConfig& fallback,
                                                      std::ostream& err) {
  std::map<std::string, Checksum> out;
  std::uint64_t rejected = 0, outside = 0;
  auto root_of = [&](const std::string& tier) -> const std::string& {
    for (const TierConfig& t : tiers) {
      if (t.name == tier) return t.path;
    }
    return fallback.path;
  };
  EventParser parser;
  std::vector<char> chunk(std::size_t{1} << 20);
  for (const std::string& pattern : globs) {
    glob_t g{};
    // NOLINTNEXTLINE(concurrency-mt-unsafe): a one-shot command, no other thread yet
    if (::glob(pattern.c_str(), 0, nullptr, &g) != 0) {
      err << "ckptmon restore-drill: --events " << pattern << ": no file matches\n";
      ::globfree(&g);
      continue;
    }
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      const std::string path = g.gl_pathv[i];
      // Never a FIFO or a device: a regular file, opened without following a symlink.
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      struct stat st {};
      if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        err << "ckptmon restore-drill: --events: " << path << ": skipped (not a regular file)\n";
        if (fd >= 0) ::close(fd);
        continue;
      }
      ParseCursor cursor;
      std::string pending;
      for (;;) {
        const ssize_t n = ::read(fd, chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        pending.append(chunk.data(), static_cast<std::size_t>(n));
        const std::size_t used = parser.parse_chunk(pending, cursor, [&](const LineResult& l) {
          if (l.status == LineStatus::kRejected) ++rejected;
          if (l.status != LineStatus::kOk) return;
          const Event& e = l.event;
          if (e.type != EventType::kShardWritten || e.checksum.empty() || e.path.empty()) return;
          if (!job.empty() && e.job != job) return;
          const TierPath tp = tier_relative_path(root_of(e.tier), e.path);
          if (tp.refused) {
            ++outside;
            return;
          }
          out[tp.rel] = e.checksum;
        });
        pending.erase(0, used);
      }
      ::close(fd);
    }
    ::globfree(&g);
  }
  if (rejected > 0) {
    err << "ckptmon restore-drill: --events: " << rejected
        << " lines rejected by the event parser (`ckptmon events check` names them)\n";
  }
  if (outside > 0) {
    err << "ckptmon restore-drill: --events: " << outside
        << " shard paths outside their tier were ignored\n";
  }
  return out;
}

int run_restore_drill(const RestoreDrillOptions& opts, const Clock& clock, std::ostream& out,
                      std::ostream& err) {
  DrillRequest req;
  std::optional<Config> cfg;
  if (!opts.config_file.empty()) {
    LoadResult loaded = load_config_file(opts.config_file);
    if (!loaded.config) {
      err << "ckptmon restore-drill: ";
      for (const auto& e : loaded.errors) err << e.to_string() << "\n";
      return 2;
    }
    cfg = std::move(*loaded.config);
  }
  if (const TierConfig* known = cfg ? cfg->find_tier(opts.tier) : nullptr) {
    req.tier = *known;
  } else {
    req.tier = tier_for_path(opts.tier, std::chrono::minutes(30), opts.job_depth, 0);
  }
  req.job = opts.job;
  req.step = opts.step;
  req.ranks = opts.ranks;
  req.cold = opts.cold;
  req.rate_bytes_per_second = opts.rate_bytes_per_second;
  req.objective_seconds = opts.objective_seconds;
  if (cfg) {
    const RulesPolicy policy = rules_policy(*cfg);
    const std::string tier = req.tier.name;
    req.objective_for = [policy, tier](const std::string& job) -> std::optional<double> {
      const double rto =
          policy.for_tier(tier).storage_path_for(job).recovery_time_objective_seconds;
      return rto > 0 ? std::optional<double>(rto) : std::nullopt;
    };
  }
  if (!opts.events.empty()) {
    req.checksums = checksums_from_events(
        opts.events, opts.job, cfg ? cfg->tiers : std::vector<TierConfig>{}, req.tier, err);
  }
  DrillResult r;
  std::string error;
  if (run_drill(req, clock, r, error) == DrillOutcome::kRefused) {
    err << "ckptmon restore-drill: " << error << "\n";
    return 2;
  }
  if (opts.format == "json") {
    out << to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_table(r, out);
  }
  return r.ok() ? 0 : 1;
}

}  // namespace ckptmon
